"""In-memory graph store: tuple adjacency for fast hub walks, lazily built models, undo-log transactions.

Adjacency is kept as lists of :class:`Adjacent` tuples per node, so ``adjacent()`` is a list copy;
``neighbor_groups()`` reads a grouped index of the adjacency (see :mod:`graphwalk_core.stores.grouped`),
built on first use and dropped by any edge write.
Nodes and edges loaded in bulk are kept as raw tuples and turned into pydantic models (then cached)
only when someone asks for them. Every write goes through four primitives that log an undo entry
inside :meth:`MemoryGraphStore.transaction`, so an exception rolls the store back (to the start of
the innermost block; writes by other coroutines during the block are rolled back with it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphwalk_core.errors import InputError
from graphwalk_core.model import GENERIC_TYPE, Edge, EdgeId, Node, NodeId, Provenance, bulk_edge_id
from graphwalk_core.model.merge import grown_sources, merge_edge_data, merge_node_data, rewired, source_ids
from graphwalk_core.stores.base import Adjacent, Direction, Neighbor, NeighborGroups
from graphwalk_core.stores.keys import check_edge, check_metadata, check_node

if TYPE_CHECKING:
    from graphwalk_core.stores.grouped import GroupedAdjacencyIndex

#: (source, type, target): the in-memory key of an edge.
EdgeKey = tuple[NodeId, str, NodeId]
#: A node loaded in bulk and not yet materialized: (type, provenance); its name is its id.
RawNode = tuple[str, tuple[Provenance, ...]]
#: An edge loaded in bulk and not yet materialized: its provenance.
RawEdge = tuple[Provenance, ...]
#: ``node_type_for(relation, role)`` with role ``"subject"`` or ``"object"`` gives a node type.
NodeTypeFor = Callable[[str, str], str]

_MISSING: Any = object()
_DIRECTIONS = ("out", "in", "both")


def check_direction(direction: str) -> None:
    """Raise InputError unless ``direction`` is out, in or both."""
    if direction not in _DIRECTIONS:
        raise InputError(f"direction must be one of out, in, both (got {direction!r})")


def name_key(name: str) -> str:
    """The case-insensitive lookup key of a name or alias."""
    return name.casefold()


class MemoryGraphStore:
    """A :class:`~graphwalk_core.stores.base.GraphStore` held in memory (save/load as Parquet tables)."""

    def __init__(self) -> None:
        self._nodes: dict[NodeId, Node | RawNode] = {}
        self._edges: dict[EdgeKey, Edge | RawEdge] = {}
        self._out: dict[NodeId, list[Adjacent]] = {}
        self._in: dict[NodeId, list[Adjacent]] = {}
        self._names: dict[str, set[NodeId]] = {}
        self._node_sources: dict[str, set[NodeId]] = {}
        self._edge_sources: dict[str, set[EdgeKey]] = {}
        self._edge_ids: dict[EdgeId, EdgeKey] | None = None
        self._grouped: GroupedAdjacencyIndex | None = None
        self._node_types: list[str] | None = None
        self._metadata: dict[str, str] = {}
        self._undo: list[tuple[str, Any, Any]] | None = None

    # ------------------------------------------------------------------ bulk loading

    @classmethod
    def from_triples(
        cls,
        triples: Iterable[tuple[str, str, str]],
        *,
        source_id: str,
        content_hash: str = "",
        node_type_for: NodeTypeFor | None = None,
    ) -> MemoryGraphStore:
        """A store of ``subject --relation--> object`` triples; node ids are the entity names.

        Duplicate triples collapse into one edge. Every element gets one provenance
        (``source_id``, ``content_hash``). A node's type is the first non-generic type
        ``node_type_for(relation, "subject" | "object")`` gives it in file order (generic when none).
        """
        provenance = (Provenance(source_id=source_id, content_hash=content_hash),)
        edges = dict.fromkeys(triples, provenance)
        bad = next((t for t in edges if not (type(t) is tuple and len(t) == 3)), None)
        if bad is not None:
            raise InputError(f"from_triples needs (subject, relation, object) tuples, got {bad!r}")
        node_types: dict[NodeId, str] = {}
        if node_type_for is None:
            for subject, _, obj in edges:
                node_types[subject] = node_types[obj] = GENERIC_TYPE
        else:
            by_relation = {r: (node_type_for(r, "subject"), node_type_for(r, "object")) for _, r, _ in edges}
            for subject, relation, obj in edges:
                subject_type, object_type = by_relation[relation]
                if node_types.get(subject, GENERIC_TYPE) == GENERIC_TYPE:
                    node_types[subject] = subject_type
                if node_types.get(obj, GENERIC_TYPE) == GENERIC_TYPE:
                    node_types[obj] = object_type
        nodes = {node: (kind, provenance) for node, kind in node_types.items()}
        return cls._bulk(nodes, edges, {})  # type: ignore[arg-type]

    @classmethod
    def _bulk(
        cls,
        nodes: dict[NodeId, Node | RawNode],
        edges: dict[EdgeKey, Edge | RawEdge],
        metadata: dict[str, str],
    ) -> MemoryGraphStore:
        """A store over these node and edge values, building adjacency and indexes in one pass."""
        store = cls()
        out_adj: defaultdict[NodeId, list[Adjacent]] = defaultdict(list)
        in_adj: defaultdict[NodeId, list[Adjacent]] = defaultdict(list)
        make = tuple.__new__
        for subject, relation, obj in edges:
            out_adj[subject].append(make(Adjacent, (relation, obj, "out")))
            in_adj[obj].append(make(Adjacent, (relation, subject, "in")))
        if not (out_adj.keys() <= nodes.keys() and in_adj.keys() <= nodes.keys()):
            key = next(k for k in edges if k[0] not in nodes or k[2] not in nodes)
            missing = [n for n in (key[0], key[2]) if n not in nodes]
            raise InputError(f"edge {key[0]} -{key[1]}-> {key[2]}: unknown node(s) {missing}")
        store._nodes, store._edges, store._metadata = nodes, edges, metadata
        store._out, store._in = dict(out_adj), dict(in_adj)
        for index, values, raw_at in ((store._node_sources, nodes, 1), (store._edge_sources, edges, None)):
            # raw values share provenance tuples: index each tuple's members in one update
            by_provenance: dict[int, tuple[tuple[Provenance, ...], list[Any]]] = {}
            for member, value in values.items():
                if isinstance(value, Node | Edge):
                    _index_keys(index, source_ids(value), member, add=True)
                    continue
                prov = value if raw_at is None else value[raw_at]
                group = by_provenance.get(id(prov))
                if group is None:
                    group = by_provenance[id(prov)] = (prov, [])  # type: ignore[assignment]
                group[1].append(member)
            for prov, members in by_provenance.values():
                for source in {p.source_id for p in prov}:
                    index.setdefault(source, set()).update(members)
        names = store._names
        for node_id, value in nodes.items():
            keys = [node_id] if not isinstance(value, Node) else [value.name, *value.aliases]
            for name in keys:
                ids = names.get(name_key(name))
                if ids is None:
                    ids = names[name_key(name)] = set()
                ids.add(node_id)
        return store

    def save(self, directory: str | Path) -> Path:
        """Write the graph and its metadata as Parquet tables (see :mod:`graphwalk_core.stores.parquet`)."""
        from graphwalk_core.stores.parquet import SimpleEdge, SimpleNode, write_parquet_graph

        nodes = (
            value if isinstance(value, Node) else SimpleNode(node_id, *value)
            for node_id, value in self._nodes.items()
        )
        edges = (
            value if isinstance(value, Edge) else SimpleEdge(*key, value)
            for key, value in self._edges.items()
        )  # the writer sorts every table
        return write_parquet_graph(directory, nodes, edges, dict(self._metadata))

    @classmethod
    def load(cls, directory: str | Path) -> MemoryGraphStore:
        """A store read from Parquet tables written by :meth:`save` or ``export_parquet``."""
        from graphwalk_core.stores.parquet import SimpleNode, read_parquet_graph

        nodes, edges, metadata = read_parquet_graph(directory)
        node_values: dict[NodeId, Node | RawNode] = {
            n.id: (n.type, n.provenance) if isinstance(n, SimpleNode) else n for n in nodes
        }
        edge_values: dict[EdgeKey, Edge | RawEdge] = {
            (e.source, e.type, e.target): e if isinstance(e, Edge) else e.provenance for e in edges
        }
        return cls._bulk(node_values, edge_values, metadata)

    # ------------------------------------------------------------------ materialization

    def _node(self, node_id: NodeId) -> Node | None:
        value = self._nodes.get(node_id)
        return self._materialized(node_id, value) if isinstance(value, tuple) else value

    def _materialized(self, node_id: NodeId, raw: RawNode) -> Node:
        kind, provenance = raw
        node = Node(id=node_id, type=kind, name=node_id, provenance=provenance)
        self._nodes[node_id] = node
        return node

    def _edge(self, key: EdgeKey) -> Edge | None:
        value = self._edges.get(key)
        if value is None or isinstance(value, Edge):
            return value
        edge = Edge(source=key[0], type=key[1], target=key[2], provenance=value)
        self._edges[key] = edge
        return edge

    def _node_type(self, value: Node | RawNode) -> str:
        return value.type if isinstance(value, Node) else value[0]

    def _key_of(self, eid: EdgeId) -> EdgeKey | None:
        if self._edge_ids is None:
            self._edge_ids = {bulk_edge_id(*key): key for key in self._edges}
        return self._edge_ids.get(eid)

    # ------------------------------------------------------------------ write primitives (undo-logged)

    def _log(self, kind: str, key: Any, old: Any) -> None:
        if self._undo is not None:
            self._undo.append((kind, key, old))

    def _node_keys(self, node_id: NodeId, value: Node | RawNode | None) -> tuple[set[str], set[str]]:
        """(name keys, source ids) a node value is indexed under (none for None)."""
        if value is None:
            return set(), set()
        if isinstance(value, Node):
            return {name_key(n) for n in (value.name, *value.aliases)}, source_ids(value)
        return {name_key(node_id)}, {p.source_id for p in value[1]}

    def _reindex_node(self, node_id: NodeId, old: Node | RawNode | None, new: Node | RawNode | None) -> None:
        """Move ``node_id``'s name and source index entries from value ``old`` to ``new`` (None: absent),
        touching only the keys that differ: a hub rewritten per mention keeps its many sources. When
        ``new`` is ``old`` merged with something, only the sources the merge added are visited."""
        if isinstance(old, Node) and isinstance(new, Node):
            grown = grown_sources(old, new)
            if grown is not None:
                old_names = {name_key(n) for n in (old.name, *old.aliases)}
                new_names = {name_key(n) for n in (new.name, *new.aliases)}
                _index_keys(self._names, old_names - new_names, node_id, add=False)
                _index_keys(self._names, new_names - old_names, node_id, add=True)
                _index_keys(self._node_sources, grown, node_id, add=True)
                return
        old_names, old_sources = self._node_keys(node_id, old)
        new_names, new_sources = self._node_keys(node_id, new)
        _index_keys(self._names, old_names - new_names, node_id, add=False)
        _index_keys(self._names, new_names - old_names, node_id, add=True)
        _index_keys(self._node_sources, old_sources - new_sources, node_id, add=False)
        _index_keys(self._node_sources, new_sources - old_sources, node_id, add=True)

    def _put_node(self, node_id: NodeId, value: Node | RawNode) -> None:
        old = self._nodes.get(node_id, _MISSING)
        self._log("node", node_id, old)
        self._node_types = None
        self._nodes[node_id] = value
        self._reindex_node(node_id, None if old is _MISSING else old, value)

    def _drop_node(self, node_id: NodeId) -> None:
        old = self._nodes.pop(node_id)
        self._log("node", node_id, old)
        self._node_types = None
        self._reindex_node(node_id, old, None)

    def _edge_sources_of(self, value: Edge | RawEdge | None) -> set[str]:
        if value is None:
            return set()
        return source_ids(value) if isinstance(value, Edge) else {p.source_id for p in value}

    def _reindex_edge(self, key: EdgeKey, old: Edge | RawEdge | None, new: Edge | RawEdge | None) -> None:
        """Move ``key``'s source index entries from value ``old`` to ``new`` (None: absent), by difference
        (of what a merge added, when ``new`` is ``old`` merged with something)."""
        if isinstance(old, Edge) and isinstance(new, Edge):
            grown = grown_sources(old, new)
            if grown is not None:
                _index_keys(self._edge_sources, grown, key, add=True)
                return
        old_sources, new_sources = self._edge_sources_of(old), self._edge_sources_of(new)
        _index_keys(self._edge_sources, old_sources - new_sources, key, add=False)
        _index_keys(self._edge_sources, new_sources - old_sources, key, add=True)

    def _put_edge(self, key: EdgeKey, value: Edge | RawEdge) -> None:
        old = self._edges.get(key, _MISSING)
        self._log("edge", key, old)
        source, relation, target = key
        if old is _MISSING:
            self._grouped = None
            self._out.setdefault(source, []).append(Adjacent(relation, target, "out"))
            self._in.setdefault(target, []).append(Adjacent(relation, source, "in"))
            if self._edge_ids is not None:
                self._edge_ids[bulk_edge_id(*key)] = key
        self._edges[key] = value
        self._reindex_edge(key, None if old is _MISSING else old, value)

    def _drop_edge(self, key: EdgeKey) -> None:
        old = self._edges.pop(key)
        self._log("edge", key, old)
        source, relation, target = key
        self._grouped = None
        self._out[source].remove(Adjacent(relation, target, "out"))
        self._in[target].remove(Adjacent(relation, source, "in"))
        if self._edge_ids is not None:
            del self._edge_ids[bulk_edge_id(*key)]
        self._reindex_edge(key, old, None)

    def _put_metadata(self, key: str, value: str | None) -> None:
        self._log("meta", key, self._metadata.get(key, _MISSING))
        if value is None:
            self._metadata.pop(key, None)
        else:
            self._metadata[key] = value

    def _undo_entry(self, kind: str, key: Any, old: Any) -> None:
        if kind == "node":
            if old is _MISSING:
                self._drop_node(key)
            else:
                self._put_node(key, old)
        elif kind == "edge":
            if old is _MISSING:
                self._drop_edge(key)
            else:
                self._put_edge(key, old)
        else:
            self._put_metadata(key, None if old is _MISSING else old)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[MemoryGraphStore]:
        """Writes inside are undone if the block raises (nested blocks roll back to their own start)."""
        outer = self._undo is None
        if outer:
            self._undo = []
        log = self._undo
        assert log is not None
        mark = len(log)
        try:
            yield self
        except BaseException:
            entries = log[mark:]
            del log[mark:]
            self._undo = None
            for entry in reversed(entries):
                self._undo_entry(*entry)
            self._undo = None if outer else log
            raise
        if outer:
            self._undo = None

    # ------------------------------------------------------------------ GraphStore: writes

    def _check_endpoints(self, edge: Edge) -> None:
        missing = [n for n in (edge.source, edge.target) if n not in self._nodes]
        if missing:
            raise InputError(f"edge {edge.source} -{edge.type}-> {edge.target}: unknown node(s) {missing}")

    async def upsert_node(self, node: Node) -> None:
        """Insert or replace the node with this id."""
        check_node(node)
        self._put_node(node.id, node)

    async def upsert_edge(self, edge: Edge) -> None:
        """Insert or replace the edge with this id; both endpoints must exist."""
        check_edge(edge)
        self._check_endpoints(edge)
        self._put_edge((edge.source, edge.type, edge.target), edge)

    async def delete_node(self, node_id: NodeId) -> None:
        """Delete the node and its incident edges (no-op when absent)."""
        if node_id not in self._nodes:
            return
        for key in self._incident_keys(node_id):
            self._drop_edge(key)
        self._drop_node(node_id)

    async def delete_edge(self, edge_id: EdgeId) -> None:
        key = self._key_of(edge_id)
        if key is not None:
            self._drop_edge(key)

    async def merge_nodes(self, keep: NodeId, absorb: NodeId) -> Node:
        """Fold ``absorb`` into ``keep``: rewire its edges, merge data, delete it."""
        if keep == absorb:
            raise InputError(f"cannot merge node {keep!r} into itself")
        kept, absorbed = self._node(keep), self._node(absorb)
        for node_id, node in ((keep, kept), (absorb, absorbed)):
            if node is None:
                raise InputError(f"cannot merge: unknown node {node_id!r}")
        assert kept is not None and absorbed is not None
        async with self.transaction():
            for key in self._incident_keys(absorb):
                edge = self._edge(key)
                assert edge is not None
                self._drop_edge(key)
                moved = rewired(edge, absorb, keep)
                new_key = (moved.source, moved.type, moved.target)
                existing = self._edge(new_key)
                self._put_edge(new_key, moved if existing is None else merge_edge_data(existing, moved))
            merged = merge_node_data(kept, absorbed)
            self._drop_node(absorb)
            self._put_node(keep, merged)
        return merged

    async def set_metadata(self, key: str, value: str | None) -> None:
        """Set a metadata string; ``None`` deletes the key."""
        check_metadata(key, value)
        self._put_metadata(key, value)

    async def clear(self) -> None:
        """Remove every node, edge and metadata key (undoable inside a transaction)."""
        if self._undo is None:
            self.__init__()  # type: ignore[misc]
            return
        for key in list(self._edges):
            self._drop_edge(key)
        for node_id in list(self._nodes):
            self._drop_node(node_id)
        for meta in list(self._metadata):
            self._put_metadata(meta, None)

    async def close(self) -> None:
        """Nothing to release."""

    # ------------------------------------------------------------------ GraphStore: reads

    def _incident_keys(self, node_id: NodeId) -> list[EdgeKey]:
        keys = [(node_id, a[0], a[1]) for a in self._out.get(node_id, ())]
        keys += [(a[1], a[0], node_id) for a in self._in.get(node_id, ()) if a[1] != node_id]
        return keys

    async def get_node(self, node_id: NodeId) -> Node | None:
        return self._node(node_id)

    async def get_nodes(self, ids: Sequence[NodeId]) -> dict[NodeId, Node]:
        """The nodes that exist among ``ids``."""
        nodes = self._nodes
        found: dict[NodeId, Node] = {}
        for node_id in ids:  # inline of _node: answer sets of thousands of nodes come through here
            value = nodes.get(node_id)
            if value is not None:
                found[node_id] = self._materialized(node_id, value) if isinstance(value, tuple) else value
        return found

    def node_names(self, ids: Sequence[NodeId]) -> dict[NodeId, str]:
        """The names of the nodes that exist among ``ids``, without building models (raw: the id)."""
        nodes = self._nodes
        return {i: i if isinstance(v, tuple) else v.name for i in ids if (v := nodes.get(i)) is not None}

    def node_labels(self) -> Iterator[tuple[NodeId, str, tuple[str, ...]]]:
        """Every node's (id, name, aliases), ordered by id, without building models (raw: the id, none)."""
        nodes = self._nodes
        for node_id in sorted(nodes):
            value = nodes.get(node_id)
            if value is not None:
                yield (
                    (node_id, node_id, ())
                    if isinstance(value, tuple)
                    else (node_id, value.name, value.aliases)
                )

    def edge_between(self, source: NodeId, type: str, target: NodeId) -> Edge | None:
        """The edge ``source --type--> target``, or None (no edge-id index needed)."""
        return self._edge((source, type, target))

    async def get_edge(self, edge_id: EdgeId) -> Edge | None:
        key = self._key_of(edge_id)
        return None if key is None else self._edge(key)

    def adjacent_sync(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Adjacent]:
        """:meth:`adjacent` without the coroutine, for callers that already run synchronously."""
        check_direction(direction)
        out = self._out.get(node_id, ()) if direction != "in" else ()
        inc = self._in.get(node_id, ()) if direction != "out" else ()
        if edge_types is None:
            return [*out, *inc]
        types = edge_types if isinstance(edge_types, set | frozenset) else set(edge_types)
        return [a for a in out if a[0] in types] + [a for a in inc if a[0] in types]

    async def adjacent(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Adjacent]:
        """(relation, neighbor, direction) tuples in insertion order, outgoing first."""
        return self.adjacent_sync(node_id, direction=direction, edge_types=edge_types)

    def neighbor_groups(
        self,
        nodes: Sequence[NodeId],
        *,
        direction: Direction = "both",
        edge_types: Collection[str] | None = None,
    ) -> NeighborGroups:
        """The distinct neighbors of ``nodes`` per (relation, direction), in first-appearance order
        (see :func:`graphwalk_core.stores.base.neighbor_groups`), from an index of the whole graph
        built on first use and rebuilt after any edge write."""
        check_direction(direction)
        if self._grouped is None:
            from graphwalk_core.stores.grouped import GroupedAdjacencyIndex

            self._grouped = GroupedAdjacencyIndex(self._out, self._in)
        return self._grouped.groups(nodes, direction, edge_types)

    async def neighbors(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Neighbor]:
        """Like :meth:`adjacent` with the full edge and neighbor node."""
        result = []
        for relation, other, side in self.adjacent_sync(node_id, direction=direction, edge_types=edge_types):
            key = (node_id, relation, other) if side == "out" else (other, relation, node_id)
            edge, node = self._edge(key), self._node(other)
            assert edge is not None and node is not None
            result.append(Neighbor(edge, node, side))
        return result

    async def degree(self, node_id: NodeId, *, direction: Direction = "both") -> int:
        check_direction(direction)
        out = len(self._out.get(node_id, ())) if direction != "in" else 0
        return out + (len(self._in.get(node_id, ())) if direction != "out" else 0)

    async def find_nodes(
        self, *, name: str | None = None, type: str | None = None, limit: int | None = None
    ) -> list[Node]:
        """Nodes whose name or an alias equals ``name`` (case-insensitive), filtered by type, by id."""
        ids: Iterable[NodeId] = self._names.get(name_key(name), ()) if name is not None else self._nodes
        if type is not None:
            ids = [i for i in ids if self._node_type(self._nodes[i]) == type]
        chosen = sorted(ids)[:limit] if limit is not None else sorted(ids)
        return [n for n in map(self._node, chosen) if n is not None]

    def triples(self) -> list[EdgeKey]:
        """Every edge as (source, type, target), in insertion order, without building models."""
        return list(self._edges)

    def _iter_nodes_sync(self) -> Iterator[Node]:
        for node_id in sorted(self._nodes):
            node = self._node(node_id)
            if node is not None:
                yield node

    def _iter_edges_sync(self) -> Iterator[Edge]:
        for key in sorted(self._edges):
            edge = self._edge(key)
            if edge is not None:
                yield edge

    async def iter_nodes(self, *, batch_size: int = 1000) -> AsyncIterator[Node]:
        """Every node, ordered by id."""
        for node in self._iter_nodes_sync():
            yield node

    async def iter_edges(self, *, batch_size: int = 1000) -> AsyncIterator[Edge]:
        """Every edge, ordered by (source, type, target)."""
        for edge in self._iter_edges_sync():
            yield edge

    async def elements_from_source(self, source_id: str) -> tuple[list[Node], list[Edge]]:
        """Nodes (by id) and edges (by source, type, target) citing ``source_id`` anywhere."""
        nodes = [self._node(n) for n in sorted(self._node_sources.get(source_id, ()))]
        edges = [self._edge(k) for k in sorted(self._edge_sources.get(source_id, ()))]
        return [n for n in nodes if n is not None], [e for e in edges if e is not None]

    async def counts(self) -> tuple[int, int]:
        return len(self._nodes), len(self._edges)

    async def node_types(self) -> list[str]:
        """The distinct node types, sorted (kept until a node write)."""
        if self._node_types is None:
            self._node_types = sorted({self._node_type(value) for value in self._nodes.values()})
        return list(self._node_types)

    async def get_metadata(self, key: str) -> str | None:
        return self._metadata.get(key)

    async def metadata_keys(self, prefix: str = "") -> list[str]:
        return sorted(k for k in self._metadata if k.startswith(prefix))


def _index_keys(index: dict[str, set[Any]], keys: Iterable[str], member: Any, add: bool) -> None:
    """Add ``member`` to (or remove it from) the members of each of ``keys``; a key left with no
    members is dropped."""
    for key in keys:
        if add:
            members = index.get(key)
            if members is None:
                index[key] = {member}
            else:
                members.add(member)
        else:
            members = index.get(key)
            if members is not None:
                members.discard(member)
                if not members:
                    del index[key]
