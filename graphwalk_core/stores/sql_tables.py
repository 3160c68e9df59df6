"""The SQL graph store's tables, and creating them in a fixed order (the store:
:mod:`~graphwalk_core.stores.sql`)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    insert,
    inspect,
    select,
)
from sqlalchemy.schema import CreateTable

from graphwalk_core.errors import InputError

#: Keys compare byte-wise on every database (SQLite's default; PostgreSQL's "C" collation), so ids and
#: edges come back in the same order whatever the database's locale.
Key = String().with_variant(String(collation="C"), "postgresql")
#: Every index costs a random B-tree write per row (ids are hashes), and a window's writes reach most
#: pages of every such index, so there are only the ones reads use: edges by (source, type, target)
#: (which also serves lookups by source) and by target, nodes by type. An element's index rows are
#: deleted by their exact keys, computed from the element the tables hold, never looked up by element
#: id. The key-only tables are stored as their primary key's B-tree on SQLite (``WITHOUT ROWID``).
#: Graphs created before keep their extra indexes and row ids; both layouts take the same statements.
schema = MetaData()
nodes_table = Table(
    "nodes",
    schema,
    Column("id", Key, primary_key=True),
    Column("type", Key, nullable=False, index=True),
    Column("name", String, nullable=False),
    Column("data", Text, nullable=False),
)
node_names_table = Table(
    "node_names",
    schema,
    Column("name_key", Key, primary_key=True),
    Column("node_id", Key, primary_key=True),
    sqlite_with_rowid=False,
)
edges_table = Table(
    "edges",
    schema,
    Column("id", Key, primary_key=True),
    Column("source", Key, nullable=False),
    Column("target", Key, nullable=False, index=True),
    Column("type", Key, nullable=False),
    Column("data", Text, nullable=False),
    Index("ix_edges_order", "source", "type", "target"),
)
provenance_table = Table(
    "provenance",
    schema,
    Column("source_id", Key, primary_key=True),
    Column("element_kind", Key, primary_key=True),
    Column("element_id", Key, primary_key=True),
    sqlite_with_rowid=False,
)
metadata_table = Table(
    "metadata",
    schema,
    Column("key", Key, primary_key=True),
    Column("value", Text, nullable=False),
)
#: A large node's records (see :mod:`~graphwalk_core.stores.node_parts`), in part order.
node_parts_table = Table(
    "node_parts",
    schema,
    Column("node_id", Key, primary_key=True),
    Column("part", Integer, primary_key=True, autoincrement=False),
    Column("data", Text, nullable=False),
)
#: One row: a number every write transaction increments, so a store object knows whether the large nodes
#: it keeps in memory across transactions are still what the tables hold.
generation_table = Table(
    "generation",
    schema,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("value", Integer, nullable=False),
)


#: The tables every graph has had (later versions added ``node_parts`` and ``generation``).
_GRAPH_CORE = frozenset({"nodes", "node_names", "edges", "provenance", "metadata"})


def holds_graph(tables: Iterable[str]) -> bool:
    """Whether a database with these tables holds a graph (beside other tables, perhaps)."""
    return set(tables) >= _GRAPH_CORE


def schema_complete(conn: Connection) -> bool:
    """Whether the tables, their indexes and the generation row are all there (read without a lock)."""
    found = inspect(conn)
    existing = set(found.get_table_names())
    for table in schema.sorted_tables:
        if table.name not in existing:
            return False
        indexes = {index["name"] for index in found.get_indexes(table.name)}
        if any(index.name not in indexes for index in table.indexes):
            return False
    return conn.scalar(select(generation_table.c.value)) is not None


def foreign_table(conn: Connection, existing: Iterable[str]) -> str | None:
    """Why the database is not a graph's: a table of ``existing`` named like one of the graph's that lacks
    its columns (another application's ``metadata``), or None."""
    found = inspect(conn)
    for table in schema.sorted_tables:
        if table.name not in existing:
            continue
        columns = [c["name"] for c in found.get_columns(table.name)]
        if not set(columns) >= set(table.c.keys()):
            return (
                f"its table {table.name!r} (columns {', '.join(columns)}) is not a graphwalk graph's "
                f"(columns {', '.join(table.c.keys())})"
            )
    return None


def create_schema(reader: Engine, writer: Engine, shown: str) -> None:
    """The tables, then their indexes in name order: ``Table.indexes`` is a set, so ``create_all``'s
    order (and with it the database file's bytes) would vary from process to process. A graph that has
    them all is only read (on ``reader``): opening it never waits for another process's write
    transaction. Else they are created on ``writer``, under the graph's writer lock (processes may open
    a new graph at once); a database holding another application's table of one of their names is an
    InputError naming it (``shown``) and left as it was."""
    with reader.connect() as conn:
        if schema_complete(conn):
            return
    with writer.begin() as conn:
        existing = set(inspect(conn).get_table_names())
        if (problem := foreign_table(conn, existing)) is not None:
            raise InputError(
                f"cannot keep a graph in {shown} (left as it was): {problem}; use another database, or "
                "another schema (?options=-csearch_path%3DSCHEMA)"
            )
        for table in schema.sorted_tables:
            if table.name not in existing:
                conn.execute(CreateTable(table))
            for index in sorted(table.indexes, key=lambda i: str(i.name)):
                index.create(conn, checkfirst=True)
        if conn.scalar(select(generation_table.c.value)) is None:
            conn.execute(insert(generation_table).values(id=1, value=0))
