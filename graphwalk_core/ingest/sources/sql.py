"""SQLSource: any SQLAlchemy URL. Rows become record documents, foreign keys become typed edges.

- An entity table's row becomes one node with a pinned id (``hash(source, table, primary key)``): its
  name is the mapped name column (default: ``name``/``title``/``label``, else the first text column),
  its type the mapped type (default: the singular table name) and the other non-key columns its
  attributes. Each non-null foreign key becomes an edge ``row --<column without _id>--> referenced row``.
- A join table (exactly two foreign keys covering its primary key) becomes edges only:
  ``first --<table>--> second``, with its other columns as edge attributes.

A referencing row names the referenced row's label, and its content hash covers that label, so renaming
a row reprocesses the rows that point to it. No LLM is involved.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation, Extraction
from graphwalk_core.ingest.sources.base import (
    ColumnProfile,
    ForeignKeyProfile,
    SkippedItem,
    SourceDocument,
    SourceProfile,
    TableProfile,
    check_source_id,
)
from graphwalk_core.ingest.sources.mapping import Mappings, mapping_for
from graphwalk_core.ingest.text import singular, snake_case
from graphwalk_core.model import JSONValue, content_hash

#: Recorded as the extractor of SQL-derived elements (bump when the row -> graph rules change).
SQL_EXTRACTOR = "sql:1"
_NAME_COLUMNS = ("name", "title", "label")


def safe_url(url: str | URL) -> str:
    """The URL with any password masked (for messages and profiles)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


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


class SQLSource:
    """Documents from every table reachable through a SQLAlchemy URL."""

    def __init__(
        self, url: str | URL, *, source_id: str | None = None, mappings: Mappings | None = None
    ) -> None:
        try:
            self.url = make_url(url)
        except ArgumentError as exc:
            raise InputError(f"not a SQLAlchemy URL: {safe_url(url)}") from exc
        self.display_url = safe_url(self.url)
        database = self.url.database
        if (
            self.url.get_backend_name() == "sqlite"
            and database not in (None, "", ":memory:")
            and not Path(str(database)).is_file()
        ):
            raise InputError(f"cannot open SQL source {self.display_url}: no such database file")
        default_id = snake_case(Path(self.url.database or "sql").stem) or "sql"
        self._source_id = check_source_id(source_id or default_id)
        self.mappings = mappings or {}
        self._skipped: list[SkippedItem] = []

    @property
    def source_id(self) -> str:
        return self._source_id

    @property
    def skipped(self) -> list[SkippedItem]:
        return list(self._skipped)

    def _engine(self) -> sa.Engine:
        try:
            return sa.create_engine(self.url)
        except (NoSuchModuleError, ArgumentError, ImportError) as exc:
            raise InputError(f"cannot open SQL source {self.display_url}: {type(exc).__name__}") from exc

    def _error(self, exc: SQLAlchemyError) -> InputError:
        detail = str(getattr(exc, "orig", None) or type(exc).__name__).splitlines()[0]
        if self.url.password:
            detail = detail.replace(str(self.url.password), "***")
        return InputError(f"cannot read SQL source {self.display_url}: {detail}")

    def _read(self) -> tuple[list[_Table], dict[str, list[dict[str, Any]]]]:
        engine = self._engine()
        try:
            with engine.connect() as conn:
                inspector = sa.inspect(conn)
                tables = [_Table(name, inspector) for name in sorted(inspector.get_table_names())]
                rows: dict[str, list[dict[str, Any]]] = {}
                for table in tables:
                    t = sa.Table(table.name, sa.MetaData(), autoload_with=conn)
                    order = [t.c[c] for c in table.pk] or list(t.c)
                    rows[table.name] = [dict(r._mapping) for r in conn.execute(sa.select(t).order_by(*order))]
                return tables, rows
        except SQLAlchemyError as exc:
            raise self._error(exc) from exc
        finally:
            engine.dispose()

    async def profile(self) -> SourceProfile:
        tables, rows = self._read()
        profiles = [
            TableProfile(
                name=t.name,
                rows=len(rows[t.name]),
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
        for doc in self.read_documents():
            yield doc

    def read_documents(self) -> list[SourceDocument]:
        """Every row as a document (synchronous; ``documents()`` yields these)."""
        tables, rows = self._read()
        by_name = {t.name: t for t in tables}
        self._skipped = []
        docs: list[SourceDocument] = []
        for table in tables:
            for index, row in enumerate(rows[table.name]):
                doc = self._row_document(table, index, row, by_name, rows)
                if doc is not None:
                    docs.append(doc)
        return docs

    def _node_id(self, table: _Table, row: dict[str, Any], index: int) -> str:
        key = [_json(row[c]) for c in table.pk] if table.pk else [index]
        return "n_sql_" + content_hash([self.source_id, table.name, key])[:24]

    def _label(self, table: _Table, row: dict[str, Any], index: int) -> str:
        mapping = mapping_for(self.mappings, table.name)
        if mapping is not None and row.get(mapping.name) not in (None, ""):
            return " ".join(str(row[mapping.name]).split())
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

    def _referenced(
        self,
        fk: dict[str, Any],
        row: dict[str, Any],
        by_name: dict[str, _Table],
        rows: dict[str, list[dict[str, Any]]],
    ) -> ExtractedEntity | None:
        values = [row[c] for c in fk["constrained_columns"]]
        if any(v is None for v in values):
            return None
        ref = by_name[fk["referred_table"]]
        for index, candidate in enumerate(rows[ref.name]):
            if [candidate[c] for c in fk["referred_columns"]] == values:
                return ExtractedEntity(
                    name=self._label(ref, candidate, index),
                    type=self._type(ref),
                    node_id=self._node_id(ref, candidate, index),
                )
        return None

    def _row_document(
        self,
        table: _Table,
        index: int,
        row: dict[str, Any],
        by_name: dict[str, _Table],
        rows: dict[str, list[dict[str, Any]]],
    ) -> SourceDocument | None:
        key = ",".join(str(row[c]) for c in table.pk) if table.pk else str(index)
        doc_id = f"{table.name}#{key}"
        record = {k: _json(v) for k, v in row.items()}
        refs = []
        for fk in table.fks:
            target = self._referenced(fk, row, by_name, rows)
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
            if first is None or second is None:
                return None
            attributes = {
                snake_case(k): v for k, v in record.items() if k not in table.fk_columns and _is_literal(v)
            }
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
            skip = set(table.pk) | table.fk_columns | {mapping.name if mapping else None}
            attributes = {snake_case(k): v for k, v in record.items() if k not in skip and _is_literal(v)}
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
        labels = [e.name for e in entities]
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
            + content_hash({k: m.model_dump(mode="json") for k, m in self.mappings.items()})[:12],
        )


def _json(value: Any) -> JSONValue:
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return None
    return value


def _is_literal(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and not (isinstance(value, str) and not value.strip())
