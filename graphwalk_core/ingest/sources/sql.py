"""SQLSource: any SQLAlchemy URL. Rows become record documents, foreign keys become typed edges.

- An entity table's row becomes one node with a pinned id (``hash(source, table, primary key)``): its
  name is the mapped name column (default: ``name``/``title``/``label``, else the first text column),
  its type the mapped type (default: the singular table name) and the other non-key columns its
  attributes. Each non-null foreign key becomes an edge ``row --<column without _id>--> referenced row``.
- A join table (exactly two foreign keys covering its primary key) becomes edges only:
  ``first --<table>--> second``, with its other columns as edge attributes.

A referencing row names the referenced row's label and node, and its content hash covers both, so renaming
a row (or moving one of a table without a primary key) reprocesses the rows that point to it. No LLM is
involved.

Rows are streamed (``STREAM_BATCH`` per fetch, primary-key order) and the rows a batch refers to are
looked up per batch, so memory stays bounded by the batch, not the database.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation, Extraction
from graphwalk_core.ingest.sources.base import (
    ColumnProfile,
    ForeignKeyProfile,
    SkippedItem,
    SourceBase,
    SourceDocument,
    SourceProfile,
    TableProfile,
    control_character,
    oversize,
    unstorable_field,
    unstorable_reason,
)
from graphwalk_core.ingest.sources.mapping import (
    Mappings,
    attribute_names,
    field_of,
    mapping_for,
    unmatched_keys,
)
from graphwalk_core.ingest.text import singular, snake_case
from graphwalk_core.model import JSONValue, content_hash
from graphwalk_core.stores.sql_engine import driver_args, error_reason, no_dialect, parse_url, redact_url
from graphwalk_core.stores.sql_tables import holds_graph, schema

#: Every SQL extractor version starts so (provenance from a row, whatever version wrote it).
SQL_EXTRACTOR_PREFIX = "sql:"
#: Recorded as the extractor of SQL-derived elements (bump when the row -> graph rules change). 2: a
#: row's node new to the graph takes over the routed node of its name (1 left it beside it).
SQL_EXTRACTOR = SQL_EXTRACTOR_PREFIX + "2"
#: The id prefix of a row's node: a pinned id (see ``graphwalk_core.ingest.resolution``).
SQL_NODE_PREFIX = "n_sql_"
#: Rows per fetch when streaming a table.
STREAM_BATCH = 1000
#: Bound values per foreign-key look-up query (well under every driver's parameter limit).
_LOOKUP_PARAMS = 500
_NAME_COLUMNS = ("name", "title", "label")
#: A mapping's ``key`` names record files' documents; a row is identified by its table's primary key.
IGNORED_KEY = "its key column is ignored: a SQL row is identified by its table's primary key"
#: A mapping's fields that make nothing of a SQL row (its relations are its foreign keys, its attributes its
#: other columns): said, not ignored in silence (a ``relations`` entry made no edge, without a word).
IGNORED_FIELDS = (
    "its {fields} {are} ignored: a SQL row's relations are its foreign keys, its attributes its columns "
    "but its keys and name"
)
#: How much of a primary key over the byte limit a skip shows.
_SHOWN_KEY = 40
#: The statement that makes a connection's queries read one snapshot, per backend: a pass then reads its
#: tables, and the rows they point to, as the database was at one moment (a commit between two queries
#: gave a pass of no state the database was ever in). pysqlite begins no transaction before a SELECT.
_SNAPSHOT = {
    "sqlite": "BEGIN",
    "postgresql": "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
}


class _Table:
    """Schema facts about one table, read once per pass."""

    def __init__(self, name: str, inspector: Any) -> None:
        self.name = name
        self.columns = inspector.get_columns(name)
        self.pk: list[str] = list(inspector.get_pk_constraint(name).get("constrained_columns") or [])
        position = {c["name"]: i for i, c in enumerate(self.columns)}
        self.fks = sorted(
            (
                fk
                for fk in inspector.get_foreign_keys(name)
                if fk.get("referred_table") and fk["constrained_columns"]
            ),
            key=lambda fk: min(position[c] for c in fk["constrained_columns"]),
        )
        fk_columns = {c for fk in self.fks for c in fk["constrained_columns"]}
        self.is_join = len(self.fks) == 2 and set(self.pk) <= fk_columns
        self.fk_columns = fk_columns


class SQLSource(SourceBase):
    """Documents from every table reachable through a SQLAlchemy URL."""

    def __init__(
        self, url: str | URL, *, source_id: str | None = None, mappings: Mappings | None = None
    ) -> None:
        self.url = parse_url(url, "SQL source")
        self.display_url = redact_url(self.url)
        database = self.url.database
        if (
            self.url.get_backend_name() == "sqlite"
            and database not in (None, "", ":memory:")
            and not Path(str(database)).is_file()
        ):
            raise InputError(f"cannot open SQL source {self.display_url}: no such database file")
        default_id = snake_case(Path(self.url.database or "sql").stem) or "sql"
        super().__init__(source_id or default_id, mappings)

    @property
    def origin(self) -> str:
        return self.display_url

    def _engine(self) -> sa.Engine:
        try:
            return sa.create_engine(self.url, connect_args=driver_args(self.url, "SQL source"))
        except NoSuchModuleError:
            raise InputError(
                f"cannot open SQL source {self.display_url}: {no_dialect(self.display_url)}"
            ) from None
        except (ArgumentError, ImportError) as exc:
            raise InputError(f"cannot open SQL source {self.display_url}: {type(exc).__name__}") from exc

    def _error(self, exc: SQLAlchemyError) -> InputError:
        detail = error_reason(exc)
        if self.url.password:
            detail = detail.replace(str(self.url.password), "***")
        return InputError(f"cannot read SQL source {self.display_url}: {detail}")

    @contextmanager
    def _connected(self) -> Iterator[sa.Engine]:
        """An engine for one pass; any SQLAlchemy error inside becomes an InputError naming the source."""
        database = self.url.database
        if self.url.get_backend_name() == "sqlite" and database not in (None, "", ":memory:"):
            path = Path(str(database))
            if path.is_file() and path.stat().st_size == 0:  # a database being written, or truncated
                raise InputError(
                    f"SQL source {self.display_url} is an empty file (0 bytes): nothing read, and the graph "
                    "keeps what the source gave it before"
                )
        engine = self._engine()
        try:
            yield engine
        except SQLAlchemyError as exc:
            raise self._error(exc) from exc
        finally:
            engine.dispose()

    @contextmanager
    def _snapshot(self) -> Iterator[tuple[sa.Connection, sa.Connection]]:
        """A pass's connections: one for the tables' rows, one for the rows they point to. SQLite and
        PostgreSQL: one connection, in one read transaction (:data:`_SNAPSHOT`); another backend: two (a
        streaming cursor may own its connection, e.g. on MySQL), each query reading its own moment."""
        with self._connected() as engine, engine.connect() as conn:
            snapshot = _SNAPSHOT.get(engine.dialect.name)
            if snapshot is not None:
                conn.exec_driver_sql(snapshot)
                yield conn, conn
                return
            with engine.connect() as lookup:
                yield conn, lookup

    async def profile(self) -> SourceProfile:
        with self._snapshot() as (conn, _):
            tables = _tables(sa.inspect(conn))
            counts = {
                t.name: conn.execute(sa.select(sa.func.count()).select_from(sa.table(t.name))).scalar_one()
                for t in tables
            }
        profiles = [
            TableProfile(
                name=t.name,
                rows=counts[t.name],
                columns=[
                    ColumnProfile(
                        name=c["name"],
                        type=str(c["type"]),
                        nullable=bool(c.get("nullable", True)),
                        primary_key=c["name"] in t.pk,
                    )
                    for c in t.columns
                ],
                primary_key=t.pk,
                foreign_keys=[
                    ForeignKeyProfile(
                        columns=fk["constrained_columns"],
                        ref_table=fk["referred_table"],
                        ref_columns=fk["referred_columns"],
                    )
                    for fk in t.fks
                ],
            )
            for t in tables
        ]
        return SourceProfile(
            source_id=self.source_id,
            kind="sql",
            location=self.display_url,
            documents=sum(p.rows for p in profiles),
            rows=sum(p.rows for p in profiles),
            tables=profiles,
        )

    async def documents(self) -> AsyncIterator[SourceDocument]:
        for doc in self.iter_documents():
            yield doc

    def read_documents(self) -> list[SourceDocument]:
        """Every row as a document, in one list."""
        return list(self.iter_documents())

    def iter_documents(self) -> Iterator[SourceDocument]:
        """Every row as a document: table by table in primary-key order, ``STREAM_BATCH`` rows per fetch.

        Only the current batch is held in memory; the rows its foreign keys point to are looked up per
        batch. SQLite and PostgreSQL read every table in one snapshot (:meth:`_snapshot`). A table
        that fails to read part-way is a skip naming it and the last row read: its remaining rows are
        kept from earlier runs, never taken as deleted, and the other tables are read.
        """
        self._skipped = []
        with self._snapshot() as (conn, lookup):
            tables = _tables(sa.inspect(conn))
            by_name = {t.name: t for t in tables}
            metadata = sa.MetaData()
            metadata.reflect(conn, only=list(by_name))
            for table in tables:
                control = control_character(table.name)
                if control is not None:  # in every row's id: the skip keeps what earlier runs read
                    reason = f"its name holds {control}, so its rows cannot have document ids: rename it"
                    self._skipped.append(SkippedItem(path=table.name, reason=reason))
                    continue
                last: str | None = None
                # one connection: a failed query rolls back to here, the snapshot kept (PostgreSQL aborts
                # the transaction); two: each rolls back
                savepoint = conn.begin_nested() if conn is lookup else None
                try:
                    for doc in self._table_documents(table, by_name, metadata, conn, lookup):
                        last = str(doc.metadata["key"])
                        yield doc
                    if savepoint is not None:
                        savepoint.commit()
                except SQLAlchemyError as exc:
                    if savepoint is not None:
                        savepoint.rollback()
                    else:
                        conn.rollback()
                        lookup.rollback()
                    # rows come STREAM_BATCH at a time: the failing one is in the batch after the last read
                    where = f"after row {last}, among the next" if last is not None else "among its first"
                    detail = str(self._error(exc)).split(": ", 1)[-1]
                    self._skipped.append(
                        SkippedItem(
                            path=table.name, reason=f"cannot read a row {where} {STREAM_BATCH:,}: {detail}"
                        )
                    )
        for key in unmatched_keys(self.mappings, list(by_name)):
            self._skipped.append(
                SkippedItem(path=key, reason="matches no table of the source", kind="mapping")
            )
        for pattern, mapping in self.mappings.items():
            if mapping.key is not None:
                self._skipped.append(SkippedItem(path=pattern, reason=IGNORED_KEY, kind="mapping"))
            fields = [f for f in ("description", "attributes", "relations") if getattr(mapping, f)]
            if fields:
                reason = IGNORED_FIELDS.format(fields=" and ".join(fields), are="are" if fields[1:] else "is")
                self._skipped.append(SkippedItem(path=pattern, reason=reason, kind="mapping"))

    def _table_documents(
        self,
        table: _Table,
        by_name: dict[str, _Table],
        metadata: sa.MetaData,
        conn: sa.Connection,
        lookup: sa.Connection,
    ) -> Iterator[SourceDocument]:
        t = metadata.tables[table.name]
        # the statement streams, not the connection (its other queries, a SAVEPOINT too, would stream)
        result = conn.execute(
            sa.select(t).order_by(*_order(t, table)).execution_options(yield_per=STREAM_BATCH)
        )
        index = 0
        for batch in result.partitions():
            rows = [dict(r._mapping) for r in batch]
            targets = [
                self._targets(by_name[fk["referred_table"]], fk, rows, metadata, lookup) for fk in table.fks
            ]
            for row in rows:
                doc = self._row_document(table, index, row, targets)
                index += 1
                if doc is not None:
                    yield doc

    def _targets(
        self,
        ref: _Table,
        fk: dict[str, Any],
        rows: list[dict[str, Any]],
        metadata: sa.MetaData,
        conn: sa.Connection,
    ) -> dict[tuple[Any, ...], ExtractedEntity]:
        """The referenced row (as an entity) of each foreign-key value in ``rows`` that has one.

        A value matches the first row, in primary-key order, whose referred columns equal it in Python
        (the database only narrows the candidates). A table without a primary key is scanned in full,
        since its row position is part of its node id.
        """
        keys = {_key(row, fk["constrained_columns"]) for row in rows}
        keys.discard(None)
        if not keys:
            return {}
        t = metadata.tables[ref.name]
        columns = fk["referred_columns"]
        if not ref.pk:
            scan = conn.execute(
                sa.select(t).order_by(*_order(t, ref)).execution_options(yield_per=STREAM_BATCH)
            )
            return self._first_matches(ref, columns, keys, enumerate(r._mapping for r in scan))
        found: dict[tuple[Any, ...], ExtractedEntity] = {}
        pending = list(keys)
        size = max(1, _LOOKUP_PARAMS // len(columns))
        for start in range(0, len(pending), size):
            chunk = pending[start : start + size]
            query = sa.select(t).where(_matching([t.c[c] for c in columns], chunk)).order_by(*_order(t, ref))
            # the row position only names rows of tables without a primary key
            candidates = ((0, r._mapping) for r in conn.execute(query))
            found.update(self._first_matches(ref, columns, set(chunk), candidates))
        return found

    def _first_matches(
        self,
        ref: _Table,
        columns: list[str],
        wanted: set[tuple[Any, ...]],
        candidates: Iterable[tuple[int, Mapping[str, Any]]],
    ) -> dict[tuple[Any, ...], ExtractedEntity]:
        found: dict[tuple[Any, ...], ExtractedEntity] = {}
        for index, candidate in candidates:
            key = tuple(candidate[c] for c in columns)
            if key in wanted and key not in found:
                found[key] = ExtractedEntity(
                    name=self._label(ref, candidate, index),
                    type=self._type(ref),
                    node_id=self._node_id(ref, candidate, index),
                )
        return found

    def _node_id(self, table: _Table, row: Mapping[str, Any], index: int) -> str:
        key = [_json(row[c]) for c in table.pk] if table.pk else [index]
        return SQL_NODE_PREFIX + content_hash([self.source_id, table.name, key])[:24]

    def _label(self, table: _Table, row: Mapping[str, Any], index: int) -> str:
        mapping = mapping_for(self.mappings, table.name)
        field = field_of(row, mapping.name) if mapping is not None else None
        if field is not None and row[field] not in (None, ""):
            return " ".join(str(row[field]).split())
        for name in (*_NAME_COLUMNS, *(c["name"] for c in table.columns)):
            value = row.get(name)
            if (
                isinstance(value, str)
                and value.strip()
                and name not in table.fk_columns
                and name not in table.pk
            ):
                return " ".join(value.split())
        key = ",".join(str(row[c]) for c in table.pk) if table.pk else str(index)
        return f"{singular(table.name)} {key}"

    def _type(self, table: _Table) -> str:
        mapping = mapping_for(self.mappings, table.name)
        return mapping.type if mapping is not None else snake_case(singular(table.name))

    def _attribute_names(
        self, table: _Table, key: str, doc_id: str, columns: list[str]
    ) -> dict[str, str] | None:
        """Each column's attribute name; None (the row skipped, naming the columns) when two share one."""
        names = _column_names(tuple(columns))  # a table's rows share their columns: worked out once
        if names is not None:
            return names
        try:
            attribute_names(columns, where=f"row {key}")
        except InputError as exc:
            self._skipped.append(SkippedItem(path=table.name, reason=str(exc), document_id=doc_id))
        return None

    def _row_document(
        self,
        table: _Table,
        index: int,
        row: dict[str, Any],
        targets: list[dict[tuple[Any, ...], ExtractedEntity]],
    ) -> SourceDocument | None:
        key = ",".join(str(row[c]) for c in table.pk) if table.pk else str(index)
        doc_id = f"{table.name}#{key}"
        problem = _key_problem(key)
        if problem is not None:  # the skip's id keeps what earlier runs read from the row
            shown = key if len(key) <= _SHOWN_KEY else key[:_SHOWN_KEY] + "…"
            reason = f"row {shown}: its primary key {problem}"
            self._skipped.append(SkippedItem(path=table.name, reason=reason, document_id=doc_id))
            return None
        record = {k: _json(v) for k, v in row.items()}
        nul = unstorable_field(record)
        if nul is not None:
            reason = f"row {key}: {unstorable_reason('column', nul)}"
            self._skipped.append(SkippedItem(path=table.name, reason=reason, document_id=doc_id))
            return None
        refs = []
        for fk, found in zip(table.fks, targets, strict=True):
            values = _key(row, fk["constrained_columns"])
            target = None if values is None else found.get(values)
            column = ",".join(fk["constrained_columns"])
            if target is None and any(row[c] is not None for c in fk["constrained_columns"]):
                self._skipped.append(
                    SkippedItem(
                        path=table.name,
                        reason=f"row {key}: foreign key {column} -> {fk['referred_table']} has no "
                        "target row; edge not created",
                        document_id=doc_id,
                    )
                )
            refs.append((column, target))
        entities: list[ExtractedEntity] = []
        relations: list[ExtractedRelation] = []
        if table.is_join:
            (_, first), (_, second) = refs
            if first is not None and second is not None:  # else a row of no edge (its skip says so)
                names = self._attribute_names(
                    table, key, doc_id, [k for k in record if k not in table.fk_columns]
                )
                if names is None:
                    return None
                attributes = {names[k]: v for k, v in record.items() if k in names and _is_literal(v)}
                entities = [first, second]
                relations = [
                    ExtractedRelation(
                        source=first.node_id or first.name,
                        type=snake_case(table.name),
                        target=second.node_id or second.name,
                        attributes=attributes,
                    )
                ]
        else:
            name = self._label(table, row, index)
            mapping = mapping_for(self.mappings, table.name)
            skip = set(table.pk) | table.fk_columns | {field_of(record, mapping.name) if mapping else None}
            names = self._attribute_names(table, key, doc_id, [k for k in record if k not in skip])
            if names is None:
                return None
            attributes = {names[k]: v for k, v in record.items() if k in names and _is_literal(v)}
            if mapping is None:
                attributes = {k: v for k, v in attributes.items() if v != name}
            me = ExtractedEntity(
                name=name,
                type=self._type(table),
                attributes=attributes,
                node_id=self._node_id(table, row, index),
            )
            entities.append(me)
            for column, target in refs:
                if target is None:
                    continue
                entities.append(target)
                relation = (
                    snake_case(column.removesuffix("_id")) if column.endswith("_id") else snake_case(column)
                )
                relations.append(
                    ExtractedRelation(
                        source=me.node_id or name, type=relation, target=target.node_id or target.name
                    )
                )
        # the nodes it names too: a row of a table without a primary key is a node by its position
        labels = [[e.name, e.node_id] for e in entities]
        return SourceDocument(
            id=doc_id,
            text="\n".join(f"{k}: {v}" for k, v in record.items() if v is not None),
            content_hash=content_hash([record, labels]),
            kind="row",
            metadata={"table": table.name, "key": key},
            records=[record],
            extraction=Extraction(entities=entities, relations=relations),
            extractor=SQL_EXTRACTOR
            if not self.mappings
            else SQL_EXTRACTOR
            + ":"
            + content_hash({k: m.extraction_spec for k, m in self.mappings.items()})[:12],
        )


@lru_cache(maxsize=256)
def _column_names(columns: tuple[str, ...]) -> dict[str, str] | None:
    """:func:`attribute_names` of ``columns`` (read only), or None when two share one name."""
    try:
        return attribute_names(columns, where="")
    except InputError:
        return None


def _key_problem(key: str) -> str | None:
    """Why a row's primary key (as its document id shows it) cannot be in an id, or None: the rule of a
    record file's ``key`` (a control character or line break, over :data:`MAX_KEY_BYTES`)."""
    control = control_character(key)
    if control is not None:
        return f"holds {control}, so it cannot be a document id"
    too_long = oversize(key)
    return f"is {too_long}" if too_long is not None else None


def _tables(inspector: Any) -> list[_Table]:
    """The source's tables, by name; in a database that holds a graphwalk graph too, not the graph's own
    (a graph stored beside its source data read them back as documents at every ingest, and grew)."""
    names = sorted(inspector.get_table_names())
    if holds_graph(names):
        names = [name for name in names if name not in schema.tables]
    return [_Table(name, inspector) for name in names]


def _order(t: sa.Table, table: _Table) -> list[sa.ColumnElement[Any]]:
    """The row order of every pass: the primary key, else all columns."""
    return [t.c[c] for c in table.pk] or list(t.c)


def _key(row: Mapping[str, Any], columns: list[str]) -> tuple[Any, ...] | None:
    """The row's values in ``columns``; None when any is null (no reference)."""
    values = tuple(row[c] for c in columns)
    return None if any(v is None for v in values) else values


def _matching(columns: list[sa.Column[Any]], keys: list[tuple[Any, ...]]) -> sa.ColumnElement[bool]:
    """A WHERE clause selecting the rows whose ``columns`` equal one of ``keys``."""
    if len(columns) == 1:
        return columns[0].in_([key[0] for key in keys])
    return sa.or_(*(sa.and_(*(c == v for c, v in zip(columns, key, strict=True))) for key in keys))


def _json(value: Any) -> JSONValue:
    """A cell as JSON: dates as ISO text, decimals as floats, bytes as null; a float JSON has no number
    for (NaN, an infinity: PostgreSQL's ``real``, ``double precision`` and ``numeric`` hold them) as
    PostgreSQL writes it, ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (a store would keep null)."""
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, bytes | bytearray | memoryview):
        return None
    return value


def _is_literal(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and not (isinstance(value, str) and not value.strip())
