"""SQL graph store on SQLAlchemy 2: the durable system of record (SQLite file by default, any URL).

Elements are stored whole as JSON (``data``) next to queryable columns, except a large node: its
records live in ``node_parts``, which later writes append to (a hub mentioned by every document is not
rewritten whole by each window; see :mod:`~graphwalk_core.stores.node_parts`). ``node_names`` indexes
names and aliases case-insensitively and ``provenance`` holds one row per (source id, element) for
every source an element cites anywhere (the full provenance records live in ``data`` or the parts).
A store object keeps the large nodes it read or wrote across transactions while the ``generation``
row, which every write transaction increments, says no other writer came in between, and forgets them at
any failed statement (a server crash may have lost a commit it was told of).
Calls run synchronously inside the async methods. ``transaction()`` wraps every write inside in one
SQL transaction; nested blocks are savepoints. While a transaction is open, every call on this store
object uses it (one logical writer per store object). Writes are set-based: a batch of elements is
one upsert (``INSERT … ON CONFLICT``) per table plus one delete per index table, handed to the driver's
``executemany`` on SQLite and sent as ONE statement over an array per column on PostgreSQL. Inside a
transaction, upserts are held in memory (by-id reads see them) and written together when the
transaction commits, a savepoint starts or ends, or any other read or a delete needs the tables: a
window of documents that merges into one hub node writes that node once, not once per document.

Writers serialize per graph, readers never wait: on SQLite a write transaction starts with
``BEGIN IMMEDIATE`` and waits up to ``sql_engine.SQLITE_BUSY_TIMEOUT_S`` for another process's writer;
on PostgreSQL it first takes a transaction-scoped advisory lock (``pg_advisory_xact_lock``), waiting as
long as the session's ``lock_timeout`` lets it, so two processes never merge into the same element from
stale reads (no lost update) and never deadlock. Both wait in awaited pauses: Ctrl-C or a cancellation
ends the wait.

Durability: SQLite runs in WAL mode with ``synchronous=NORMAL`` (a 16 MiB page cache and a 64 MiB log
between checkpoints change no durability) and PostgreSQL write transactions with
``synchronous_commit=off`` (unless the session's setting was chosen, see ``sql_engine``). A killed
process leaves exactly the last committed state; a power loss, an operating-system crash or a crash of
the PostgreSQL server may also roll back the last commits, atomically (each document's ledger entry goes
with its elements, so a rerun redoes exactly those documents).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from itertools import islice
from operator import itemgetter
from typing import Any

from pydantic_core import PydanticSerializationError
from sqlalchemy import (
    Connection,
    RootTransaction,
    Table,
    bindparam,
    delete,
    event,
    func,
    insert,
    select,
    tuple_,
)
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from graphwalk_core.errors import BackendError, InputError
from graphwalk_core.model import Edge, EdgeId, Node, NodeId
from graphwalk_core.model.merge import merge_edge_data, merge_node_data, rewired, source_ids
from graphwalk_core.stores import node_parts
from graphwalk_core.stores.base import Adjacent, Direction, Neighbor
from graphwalk_core.stores.keys import (
    check_edge,
    check_metadata,
    check_node,
    index_forms,
    index_key,
    storable,
)
from graphwalk_core.stores.memory import check_direction, name_key
from graphwalk_core.stores.sql_engine import (
    LAST_TRY,
    TRY_WRITE_OPTION,
    WRITER_OPTION,
    WRITER_PAUSES_S,
    array_statement,
    error_reason,
    has_password,
    missing_folder,
    no_dialect,
    open_engine,
    parse_url,
    redact_url,
    sqlite_in_memory,
    table_names,
    upsert_statement,
    writer_busy,
)
from graphwalk_core.stores.sql_tables import (
    create_schema,
    edges_table,
    generation_table,
    holds_graph,
    metadata_table,
    node_names_table,
    node_parts_table,
    nodes_table,
    provenance_table,
    schema,
)

log = logging.getLogger(__name__)

_CHUNK = 500
#: Edge types a read filters on in SQL (a bind parameter each: PostgreSQL takes at most 65,535 per
#: statement); a longer list is applied to the rows read.
_TYPES_IN_SQL = _CHUNK
#: Provenance records of the large nodes a store object keeps in memory across transactions (see
#: ``node_parts``): beyond them, a large node is read back from its head and parts.
LARGE_RECORDS_KEPT = 500_000
#: Read transactions (:meth:`SQLGraphStore.snapshot`, one per walk in flight) a store object holds open at
#: once; one more waits for one to end. SQLAlchemy's pool lends 15 connections (5 kept, 10 more on demand),
#: two of them left for the writer's transaction and a one-off read: a checkout beyond them would block the
#: event loop, so no walk could give one back, and fail after 30 s.
SNAPSHOTS_AT_ONCE = 13


def batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive lists of at most ``size`` items (itertools.batched is Python 3.12+)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _row(element_id: str, element: Node | Edge) -> dict[str, str]:
    """The table row of ``element`` (whose id is ``element_id``: an edge's is computed on every access)."""
    if isinstance(element, Node):
        return {
            "id": element_id,
            "type": element.type,
            "name": element.name,
            "data": element.model_dump_json(),
        }
    ends = {"source": element.source, "target": element.target}
    return {"id": element_id, **ends, "type": element.type, "data": element.model_dump_json(exclude={"id"})}


def _type_filter(edge_types: Collection[str] | None) -> tuple[list[Any], frozenset[str] | None]:
    """(the SQL conditions, the types to keep rows of) that select ``edge_types`` (None: every type); a
    type no store keeps (see :func:`~graphwalk_core.stores.keys.storable`) matches no edge."""
    if edge_types is None:
        return [], None
    kept = [t for t in dict.fromkeys(edge_types) if storable(t)]
    if len(kept) <= _TYPES_IN_SQL:
        return [edges_table.c.type.in_(kept)], None
    return [], frozenset(kept)


def _not_json(kind: str, elements: Mapping[str, Node | Edge], exc: Exception) -> str:
    """Why the first of ``elements`` that JSON cannot hold (a lone surrogate from a ``\\ud800`` escape,
    a value that is not JSON) cannot be stored (``exc``: what serializing the batch raised)."""
    for i, element in elements.items():
        try:
            element.model_dump_json()
        except PydanticSerializationError as failed:
            shown = i if len(i) <= 60 else i[:60] + "…"
            return f"{kind} {shown!r} cannot be stored as JSON: {str(failed).splitlines()[0]}"
    return f"a {kind} cannot be stored as JSON: {str(exc).splitlines()[0]}"  # pragma: no cover


def _name_keys(node: Node) -> set[str]:
    """The ``node_names`` keys of a node: its name and aliases, case-folded."""
    return {name_key(x) for x in (node.name, *node.aliases)}


def _changes(old: set[str], new: set[str]) -> tuple[list[str], list[str]]:
    """(keys ``new`` adds, keys it drops), each sorted."""
    if old == new:  # most rewrites of an element
        return [], []
    return sorted(new - old), sorted(old - new)


class SQLGraphStore:
    """A :class:`~graphwalk_core.stores.base.GraphStore` in a SQL database (see the module docstring)."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        """The graph at ``url``, its tables created when missing; without ``create``, a database holding
        no graph is an InputError and is left as it was (a source database given by mistake)."""
        self.url = url
        shown = redact_url(url)
        if sqlite_in_memory(parse_url(url, "graph store")):
            given = shown if has_password(url) else url  # rendered, ':memory:' would read '%3Amemory%3A'
            raise InputError(
                f"graph store URL {given} is a SQLite database in memory: the SQL store needs a file (each "
                "walk reads its own snapshot while a write goes on, which SQLite gives only with a file's "
                "write-ahead log) and would lose the graph when closed; use a file (sqlite:///PATH.db) or, "
                "in Python, MemoryGraphStore"
            )
        try:
            if not create and not holds_graph(table_names(url)):
                raise InputError(
                    f"no graphwalk graph in {shown} (left as it was): build one there with graphwalk ingest "
                    "or graphwalk graph import"
                )
            self._engine = open_engine(url)
            self._writer = self._engine.execution_options(**{WRITER_OPTION: True})
            #: reads outside a transaction see one snapshot (SQLite's deferred transactions always do)
            self._reader = (
                self._engine.execution_options(isolation_level="REPEATABLE READ")
                if self._engine.dialect.name == "postgresql"
                else self._engine
            )
            create_schema(self._reader, self._writer, shown)  # read when complete; else made as a writer
        except ImportError as exc:  # the message names the missing driver module only
            raise InputError(f"no database driver for graph store URL {shown}: {exc}") from None
        except NoSuchModuleError:
            raise InputError(f"invalid graph store URL {shown}: {no_dialect(url)}") from None
        except ArgumentError as exc:  # its message may repeat the password
            raise InputError(f"invalid graph store URL {shown}: {type(exc).__name__}") from None
        except SQLAlchemyError as exc:
            reason = error_reason(exc)
            folder = missing_folder(url)
            if folder is not None:
                reason += f" (no folder {folder}: create it first)"
            raise BackendError(f"cannot open graph store {shown}: {reason}") from None
        self._conn: Connection | None = None
        #: the read transaction of the current task's :meth:`snapshot` (each walk its own)
        self._snapshot: ContextVar[Connection | None] = ContextVar("snapshot", default=None)
        #: (event loop, its bound on the snapshots open at once: see ``SNAPSHOTS_AT_ONCE``)
        self._snapshot_slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        #: upserts held until the open transaction needs them in the tables (see the module docstring)
        self._pending_nodes: dict[NodeId, Node] = {}
        self._pending_edges: dict[EdgeId, Edge] = {}
        #: elements as the open transaction read or wrote them in the tables, so rewriting one (a hub
        #: node merged again) changes only its provenance index rows that differ (see ``_reindex``)
        self._stored: dict[tuple[str, str], Node | Edge] = {}
        #: the large nodes the tables hold as head and parts (id -> (node, parts)), kept across
        #: transactions while the tables' generation is ``_seen`` (None: unknown, keep nothing)
        self._large: dict[NodeId, tuple[Node, int]] = {}
        self._seen: int | None = None
        # Any failed statement, or check of a pooled connection, forgets them: a server crash can lose a
        # commit this store was told of (PostgreSQL commits asynchronously), and a later writer can bring
        # the generation back to the number they were kept at; this store learns of the crash only by an
        # error.
        event.listen(self._engine, "handle_error", self._failed)
        self._upserts = {
            t.name: upsert_statement(self._engine, t) for t in (nodes_table, edges_table, metadata_table)
        }
        self._inserts = {t.name: insert(t) for t in (provenance_table, node_names_table)}
        self._part_insert = insert(node_parts_table)
        #: a row of an index table, deleted by its whole primary key
        self._deletes = {
            t.name: delete(t).where(*(c == bindparam(c.name) for c in t.primary_key.columns))
            for t in (provenance_table, node_names_table)
        }
        self._compiled: dict[int, Any] = {}
        self._lookups: dict[tuple[str, str, int], str] = {}
        self._arrays: dict[int, tuple[str, tuple[str, ...]]] = {}
        #: psycopg (3) on PostgreSQL: batches as arrays in binary format (``%b``)
        self._binary_arrays = (
            self._engine.dialect.name == "postgresql" and self._engine.dialect.driver == "psycopg"
        )
        if self._binary_arrays:
            quote = self._engine.dialect.identifier_preparer.quote
            for action, statements in (
                ("upsert", self._upserts),
                ("insert", self._inserts),
                ("delete", self._deletes),
            ):
                for name, statement in statements.items():
                    self._arrays[id(statement)] = array_statement(action, schema.tables[name], quote)

    def __repr__(self) -> str:
        return f"SQLGraphStore({redact_url(self.url)!r})"

    # ------------------------------------------------------------------ connections and transactions

    @contextmanager
    def _connection(self, *, pending: bool = False) -> Iterator[Connection]:
        """The open transaction's connection (its held upserts written first, unless the caller handles
        ``pending`` itself), else the current task's snapshot, else a fresh read transaction."""
        if self._conn is not None:
            if not pending:
                self._flush()
            yield self._conn
        elif (snapshot := self._snapshot.get()) is not None:
            yield snapshot
        else:
            with self._reader.begin() as conn:
                yield conn

    @asynccontextmanager
    async def _write_connection(self, *, pending: bool = False) -> AsyncIterator[Connection]:
        """The open transaction's connection (see ``_connection``), else a write transaction of its own,
        committed on exit."""
        if self._conn is not None:
            with self._connection(pending=pending) as conn:
                yield conn
        elif self._snapshot.get() is not None:
            raise RuntimeError("a write inside SQLGraphStore.snapshot(): the snapshot only reads")
        else:
            async with self._writing() as conn:
                yield conn

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[Connection]:
        """A write transaction that counts itself in the generation row (see ``_sync``): what is kept
        across transactions is checked when it starts and valid again only once it committed."""
        conn, begun = await self._begin_writing()
        with conn, begun:
            generation = self._sync(conn)
            try:
                yield conn
                generation = self._advance(conn, generation)
            except BaseException:
                self._forget_large()
                raise
        self._committed(generation)

    async def _begin_writing(self) -> tuple[Connection, RootTransaction]:
        """A connection and its write transaction, begun. While another process writes the graph, the
        writer lock is tried again after a pause awaited, for as long as the database's own wait would last
        (SQLite: ``SQLITE_BUSY_TIMEOUT_S``; PostgreSQL: the session's ``lock_timeout`` or
        ``statement_timeout``, else as long as it is held), then fails as that wait did: it ran in the
        driver and held the event loop, so Ctrl-C and a cancellation went unheard until the other process
        committed."""
        deadline: float | None = None
        pause, longest = WRITER_PAUSES_S
        while True:
            last = deadline is not None and time.monotonic() >= deadline
            conn = self._writer.connect().execution_options(**{TRY_WRITE_OPTION: LAST_TRY if last else True})
            try:
                return conn, conn.begin()
            except BaseException as exc:
                conn.close()
                wait_s = writer_busy(exc)
                if wait_s is None or last:
                    raise
            if deadline is None:
                deadline = time.monotonic() + wait_s
                bound = "" if math.isinf(wait_s) else f" up to {wait_s:g} s"
                log.warning(
                    "%s: another process is writing this graph; waiting%s for it to commit",
                    redact_url(self.url),
                    bound,
                )
            try:
                await asyncio.sleep(pause)
            except asyncio.CancelledError:
                log.warning(
                    "%s: cancelled while waiting for another process's write; this write was not made",
                    redact_url(self.url),
                )
                raise
            pause = min(pause * 2, longest)

    def _flush(self) -> None:
        """Write the held upserts: every node, then every edge, set-based."""
        if self._conn is not None and (self._pending_nodes or self._pending_edges):
            nodes, edges = self._pending_nodes, self._pending_edges
            self._pending_nodes, self._pending_edges = {}, {}
            self._write(self._conn, nodes, edges)

    def _discard(self) -> None:
        """Forget what a failed block held or knew about the tables (a savepoint rolled back)."""
        self._pending_nodes, self._pending_edges = {}, {}
        self._stored = {}
        self._forget_large()

    def _failed(self, context: Any) -> None:
        """A statement failed (see ``_large``)."""
        self._forget_large()

    def _forget_large(self) -> None:
        self._large = {}
        self._seen = None

    def _sync(self, conn: Connection) -> int:
        """The tables' generation; the large nodes kept are forgotten unless it is the one they are from."""
        generation = conn.scalar(select(generation_table.c.value).where(generation_table.c.id == 1)) or 0
        if generation != self._seen:
            self._large = {}
            self._seen = generation
        return generation

    def _advance(self, conn: Connection, generation: int) -> int:
        """Count a write transaction (before it commits): its generation is ``generation + 1``. What is
        kept stays unvalidated (``_seen`` None) until the commit succeeds."""
        conn.execute(generation_table.update().where(generation_table.c.id == 1).values(value=generation + 1))
        self._seen = None
        return generation + 1

    def _committed(self, generation: int) -> None:
        """A write transaction committed: the large nodes kept are the tables' at ``generation``, the
        least recently written first out beyond ``LARGE_RECORDS_KEPT`` records (never during a
        transaction: a large node it read or wrote stays known)."""
        self._seen = generation
        large = self._large
        records = sum(len(node.provenance) for node, _ in large.values())
        for node_id in list(large):
            if records <= LARGE_RECORDS_KEPT:
                break
            records -= len(large.pop(node_id)[0].provenance)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SQLGraphStore]:
        """Every write inside commits together or not at all (nested blocks are savepoints)."""
        if self._conn is not None:
            self._flush()  # what is held now belongs to the enclosing block, not to the savepoint
            try:
                with self._conn.begin_nested():
                    yield self
                    self._flush()
            except BaseException:
                self._discard()
                raise
            return
        async with self._writing() as conn:
            self._conn = conn
            try:
                yield self
                self._flush()
            except BaseException:
                self._discard()
                raise
            finally:
                self._conn = None
                self._stored = {}

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SQLGraphStore]:
        """Reads inside see one committed state of the tables, whatever other processes commit meanwhile
        (one read transaction: no writer waits for it); nothing is written inside. In a transaction, or
        in a snapshot already (tasks started inside one too), reads see that one's state. Each task (an
        eval's concurrent walks) reads in its own, ended with it: overlapping walks never keep one open
        for as long as any of them runs (a WAL SQLite cannot checkpoint, rows PostgreSQL cannot vacuum).
        Beyond ``SNAPSHOTS_AT_ONCE`` open ones, a snapshot waits for one to end."""
        if self._conn is not None or self._snapshot.get() is not None:
            yield self
            return
        async with self._slots():
            with self._reader.connect() as conn:  # closing it ends the read transaction
                conn.begin()
                token = self._snapshot.set(conn)
                try:
                    yield self
                finally:
                    self._snapshot.reset(token)

    def _slots(self) -> asyncio.Semaphore:
        """The running event loop's bound on open snapshots (a store may outlive a loop)."""
        loop = asyncio.get_running_loop()
        if self._snapshot_slots is None or self._snapshot_slots[0] is not loop:
            self._snapshot_slots = (loop, asyncio.Semaphore(SNAPSHOTS_AT_ONCE))
        return self._snapshot_slots[1]

    # ------------------------------------------------------------------ row helpers

    def _by_id(self, conn: Connection, kind: str, ids: Iterable[str]) -> dict[str, Any]:
        """The elements the tables hold among ``ids``: known to the open transaction, else read in batches
        (and remembered, see ``_remember``)."""
        found: dict[str, Any] = {}
        unknown = self._known(kind, ids, found)
        if unknown:
            read: dict[str, Any]
            if kind == "node":
                read = {
                    n.id: n
                    for n in self._nodes_of(conn, self._select_in(conn, nodes_table, "id, data", unknown))
                }
            else:
                read = {
                    e.id: e
                    for e in map(Edge.model_validate_json, self._column(conn, edges_table, "data", unknown))
                }
            found.update(read)
            self._remember(kind, read, [i for i in unknown if i not in found])
        return found

    def _held(self, conn: Connection, kind: str, ids: Sequence[str]) -> dict[str, Any]:
        """What the tables hold for ``ids`` (None: nothing)."""
        found = self._by_id(conn, kind, ids)
        return {i: found.get(i) for i in ids}

    def _unindex(self, conn: Connection, kind: str, held: dict[str, Any]) -> None:
        """Delete the index rows of the elements ``held`` (id -> what the tables held for it), whose
        rows are gone: provenance sources, and node names."""
        self._reindex(conn, kind, dict.fromkeys(held), held)
        for i in held:
            self._stored.pop((kind, i), None)
        if kind == "node":
            self._drop_parts(conn, [i for i in held if self._large.pop(i, None) is not None])

    def _remember(self, kind: str, elements: Mapping[str, Node | Edge], absent: Iterable[str] = ()) -> None:
        """Inside a transaction: ``elements`` (by id) are what the tables now hold, and they hold nothing
        for the ``absent`` ids."""
        if self._conn is not None:
            for i, e in elements.items():
                self._stored[(kind, i)] = e
            for i in absent:
                self._stored[(kind, i)] = None

    def _reindex(self, conn: Connection, kind: str, elements: dict[str, Any], held: dict[str, Any]) -> None:
        """Make the index rows (provenance sources, and node names) of ``elements`` (id -> the element
        the tables now hold, None: deleted) match them, given what the tables ``held`` before: only the
        rows that differ are deleted (by their exact keys) or inserted."""
        added: list[dict[str, str]] = []
        gone: list[dict[str, str]] = []
        added_names: list[dict[str, str]] = []
        gone_names: list[dict[str, str]] = []
        for i, e in elements.items():
            before = held[i]
            old = source_ids(before) if before is not None else set()
            new = source_ids(e) if e is not None else set()
            more, less = _changes(old, new)
            added += [{"source_id": index_key(x), "element_kind": kind, "element_id": i} for x in more]
            gone += [
                {"source_id": k, "element_kind": kind, "element_id": i} for x in less for k in index_forms(x)
            ]
            if kind == "node":
                old = _name_keys(before) if before is not None else set()
                new = _name_keys(e) if e is not None else set()
                more, less = _changes(old, new)
                added_names += [{"name_key": index_key(x), "node_id": i} for x in more]
                gone_names += [{"name_key": k, "node_id": i} for x in less for k in index_forms(x)]
        self._executemany(conn, self._deletes["provenance"], gone)
        self._executemany(conn, self._deletes["node_names"], gone_names)
        self._executemany(conn, self._inserts["provenance"], added)
        self._executemany(conn, self._inserts["node_names"], added_names)
        self._remember(kind, {i: e for i, e in elements.items() if e is not None})

    def _executemany(self, conn: Connection, statement: Any, rows: list[dict[str, str]]) -> None:
        """``statement`` once per row, compiled once and handed to the driver's ``executemany`` (the
        statement layer's per-row work costs more than the database's on bulk writes); with psycopg on
        PostgreSQL, one statement over arrays (see ``sql_engine.array_statement``)."""
        if not rows:
            return
        arrays = self._arrays.get(id(statement))
        if arrays is not None:
            sql, columns = arrays
            conn.exec_driver_sql(sql, tuple([row[c] for row in rows] for c in columns))
            return
        compiled = self._compiled.get(id(statement))
        if compiled is None:
            compiled = self._compiled[id(statement)] = statement.compile(dialect=self._engine.dialect)
        order = compiled.positiontup
        if order is None:
            conn.exec_driver_sql(compiled.string, rows)
        else:
            pick = itemgetter(*order) if len(order) > 1 else lambda row: (row[order[0]],)
            conn.exec_driver_sql(compiled.string, list(map(pick, rows)))

    def _write(
        self, conn: Connection, nodes: Mapping[str, Node], edges: Mapping[str, Edge]
    ) -> tuple[int, int]:
        """Insert or replace ``nodes`` then ``edges`` (by id; their endpoints must exist) in batches."""
        counts = [0, 0]
        for kind, elements in (("node", nodes), ("edge", edges)):
            for batch in batched(elements.items(), _CHUNK):
                unique: dict[str, Any] = dict(batch)
                ids = list(unique)
                if kind == "edge":
                    self._check_endpoints(conn, unique.values())
                table = nodes_table if kind == "node" else edges_table
                held = self._held(conn, kind, ids)
                try:
                    rows = (
                        self._node_rows(conn, unique, held)
                        if kind == "node"
                        else [_row(i, e) for i, e in unique.items()]
                    )
                except PydanticSerializationError as exc:
                    raise InputError(_not_json(kind, unique, exc)) from None
                self._replace(conn, table, ids, rows)
                self._reindex(conn, kind, unique, held)
                counts[kind == "edge"] += len(unique)
        return counts[0], counts[1]

    def _node_rows(
        self, conn: Connection, nodes: Mapping[str, Node], held: Mapping[str, Any]
    ) -> list[dict[str, str]]:
        """The nodes table's rows of ``nodes`` (``held``: what the tables hold for them), their parts
        written first: a large node the tables hold gets one more part when it only gained records,
        else its parts are replaced by one (see :mod:`~graphwalk_core.stores.node_parts`)."""
        rows: list[dict[str, str]] = []
        dropped: list[str] = []
        parts: list[dict[str, Any]] = []
        large = self._large
        for i, node in nodes.items():
            kept = large.get(i)  # within a transaction: every large node it read or wrote
            if kept is None and not node_parts.is_large(node):
                rows.append(_row(i, node))
                continue
            before, count = kept if kept is not None else (None, 0)
            added = None
            if before is not None and before is held[i] and count < node_parts.MAX_PARTS:
                added = node_parts.added_records(before, node)
            if added is None:  # its parts replaced by one holding every record, or by none
                if kept is not None:
                    dropped.append(i)
                if not node_parts.is_large(node):
                    large.pop(i, None)
                    rows.append(_row(i, node))
                    continue
                added, count = node_parts.whole(node), 0
            parts.append({"node_id": i, "part": count, "data": added})
            large.pop(i, None)  # to the end: the most recently written
            large[i] = (node, count + 1)
            rows.append({"id": i, "type": node.type, "name": node.name, "data": node_parts.head(node)})
        self._drop_parts(conn, dropped)
        self._executemany(conn, self._part_insert, parts)
        return rows

    def _drop_parts(self, conn: Connection, ids: list[str]) -> None:
        """Delete the parts of the nodes ``ids``."""
        for chunk in batched(ids, _CHUNK):
            conn.execute(delete(node_parts_table).where(node_parts_table.c.node_id.in_(chunk)))

    def _replace(self, conn: Connection, table: Table, ids: list[str], rows: list[dict[str, str]]) -> None:
        """Insert or replace ``rows`` (keyed by ``ids``): one upsert, or a delete and an insert."""
        upsert = self._upserts[table.name]
        if upsert is not None:
            self._executemany(conn, upsert, rows)
        else:
            conn.execute(delete(table).where(table.c[table.primary_key.columns[0].name].in_(ids)))
            conn.execute(insert(table), rows)

    def _check_endpoints(self, conn: Connection, edges: Iterable[Edge]) -> None:
        ends = {n for e in edges for n in (e.source, e.target)}
        known = ends & self._pending_nodes.keys()
        known |= {n for n in ends - known if self._stored.get(("node", n)) is not None}
        unknown = sorted(ends - known)
        if unknown:
            known |= set(self._column(conn, nodes_table, "id", unknown))
        for e in edges:
            missing = [n for n in (e.source, e.target) if n not in known]
            if missing:
                raise InputError(f"edge {e.source} -{e.type}-> {e.target}: unknown node(s) {missing}")

    def _remove_edges(self, conn: Connection, ids: list[EdgeId]) -> None:
        for i in range(0, len(ids), _CHUNK):
            chunk = ids[i : i + _CHUNK]
            held = self._held(conn, "edge", chunk)
            conn.execute(delete(edges_table).where(edges_table.c.id.in_(chunk)))
            self._unindex(conn, "edge", held)

    def _known(self, kind: str, ids: Iterable[str], found: dict[str, Any]) -> list[str]:
        """Put in ``found`` what the open transaction knows the tables hold for ``ids`` (see
        ``_remember``); returns the ids it does not know, in order."""
        unknown: list[str] = []
        stored = self._stored
        for i in ids:
            key = (kind, i)
            if key in stored:
                element = stored[key]
                if element is not None:
                    found[i] = element
            else:
                unknown.append(i)
        return unknown

    def _column(self, conn: Connection, table: Table, column: str, ids: list[str]) -> Iterator[Any]:
        """``column`` of the rows of ``table`` among ``ids`` (see ``_select_in``)."""
        return map(itemgetter(0), self._select_in(conn, table, column, ids))

    def _nodes_of(self, conn: Connection, rows: Iterable[tuple[str, str]]) -> list[Node]:
        """The nodes of (id, data) rows of the nodes table: a large node's from its head and parts, or as
        kept from an earlier read or write at the tables' current generation."""
        rows = list(rows)
        head = node_parts.HEAD
        if any(data.startswith(head) for _, data in rows):
            if conn is not self._conn:  # a transaction checks it when it starts
                self._sync(conn)
            self._read_parts(conn, {i: d for i, d in rows if d.startswith(head) and i not in self._large})
        kept = self._large
        return [kept[i][0] if data.startswith(head) else Node.model_validate_json(data) for i, data in rows]

    def _read_parts(self, conn: Connection, heads: Mapping[str, str]) -> None:
        """Assemble (and keep) the large nodes of ``heads`` (id -> head row data) from their parts."""
        parts: dict[str, list[str]] = {i: [] for i in heads}
        p = node_parts_table.c
        for chunk in batched(heads, _CHUNK):
            query = select(p.node_id, p.data).where(p.node_id.in_(chunk)).order_by(p.node_id, p.part)
            for node_id, data in conn.execute(query):
                parts[node_id].append(data)
        seen: node_parts.RecordsSeen = {}
        for i, head in heads.items():
            self._large[i] = (node_parts.assemble(head, parts[i], seen), len(parts[i]))

    def _select_in(self, conn: Connection, table: Table, column: str, ids: list[str]) -> Iterator[Any]:
        """Rows of ``SELECT column FROM table WHERE id IN ids`` (``column``: one or more, comma-separated),
        in batches: the driver's own statement
        (one per batch size, kept), as statement building costs more than these lookups; on PostgreSQL
        (psycopg) the batch is one array (``= ANY``). An id no store keeps is no row's."""
        if not storable("".join(ids)):
            ids = [i for i in ids if storable(i)]
        if self._binary_arrays:
            sql = f"SELECT {column} FROM {table.name} WHERE id = ANY(%b::text[])"
            for chunk in batched(ids, _CHUNK):
                yield from conn.exec_driver_sql(sql, (chunk,))
            return
        style = self._engine.dialect.paramstyle
        mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(style)
        for chunk in batched(ids, _CHUNK):
            if mark is None:
                columns = [table.c[c.strip()] for c in column.split(",")]
                yield from conn.execute(select(*columns).where(table.c.id.in_(chunk)))
                continue
            key = (table.name, column, len(chunk))
            sql = self._lookups.get(key)
            if sql is None:
                marks = ", ".join([mark] * len(chunk))
                sql = self._lookups[key] = f"SELECT {column} FROM {table.name} WHERE id IN ({marks})"
            yield from conn.exec_driver_sql(sql, tuple(chunk))

    def _nodes_by_id(self, conn: Connection, ids: Sequence[NodeId]) -> dict[NodeId, Node]:
        return self._by_id(conn, "node", dict.fromkeys(ids))

    def _edges_where(self, conn: Connection, *conditions: Any) -> list[Edge]:
        order = (edges_table.c.source, edges_table.c.type, edges_table.c.target)
        rows = conn.execute(select(edges_table.c.data).where(*conditions).order_by(*order))
        return [Edge.model_validate_json(data) for (data,) in rows]

    def _incident(
        self, conn: Connection, node_id: NodeId, direction: Direction, edge_types: Collection[str] | None
    ) -> list[tuple[Edge, str]]:
        """(edge, "out" | "in") incident to ``node_id``: outgoing first, each sorted."""
        check_direction(direction)
        if not storable(node_id):
            return []
        typed, kept = _type_filter(edge_types)
        found: list[tuple[Edge, str]] = []
        if direction != "in":
            found += [(e, "out") for e in self._edges_where(conn, edges_table.c.source == node_id, *typed)]
        if direction != "out":
            found += [(e, "in") for e in self._edges_where(conn, edges_table.c.target == node_id, *typed)]
        return found if kept is None else [(e, side) for e, side in found if e.type in kept]

    # ------------------------------------------------------------------ GraphStore: writes

    async def upsert_node(self, node: Node) -> None:
        """Insert or replace the node with this id."""
        await self.upsert_many([node])

    async def upsert_edge(self, edge: Edge) -> None:
        """Insert or replace the edge with this id; both endpoints must exist."""
        await self.upsert_many((), [edge])

    async def upsert_many(self, nodes: Iterable[Node] = (), edges: Iterable[Edge] = ()) -> tuple[int, int]:
        """Insert or replace many nodes, then edges, in one transaction; returns how many of each.

        Inside a transaction they are held until it needs them written (see the module docstring);
        an edge's endpoints, and what every store keeps (see :mod:`~graphwalk_core.stores.keys`), are
        checked at once either way."""
        nodes, edges = list(nodes), list(edges)
        for n in nodes:
            check_node(n)
        for e in edges:
            check_edge(e)  # first: an edge's id is computed from its ends and type
        held_nodes = {n.id: n for n in nodes}
        held_edges = {e.id: e for e in edges}
        if self._conn is None:
            async with self._write_connection() as conn:
                return self._write(conn, held_nodes, held_edges)
        self._pending_nodes.update(held_nodes)
        self._check_endpoints(self._conn, held_edges.values())
        self._pending_edges.update(held_edges)
        return len(held_nodes), len(held_edges)

    async def delete_node(self, node_id: NodeId) -> None:
        """Delete the node and its incident edges."""
        if not storable(node_id):
            return
        async with self._write_connection() as conn:
            incident = (edges_table.c.source == node_id) | (edges_table.c.target == node_id)
            self._remove_edges(conn, list(conn.scalars(select(edges_table.c.id).where(incident))))
            held = self._held(conn, "node", [node_id])
            conn.execute(delete(nodes_table).where(nodes_table.c.id == node_id))
            self._unindex(conn, "node", held)

    async def delete_edge(self, edge_id: EdgeId) -> None:
        if not storable(edge_id):
            return
        async with self._write_connection() as conn:
            self._remove_edges(conn, [edge_id])

    async def merge_nodes(self, keep: NodeId, absorb: NodeId) -> Node:
        """Fold ``absorb`` into ``keep``: rewire its edges, merge data, delete it."""
        if keep == absorb:
            raise InputError(f"cannot merge node {keep!r} into itself")
        async with self.transaction():
            assert self._conn is not None
            conn = self._conn
            found = self._nodes_by_id(conn, [keep, absorb])
            for node_id in (keep, absorb):
                if node_id not in found:
                    raise InputError(f"cannot merge: unknown node {node_id!r}")
            incident = self._incident(conn, absorb, "both", None)
            for edge, side in incident:
                if side == "in" and edge.source == absorb:
                    continue  # a self-loop, already moved as an outgoing edge
                self._remove_edges(conn, [edge.id])
                moved = rewired(edge, absorb, keep)
                existing = self._edges_where(conn, edges_table.c.id == moved.id)
                self._write(conn, {}, {moved.id: merge_edge_data(existing[0], moved) if existing else moved})
            merged = merge_node_data(found[keep], found[absorb])
            conn.execute(delete(nodes_table).where(nodes_table.c.id == absorb))
            self._unindex(conn, "node", {absorb: found[absorb]})
            self._write(conn, {merged.id: merged}, {})
        return merged

    async def set_metadata(self, key: str, value: str | None) -> None:
        """Set a metadata string; ``None`` deletes the key."""
        check_metadata(key, value)
        async with self._write_connection(pending=True) as conn:  # metadata is apart from the elements
            if value is None:
                conn.execute(delete(metadata_table).where(metadata_table.c.key == key))
            else:
                self._replace(conn, metadata_table, [key], [{"key": key, "value": value}])

    async def clear(self) -> None:
        self._stored = {}
        async with self._write_connection() as conn:
            for table in reversed(schema.sorted_tables):
                if table is not generation_table:
                    conn.execute(delete(table))
            self._large = {}

    async def close(self) -> None:
        self._engine.dispose()

    # ------------------------------------------------------------------ GraphStore: reads

    async def get_node(self, node_id: NodeId) -> Node | None:
        return (await self.get_nodes([node_id])).get(node_id)

    async def get_nodes(self, ids: Sequence[NodeId]) -> dict[NodeId, Node]:
        """The nodes that exist among ``ids`` (held upserts first, the rest read in batches)."""
        unique = list(dict.fromkeys(ids))
        found = {i: self._pending_nodes[i] for i in unique if i in self._pending_nodes}
        rest = [i for i in unique if i not in found]
        if rest:
            with self._connection(pending=True) as conn:
                found.update(self._nodes_by_id(conn, rest))
        return {i: found[i] for i in unique if i in found}

    async def get_edges(self, ids: Sequence[EdgeId]) -> dict[EdgeId, Edge]:
        """The edges that exist among ``ids`` (held upserts first, the rest read in batches)."""
        unique = list(dict.fromkeys(ids))
        found = {i: self._pending_edges[i] for i in unique if i in self._pending_edges}
        rest = [i for i in unique if i not in found]
        if rest:
            with self._connection(pending=True) as conn:
                found.update(self._by_id(conn, "edge", rest))
        return {i: found[i] for i in unique if i in found}

    async def prefetch(self, node_ids: Iterable[NodeId], edge_ids: Iterable[EdgeId]) -> None:
        """Inside a transaction: the rows of these ids (those held upserts do not answer) read in batches and
        remembered as what the tables hold, like any by-id read in it (see ``_remember``); outside one,
        nothing (a read outside a transaction remembers nothing)."""
        if self._conn is None:
            return
        with self._connection(pending=True) as conn:
            for kind, ids, pending in (
                ("node", node_ids, self._pending_nodes),
                ("edge", edge_ids, self._pending_edges),
            ):
                self._by_id(conn, kind, [i for i in dict.fromkeys(ids) if i not in pending])

    async def get_edge(self, edge_id: EdgeId) -> Edge | None:
        return (await self.get_edges([edge_id])).get(edge_id)

    async def adjacent(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Adjacent]:
        """(relation, neighbor, direction): outgoing then incoming, each by (source, type, target)."""
        check_direction(direction)
        if not storable(node_id):
            return []
        c = edges_table.c
        typed, kept = _type_filter(edge_types)
        order = (c.source, c.type, c.target)
        found: list[Adjacent] = []
        with self._connection() as conn:
            if direction != "in":
                query = select(c.type, c.target).where(c.source == node_id, *typed)
                rows = conn.execute(query.order_by(*order))
                found += [Adjacent(r, n, "out") for r, n in rows]
            if direction != "out":
                query = select(c.type, c.source).where(c.target == node_id, *typed)
                rows = conn.execute(query.order_by(*order))
                found += [Adjacent(r, n, "in") for r, n in rows]
        return found if kept is None else [a for a in found if a.relation in kept]

    async def neighbors(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Neighbor]:
        """Like :meth:`adjacent` with the full edge and neighbor node."""
        with self._connection() as conn:
            incident = self._incident(conn, node_id, direction, edge_types)
            others = [e.target if side == "out" else e.source for e, side in incident]
            nodes = self._nodes_by_id(conn, others)
        return [Neighbor(e, nodes[o], side) for (e, side), o in zip(incident, others, strict=True)]  # type: ignore[arg-type]

    async def degree(self, node_id: NodeId, *, direction: Direction = "both") -> int:
        check_direction(direction)
        total = 0
        if not storable(node_id):
            return total
        with self._connection() as conn:
            if direction != "in":
                total += conn.scalar(select(func.count()).where(edges_table.c.source == node_id)) or 0
            if direction != "out":
                total += conn.scalar(select(func.count()).where(edges_table.c.target == node_id)) or 0
        return total

    async def find_nodes(
        self, *, name: str | None = None, type: str | None = None, limit: int | None = None
    ) -> list[Node]:
        """Nodes whose name or an alias equals ``name`` (case-insensitive), filtered by type, by id."""
        query = select(nodes_table.c.id, nodes_table.c.data).order_by(nodes_table.c.id).limit(limit)
        if name is not None:
            keys = index_forms(name_key(name))
            named = select(node_names_table.c.node_id).where(node_names_table.c.name_key.in_(keys))
            query = query.where(nodes_table.c.id.in_(named))
        if type is not None:
            if not storable(type):
                return []
            query = query.where(nodes_table.c.type == type)
        with self._connection() as conn:
            return self._nodes_of(conn, conn.execute(query))

    async def iter_nodes(self, *, batch_size: int = 1000) -> AsyncIterator[Node]:
        """Every node, ordered by id, read in batches."""
        last: str | None = None
        while True:
            query = select(nodes_table.c.id, nodes_table.c.data).order_by(nodes_table.c.id).limit(batch_size)
            if last is not None:
                query = query.where(nodes_table.c.id > last)
            with self._connection() as conn:
                rows = conn.execute(query).all()
                nodes = self._nodes_of(conn, rows)
            if rows:
                last = rows[-1][0]
            for node in nodes:
                yield node
            if len(rows) < batch_size:
                return

    async def iter_edges(self, *, batch_size: int = 1000) -> AsyncIterator[Edge]:
        """Every edge, ordered by (source, type, target), read in batches."""
        c = edges_table.c
        last: tuple[str, str, str] | None = None
        while True:
            query = select(c.source, c.type, c.target, c.data).order_by(c.source, c.type, c.target)
            if last is not None:
                query = query.where(tuple_(c.source, c.type, c.target) > tuple_(*last))
            with self._connection() as conn:
                rows = conn.execute(query.limit(batch_size)).all()
            for source, kind, target, data in rows:
                last = (source, kind, target)
                yield Edge.model_validate_json(data)
            if len(rows) < batch_size:
                return

    async def elements_from_source(self, source_id: str) -> tuple[list[Node], list[Edge]]:
        """Nodes (by id) and edges (by source, type, target) citing ``source_id`` anywhere."""
        s = provenance_table.c
        cited = select(s.element_id).where(s.source_id.in_(index_forms(source_id)))
        with self._connection() as conn:
            node_rows = conn.execute(
                select(nodes_table.c.id, nodes_table.c.data)
                .where(nodes_table.c.id.in_(cited.where(s.element_kind == "node")))
                .order_by(nodes_table.c.id)
            )
            nodes = self._nodes_of(conn, node_rows)
            edges = self._edges_where(conn, edges_table.c.id.in_(cited.where(s.element_kind == "edge")))
        return nodes, edges

    def node_names(self, ids: Sequence[NodeId]) -> dict[NodeId, str]:
        """The names of the nodes that exist among ``ids``, from the ``name`` column (no node models)."""
        c = nodes_table.c
        found: dict[NodeId, str] = {}
        with self._connection() as conn:
            for chunk in batched(ids, _CHUNK):
                rows = conn.execute(select(c.id, c.name).where(c.id.in_(chunk)))
                found.update((node_id, name) for node_id, name in rows)
        return found

    def triples(self) -> list[tuple[NodeId, str, NodeId]]:
        """Every edge as (source, type, target), ordered, without building models."""
        c = edges_table.c
        with self._connection() as conn:
            rows = conn.execute(select(c.source, c.type, c.target).order_by(c.source, c.type, c.target))
            return [(source, kind, target) for source, kind, target in rows]

    async def counts(self) -> tuple[int, int]:
        with self._connection() as conn:
            n = conn.scalar(select(func.count()).select_from(nodes_table)) or 0
            e = conn.scalar(select(func.count()).select_from(edges_table)) or 0
        return n, e

    async def node_types(self) -> list[str]:
        with self._connection() as conn:
            return sorted(conn.scalars(select(nodes_table.c.type).distinct()))

    async def get_metadata(self, key: str) -> str | None:
        if not storable(key):
            return None
        with self._connection(pending=True) as conn:
            return conn.scalar(select(metadata_table.c.value).where(metadata_table.c.key == key))

    async def get_metadata_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The values of the keys set among ``keys`` (first-appearance order), ``_CHUNK`` keys a query."""
        wanted = [key for key in dict.fromkeys(keys) if storable(key)]
        found: dict[str, str] = {}
        with self._connection(pending=True) as conn:
            for batch in batched(wanted, _CHUNK):
                statement = select(metadata_table.c.key, metadata_table.c.value).where(
                    metadata_table.c.key.in_(batch)
                )
                found.update((key, value) for key, value in conn.execute(statement))
        return {key: found[key] for key in wanted if key in found}

    async def metadata_keys(self, prefix: str = "") -> list[str]:
        if not storable(prefix):
            return []
        with self._connection(pending=True) as conn:
            keys = conn.scalars(select(metadata_table.c.key).where(metadata_table.c.key >= prefix))
            return sorted(k for k in keys if k.startswith(prefix))
