"""Graph import/export as Parquet tables.

Layout (one folder; every table sorted deterministically, readable by DuckDB):

``nodes.parquet``   id, type, name, summary, aliases (list<string>), attributes (canonical JSON object);
                    sorted by id.
``edges.parquet``   id, source, target, type, attributes (canonical JSON object);
                    sorted by (source, type, target).
``provenance.parquet``
                    element_kind ("node" | "edge"), element_id, scope ("element" | "attribute" |
                    "name" | "summary"), key (attribute key, name or summary text; null for scope
                    element), position (order within its list), source_id, content_hash, extractor,
                    confidence, start, end. A null source_id marks an entry backed by no provenance.
                    Sorted by (element_kind, element_id, scope, key, position).
``conflicts.parquet``
                    element_kind, element_id, key, value_index, value (canonical JSON), position and
                    the provenance columns as above; one row per (value, provenance).
                    Sorted by (element_kind, element_id, key, value_index, position).
``metadata.parquet`` key, value; sorted by key.

A save writes the five tables beside the folder's first (``.<table>.parquet.next``), then marks them
complete (``.saving``) and moves them in: a save cut before the mark leaves the old graph, one cut after
it reads as the new one (the next save finishes moving them), never one table of each. Saves by several
processes take turns (a lock on the folder), so the folder holds the last one whole, and a read waits
for a save in progress (and saves for reads).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from graphwalk_core.errors import InputError
from graphwalk_core.files import folder_locked, write_table_atomic, write_text_atomic
from graphwalk_core.model import (
    AttributeConflict,
    ConflictValue,
    Edge,
    Node,
    NodeId,
    Provenance,
    bulk_edge_id,
    canonical_json,
)
from graphwalk_core.stores.base import GraphStore, ParquetExport, offers, one_state
from graphwalk_core.stores.keys import shown

TABLES = ("nodes", "edges", "provenance", "conflicts", "metadata")
_PROV_FIELDS = [
    ("source_id", pa.string()),
    ("content_hash", pa.string()),
    ("extractor", pa.string()),
    ("confidence", pa.float64()),
    ("start", pa.int64()),
    ("end", pa.int64()),
]
SCHEMAS: dict[str, pa.Schema] = {
    "nodes": pa.schema(
        [
            ("id", pa.string()),
            ("type", pa.string()),
            ("name", pa.string()),
            ("summary", pa.string()),
            ("aliases", pa.list_(pa.string())),
            ("attributes", pa.string()),
        ]
    ),
    "edges": pa.schema(
        [
            ("id", pa.string()),
            ("source", pa.string()),
            ("target", pa.string()),
            ("type", pa.string()),
            ("attributes", pa.string()),
        ]
    ),
    "provenance": pa.schema(
        [
            ("element_kind", pa.string()),
            ("element_id", pa.string()),
            ("scope", pa.string()),
            ("key", pa.string()),
            ("position", pa.int32()),
            *_PROV_FIELDS,
        ]
    ),
    "conflicts": pa.schema(
        [
            ("element_kind", pa.string()),
            ("element_id", pa.string()),
            ("key", pa.string()),
            ("value_index", pa.int32()),
            ("value", pa.string()),
            ("position", pa.int32()),
            *_PROV_FIELDS,
        ]
    ),
    "metadata": pa.schema([("key", pa.string()), ("value", pa.string())]),
}

# ---------------------------------------------------------------------- Parquet: write


class SimpleNode(NamedTuple):
    """A node with only an id (also its name), a type and element provenance: read/written cheaply."""

    id: NodeId
    type: str
    provenance: tuple[Provenance, ...]

    def to_model(self) -> Node:
        return Node(id=self.id, type=self.type, name=self.id, provenance=self.provenance)


class SimpleEdge(NamedTuple):
    """An edge with only element provenance: read/written cheaply."""

    source: NodeId
    type: str
    target: NodeId
    provenance: tuple[Provenance, ...]

    def to_model(self) -> Edge:
        return Edge(source=self.source, type=self.type, target=self.target, provenance=self.provenance)


_PROV_NAMES = [name for name, _ in _PROV_FIELDS]
_NO_PROVENANCE: tuple[None, ...] = (None,) * len(_PROV_FIELDS)
_SORTS = {
    "nodes": ["id"],
    "edges": ["source", "type", "target"],
    "provenance": ["element_kind", "element_id", "scope", "key", "position"],
    "conflicts": ["element_kind", "element_id", "key", "value_index", "position"],
    "metadata": ["key"],
}


def _prov_values(p: Provenance | None) -> tuple[Any, ...]:
    if p is None:
        return _NO_PROVENANCE
    return (p.source_id, p.content_hash, p.extractor, p.confidence, p.start, p.end)


class _Columns:
    """Row-wise accumulation of the Parquet tables (transposed into columns at the end)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[Any, ...]]] = {t: [] for t in TABLES}
        #: simple elements, written column-wise: (kind, id(provenance)) -> (provenance, ids)
        self.simple: dict[tuple[str, int], tuple[tuple[Provenance, ...], list[str]]] = {}
        self.simple_nodes: tuple[list[str], list[str]] = ([], [])
        self.simple_edges: tuple[list[str], list[str], list[str], list[str]] = ([], [], [], [])

    def _simple(self, kind: str, element_id: str, provenance: tuple[Provenance, ...]) -> None:
        group = self.simple.get((kind, id(provenance)))
        if group is None:
            group = self.simple[(kind, id(provenance))] = (provenance, [])
        group[1].append(element_id)

    def provenance(
        self, kind: str, element_id: str, scope: str, key: str | None, group: Iterable[Provenance]
    ) -> None:
        items: list[Provenance | None] = list(group)
        if scope != "element" and not items:
            items = [None]  # an entry that is present but backed by nothing
        rows = self.rows["provenance"]
        for position, p in enumerate(items):
            rows.append((kind, element_id, scope, key, position, *_prov_values(p)))

    def element(self, kind: str, element_id: str, element: Node | Edge) -> None:
        self.provenance(kind, element_id, "element", None, element.provenance)
        for key, group in element.attribute_provenance.items():
            self.provenance(kind, element_id, "attribute", key, group)
        for key, conflict in element.conflicts.items():
            for index, cv in enumerate(conflict.values):
                items: list[Provenance | None] = list(cv.provenance) or [None]
                value = canonical_json(cv.value)
                for position, p in enumerate(items):
                    row = (kind, element_id, key, index, value, position, *_prov_values(p))
                    self.rows["conflicts"].append(row)

    def node(self, node: Node | SimpleNode) -> None:
        if isinstance(node, SimpleNode):
            self.simple_nodes[0].append(node.id)
            self.simple_nodes[1].append(node.type)
            self._simple("node", node.id, node.provenance)
            return
        attributes = canonical_json(node.attributes)
        self.rows["nodes"].append(
            (node.id, node.type, node.name, node.summary, list(node.aliases), attributes)
        )
        self.element("node", node.id, node)
        for name, group in node.name_sources.items():
            self.provenance("node", node.id, "name", name, group)
        for summary, group in node.summary_sources.items():
            self.provenance("node", node.id, "summary", summary, group)

    def edge(self, edge: Edge | SimpleEdge) -> None:
        if isinstance(edge, SimpleEdge):
            eid = bulk_edge_id(edge.source, edge.type, edge.target)
            for column, value in zip(
                self.simple_edges, (eid, edge.source, edge.target, edge.type), strict=True
            ):
                column.append(value)
            self._simple("edge", eid, edge.provenance)
            return
        eid = edge.id
        attributes = canonical_json(edge.attributes)
        self.rows["edges"].append((eid, edge.source, edge.target, edge.type, attributes))
        self.element("edge", eid, edge)

    def _simple_tables(self, name: str) -> list[pa.Table]:
        """The simple elements' rows of table ``name``, built column-wise."""
        schema = SCHEMAS[name]
        if name == "nodes" and self.simple_nodes[0]:
            ids, types = self.simple_nodes
            n = len(ids)
            columns = [
                ids,
                types,
                ids,
                pa.nulls(n, pa.string()),
                pa.repeat(pa.scalar([], pa.list_(pa.string())), n),
                pa.repeat("{}", n),
            ]
            return [pa.table(columns, schema=schema)]
        if name == "edges" and self.simple_edges[0]:
            eids, sources, targets, types = self.simple_edges
            columns = [eids, sources, targets, types, pa.repeat("{}", len(eids))]
            return [pa.table(columns, schema=schema)]
        if name != "provenance":
            return []
        blocks = []
        for (kind, _), (provenance, ids) in self.simple.items():
            n = len(ids)
            for position, p in enumerate(provenance):
                head = [pa.repeat(kind, n), ids, pa.repeat("element", n), pa.nulls(n, pa.string())]
                values = [
                    pa.repeat(pa.scalar(v, type=f), n)
                    for v, (_, f) in zip(_prov_values(p), _PROV_FIELDS, strict=True)
                ]
                blocks.append(
                    pa.table([*head, pa.repeat(pa.scalar(position, pa.int32()), n), *values], schema=schema)
                )
        return blocks

    def table(self, name: str) -> pa.Table:
        schema = SCHEMAS[name]
        rows = self.rows[name]
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema.names]
        arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
        table = pa.concat_tables([pa.table(arrays, schema=schema), *self._simple_tables(name)])
        return table.sort_by([(c, "ascending") for c in _SORTS[name]])


def write_parquet_graph(
    directory: str | Path,
    nodes: Iterable[Node | SimpleNode],
    edges: Iterable[Edge | SimpleEdge],
    metadata: Mapping[str, str],
) -> Path:
    """Write the five Parquet tables into ``directory`` (created if needed), each file atomically; a text
    Parquet cannot hold (a lone surrogate: no UTF-8 form) is an InputError, and nothing is written."""
    out = Path(directory)
    columns = _Columns()
    try:
        for node in nodes:
            columns.node(node)
        for edge in edges:
            columns.edge(edge)
        for key, value in metadata.items():
            columns.rows["metadata"].append((key, value))
        tables = {name: columns.table(name) for name in TABLES}  # built before any file is replaced
    except UnicodeEncodeError as exc:
        text = str(exc.object)
        raise InputError(
            f"cannot save the graph to {out}: {shown(text)} holds a lone surrogate "
            f"(U+{ord(text[exc.start]):04X}), which no graph store keeps"
        ) from None
    out.mkdir(parents=True, exist_ok=True)
    with folder_locked(out):  # another process's save would finish or drop this one's tables meanwhile
        _finish_save(out)  # one cut short before this one
        for name, table in tables.items():
            write_table_atomic(table, _pending(out, name))
        write_text_atomic("", out / _SAVING)  # every table is written: from here on, this save is the graph
        _finish_save(out)
    return out


#: Present while a save moves its written tables (:func:`_pending`) in; see the module docstring.
_SAVING = ".saving"


def _pending(folder: Path, name: str) -> Path:
    """Where a save writes table ``name`` before it replaces the folder's."""
    return folder / f".{name}.parquet.next"


def _finish_save(folder: Path) -> None:
    """Finish a save cut short: move its tables in once they were all written (``.saving``), else drop
    them (the folder's tables are still one graph)."""
    complete = (folder / _SAVING).exists()
    for name in TABLES:
        pending = _pending(folder, name)
        if complete and pending.exists():
            os.replace(pending, folder / f"{name}.parquet")
        else:
            pending.unlink(missing_ok=True)
    (folder / _SAVING).unlink(missing_ok=True)


async def export_parquet(store: GraphStore, directory: str | Path) -> Path:
    """Write any store's nodes, edges, provenance, conflicts and metadata as Parquet tables.

    Stores offering :class:`~graphwalk_core.stores.base.ParquetExport` write the same tables themselves.
    """
    if offers(store, ParquetExport):
        return store.save(directory)
    async with one_state(store):
        nodes = [n async for n in store.iter_nodes()]
        edges = [e async for e in store.iter_edges()]
        keys = await store.metadata_keys()
        metadata = {k: v for k in keys if (v := await store.get_metadata(k)) is not None}
    return write_parquet_graph(directory, nodes, edges, metadata)


# ---------------------------------------------------------------------- Parquet: read


def table_path(folder: Path, name: str) -> Path:
    """Where the folder's graph keeps table ``name``: ``<name>.parquet``, or the pending one of a save cut
    short once its tables were all written (see the module docstring)."""
    pending = _pending(folder, name)
    return pending if (folder / _SAVING).exists() and pending.is_file() else folder / f"{name}.parquet"


def _unreadable(path: Path, exc: Exception) -> InputError:
    """The error for a table pyarrow cannot read (a truncated file, another format)."""
    return InputError(f"cannot read {path}: {exc}")


def table_rows(folder: Path, name: str) -> int:
    """The rows of the folder's table ``name``, from its footer (0 when it has none)."""
    path = table_path(folder, name)
    if not path.is_file():
        return 0
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(path, exc) from exc


#: The columns of each table that may hold a null (the others always hold a value).
_NULLABLE = {
    "nodes": {"summary", "aliases"},
    "provenance": {"key", *_PROV_NAMES},
    "conflicts": set(_PROV_NAMES),
}


def _read_table(directory: Path, name: str) -> pa.Table:
    """Table ``name`` of the folder's graph, in its layout's column order and types: another type that
    casts to it (a DuckDB ``int64`` position) is cast; one that does not, or a null where the layout has
    none, is an InputError naming the file and column."""
    path = table_path(directory, name)
    if not path.is_file():
        raise InputError(f"graph folder {directory} has no {name}.parquet")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(path, exc) from exc
    missing = set(SCHEMAS[name].names) - set(table.column_names)
    if missing:
        raise InputError(f"{path} lacks columns {sorted(missing)}")
    table = table.select(SCHEMAS[name].names)
    for index, field in enumerate(SCHEMAS[name]):
        column = table.column(index)
        if column.type != field.type:
            try:
                table = table.set_column(index, field, pc.cast(column, field.type))
            except pa.ArrowException:
                raise InputError(
                    f"{path}: column {field.name!r} holds {column.type}, not {field.type}"
                ) from None
        if column.null_count and field.name not in _NULLABLE.get(name, ()):
            row = pc.index(pc.is_null(column), True).as_py()
            raise InputError(f"{path}: column {field.name!r} holds a null (row {row + 1:,})")
    return table


def _columns(table: pa.Table) -> dict[str, list[Any]]:
    return {c: table.column(c).to_pylist() for c in table.column_names}


_MISSING: Any = object()


class _ProvenanceReader:
    """Turns provenance columns into (shared, deduplicated) Provenance objects."""

    def __init__(self) -> None:
        self.cache: dict[tuple[Any, ...], Provenance | None] = {_NO_PROVENANCE: None}

    def __call__(self, values: tuple[Any, ...]) -> Provenance | None:
        p = self.cache.get(values, _MISSING)
        if p is _MISSING:
            p = self.cache[values] = Provenance(**dict(zip(_PROV_NAMES, values, strict=True)))
        return p  # type: ignore[return-value]


def _element_provenance(
    table: pa.Table, read: _ProvenanceReader
) -> dict[tuple[str, str], tuple[Provenance, ...]]:
    """(kind, element id) -> element provenance, computed column-wise (the bulk of the rows).

    Rows are keyed by their provenance values joined as text (floats print round-trip exactly),
    so each distinct provenance is built once; rows are in position order per element.
    """
    if table.num_rows == 0:
        return {}
    parts = [pc.cast(table.column(n), pa.string()) for n in _PROV_NAMES]
    joined = pc.binary_join_element_wise(*parts, "\x1f", null_handling="replace", null_replacement="\x00")
    codes = pc.dictionary_encode(joined).combine_chunks().indices.to_numpy()
    _, first_rows = np.unique(codes, return_index=True)
    picked = _columns(table.take(pa.array(first_rows)).select(_PROV_NAMES))
    distinct = [read(values) for values in zip(*picked.values(), strict=True)]
    singles = [(p,) for p in distinct]
    result: dict[tuple[str, str], tuple[Provenance, ...]] = {}
    kinds, ids = table.column("element_kind").to_pylist(), table.column("element_id").to_pylist()
    for key, code in zip(zip(kinds, ids, strict=True), codes.tolist(), strict=True):
        known = result.get(key)
        result[key] = singles[code] if known is None else (*known, distinct[code])
    return result


#: (kind, element id) -> scope -> key -> provenance list
_Groups = dict[tuple[str, str], dict[str, dict[str | None, list[Provenance]]]]


def _group_provenance(cols: dict[str, list[Any]], read: _ProvenanceReader) -> _Groups:
    """Rows are sorted by (kind, id, scope, key, position): each group is one consecutive run."""
    groups: _Groups = {}
    prov_rows = zip(*(cols[n] for n in _PROV_NAMES), strict=True)
    heads = zip(cols["element_kind"], cols["element_id"], cols["scope"], cols["key"], strict=True)
    last: tuple[Any, ...] | None = None
    entry: list[Provenance] = []
    for head, values in zip(heads, prov_rows, strict=True):
        if head != last:
            last = head
            kind, element_id, scope, key = head
            entry = groups.setdefault((kind, element_id), {}).setdefault(scope, {}).setdefault(key, [])
        p = read(values)
        if p is not None:
            entry.append(p)
    return groups


def _group_conflicts(
    cols: dict[str, list[Any]], read: _ProvenanceReader
) -> dict[tuple[str, str], dict[str, AttributeConflict]]:
    values: dict[tuple[str, str, str], dict[int, tuple[str, list[Provenance]]]] = {}
    prov_cols = [cols[n] for n in _PROV_NAMES]
    ids = (cols["element_kind"], cols["element_id"], cols["key"], cols["value_index"], cols["value"])
    for kind, element_id, key, index, value, *prov in zip(*ids, *prov_cols, strict=True):
        entry = values.setdefault((kind, element_id, key), {}).setdefault(index, (value, []))
        p = read(tuple(prov))
        if p is not None:
            entry[1].append(p)
    conflicts: dict[tuple[str, str], dict[str, AttributeConflict]] = {}
    for (kind, element_id, key), by_index in values.items():
        cvs = tuple(
            ConflictValue(value=json.loads(v), provenance=tuple(p)) for _, (v, p) in sorted(by_index.items())
        )
        conflicts.setdefault((kind, element_id), {})[key] = AttributeConflict(key=key, values=cvs)
    return conflicts


def _element_fields(
    element: tuple[Provenance, ...],
    scopes: Mapping[str, Mapping[str | None, list[Provenance]]],
    conflicts: dict[str, AttributeConflict],
) -> dict[str, Any]:
    return {
        "provenance": element,
        "attribute_provenance": {k: tuple(v) for k, v in scopes.get("attribute", {}).items()},
        "conflicts": conflicts,
    }


def _attributes(text: str) -> Any:
    """An ``attributes`` cell, parsed (a ValueError saying so when it is not JSON)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"attributes: {exc}") from None


def _reason(exc: ValueError) -> str:
    """What is wrong with a row, from what reading it raised: pydantic's first error as ``field: problem``
    (not its multi-line report), else the error's text."""
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
    return str(exc)


def read_parquet_graph(
    directory: str | Path,
) -> tuple[list[Node | SimpleNode], list[Edge | SimpleEdge], dict[str, str]]:
    """(nodes, edges, metadata) from the Parquet tables in ``directory``.

    Elements with nothing but element provenance (and, for nodes, name == id) come back as
    :class:`SimpleNode` / :class:`SimpleEdge`; call ``to_model()`` for the pydantic model.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise InputError(f"graph folder not found: {folder}")
    with folder_locked(folder, shared=True):  # a save meanwhile would move in its tables as they are read
        raw = {name: _read_table(folder, name) for name in TABLES}
    read = _ProvenanceReader()
    is_element = pc.equal(raw["provenance"].column("scope"), "element")
    try:
        element_provenance = _element_provenance(raw["provenance"].filter(is_element), read)
        groups = _group_provenance(_columns(raw["provenance"].filter(pc.invert(is_element))), read)
    except ValueError as exc:
        raise InputError(f"{table_path(folder, 'provenance')}: {_reason(exc)}") from None
    try:
        conflicts = _group_conflicts(_columns(raw["conflicts"]), read)
    except ValueError as exc:
        raise InputError(f"{table_path(folder, 'conflicts')}: {_reason(exc)}") from None
    tables = {name: _columns(raw[name]) for name in ("nodes", "edges", "metadata")}
    nodes: list[Node | SimpleNode] = []
    n = tables["nodes"]
    for node_id, kind, name, summary, aliases, attributes in zip(
        n["id"], n["type"], n["name"], n["summary"], n["aliases"], n["attributes"], strict=True
    ):
        scopes = groups.get(("node", node_id), {})
        element = element_provenance.get(("node", node_id), ())
        if (
            name == node_id
            and summary is None
            and not aliases
            and attributes == "{}"
            and not scopes
            and ("node", node_id) not in conflicts
        ):
            nodes.append(SimpleNode(node_id, kind, element))
            continue
        fields = _element_fields(element, scopes, conflicts.get(("node", node_id), {}))
        fields["name_sources"] = {k: tuple(v) for k, v in scopes.get("name", {}).items()}
        fields["summary_sources"] = {k: tuple(v) for k, v in scopes.get("summary", {}).items()}
        try:
            node = Node(
                id=node_id,
                type=kind,
                name=name,
                summary=summary,
                aliases=tuple(aliases or ()),
                attributes=_attributes(attributes),
                **fields,
            )
        except ValueError as exc:
            raise InputError(
                f"{table_path(folder, 'nodes')}: node {shown(node_id)}: {_reason(exc)}"
            ) from None
        nodes.append(node)
    edges: list[Edge | SimpleEdge] = []
    e = tables["edges"]
    for eid, source, target, kind, attributes in zip(
        e["id"], e["source"], e["target"], e["type"], e["attributes"], strict=True
    ):
        scopes = groups.get(("edge", eid), {})
        element = element_provenance.get(("edge", eid), ())
        if attributes == "{}" and not scopes and ("edge", eid) not in conflicts:
            edges.append(SimpleEdge(source, kind, target, element))
            continue
        fields = _element_fields(element, scopes, conflicts.get(("edge", eid), {}))
        try:
            edges.append(
                Edge(source=source, target=target, type=kind, attributes=_attributes(attributes), **fields)
            )
        except ValueError as exc:
            where = f"{table_path(folder, 'edges')}: edge {shown(source)} -> {shown(target)}"
            raise InputError(f"{where}: {_reason(exc)}") from None
    metadata = dict(zip(tables["metadata"]["key"], tables["metadata"]["value"], strict=True))
    return nodes, edges, metadata


def to_model(element: Node | Edge | SimpleNode | SimpleEdge) -> Node | Edge:
    """The pydantic model of an element read by :func:`read_parquet_graph`."""
    return element.to_model() if isinstance(element, SimpleNode | SimpleEdge) else element


async def import_parquet(directory: str | Path, store: GraphStore) -> tuple[int, int]:
    """Add the Parquet graph in ``directory`` to ``store`` in one transaction; returns (nodes, edges)."""
    nodes, edges, metadata = read_parquet_graph(directory)
    async with store.transaction():
        for node in nodes:
            await store.upsert_node(to_model(node))  # type: ignore[arg-type]
        for edge in edges:
            await store.upsert_edge(to_model(edge))  # type: ignore[arg-type]
        for key, value in metadata.items():
            await store.set_metadata(key, value)
    return len(nodes), len(edges)
