"""The GraphStore protocol every store implements (async, as the traversal engine awaits it)."""

from __future__ import annotations

import heapq
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, nullcontext
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, TypeGuard, TypeVar, runtime_checkable

from graphwalk_core.model import Edge, EdgeId, Node, NodeId, edge_id

Direction = Literal["out", "in", "both"]
#: (relation, direction): a group of neighbors, as in :class:`Adjacent`.
GroupKey = tuple[str, str]
#: Distinct neighbor ids per (relation, direction), in first-appearance order.
NeighborGroups = dict[GroupKey, list[NodeId]]


class Adjacent(NamedTuple):
    """A cheap adjacency entry (no model objects), for hot traversal loops over hubs.

    ``direction`` is ``"out"`` when the stored edge is ``node --relation--> neighbor`` and
    ``"in"`` when it is ``neighbor --relation--> node``.
    """

    relation: str
    neighbor: NodeId
    direction: Literal["out", "in"]


class Neighbor(NamedTuple):
    """A neighbor with its full edge and node."""

    edge: Edge
    node: Node
    direction: Literal["out", "in"]


@runtime_checkable
class GraphStore(Protocol):
    """Storage of nodes, edges, their provenance, and string metadata (the ledger lives there)."""

    async def upsert_node(self, node: Node) -> None:
        """Insert or replace the node with this id (no merging: see ``graphwalk_core.model.merge``)."""

    async def upsert_edge(self, edge: Edge) -> None:
        """Insert or replace the edge with this id; both endpoints must exist."""

    async def get_node(self, node_id: NodeId) -> Node | None: ...

    async def get_nodes(self, ids: Sequence[NodeId]) -> dict[NodeId, Node]:
        """The nodes that exist among ``ids``."""

    async def get_edge(self, edge_id: EdgeId) -> Edge | None: ...

    async def neighbors(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Neighbor]: ...

    async def adjacent(
        self, node_id: NodeId, *, direction: Direction = "both", edge_types: Collection[str] | None = None
    ) -> list[Adjacent]:
        """Like ``neighbors`` but only (relation, neighbor id, direction): the fast path for hubs."""

    async def degree(self, node_id: NodeId, *, direction: Direction = "both") -> int: ...

    async def find_nodes(
        self, *, name: str | None = None, type: str | None = None, limit: int | None = None
    ) -> list[Node]:
        """Nodes whose name or an alias equals ``name`` (case-insensitive), filtered by type."""

    def iter_nodes(self, *, batch_size: int = 1000) -> AsyncIterator[Node]: ...

    def iter_edges(self, *, batch_size: int = 1000) -> AsyncIterator[Edge]: ...

    async def elements_from_source(self, source_id: str) -> tuple[list[Node], list[Edge]]:
        """Nodes and edges with any provenance (element or attribute) from ``source_id``."""

    async def delete_node(self, node_id: NodeId) -> None:
        """Delete the node and its incident edges."""

    async def delete_edge(self, edge_id: EdgeId) -> None: ...

    async def merge_nodes(self, keep: NodeId, absorb: NodeId) -> Node:
        """Fold ``absorb`` into ``keep``: rewire edges, union provenance, record conflicts, add alias."""

    async def counts(self) -> tuple[int, int]:
        """(number of nodes, number of edges)."""

    async def node_types(self) -> list[str]:
        """The distinct node types, sorted."""

    async def get_metadata(self, key: str) -> str | None: ...

    async def set_metadata(self, key: str, value: str | None) -> None:
        """Set a metadata string; ``None`` deletes the key."""

    async def metadata_keys(self, prefix: str = "") -> list[str]: ...

    def transaction(self) -> AbstractAsyncContextManager[Any]:
        """All writes inside commit together or not at all (durable stores); a no-op scope in memory."""

    async def clear(self) -> None: ...

    async def close(self) -> None: ...


# Optional store capabilities: fast paths a store may offer beside the protocol. Each comes with a
# function that uses it when the store offers it and the protocol otherwise; the contract tests run
# those functions against every store.

CapabilityT = TypeVar("CapabilityT")
K = TypeVar("K")
V = TypeVar("V")


def offers(store: object, capability: type[CapabilityT]) -> TypeGuard[CapabilityT]:
    """Whether ``store`` offers ``capability`` (a runtime-checkable protocol), checked once per class."""
    return _class_offers(type(store), capability)


@cache
def _class_offers(cls: type, capability: type) -> bool:
    return issubclass(cls, capability)


@runtime_checkable
class GroupedAdjacency(Protocol):
    """Capability: :func:`neighbor_groups` in one synchronous call."""

    def neighbor_groups(
        self,
        nodes: Sequence[NodeId],
        *,
        direction: Direction = "both",
        edge_types: Collection[str] | None = None,
    ) -> NeighborGroups:
        """Exactly what :func:`neighbor_groups` computes from ``adjacent``, without reading it per node."""
        ...


@runtime_checkable
class EdgeLookup(Protocol):
    """Capability: :func:`edge_between` without deriving the edge id."""

    def edge_between(self, source: NodeId, type: str, target: NodeId) -> Edge | None:
        """The edge ``source --type--> target``, or None."""
        ...


@runtime_checkable
class NodeNames(Protocol):
    """Capability: :func:`node_names` without building node models."""

    def node_names(self, ids: Sequence[NodeId]) -> dict[NodeId, str]:
        """The names of the nodes that exist among ``ids``."""
        ...


@runtime_checkable
class NodeLabels(Protocol):
    """Capability: :func:`node_labels` without building node models."""

    def node_labels(self) -> Iterator[tuple[NodeId, str, tuple[str, ...]]]:
        """Every node's (id, name, aliases), ordered by id."""
        ...


@runtime_checkable
class EdgeTriples(Protocol):
    """Capability: :func:`edge_triples` without building edge models."""

    def triples(self) -> list[tuple[NodeId, str, NodeId]]:
        """Every edge as (source, type, target)."""
        ...


@runtime_checkable
class MetadataReads(Protocol):
    """Capability: :func:`get_metadata_many` in a few set-based reads, not one per key."""

    async def get_metadata_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The values of the keys set among ``keys``, in first-appearance order."""
        ...


@runtime_checkable
class Snapshots(Protocol):
    """Capability: reads inside ``snapshot()`` see one committed state, though other processes write
    (a durable store's read transaction); a store without it is read as it is at each call."""

    def snapshot(self) -> AbstractAsyncContextManager[Any]:
        """A context whose reads see one committed state of the store; nothing is written inside."""
        ...


def one_state(store: GraphStore) -> AbstractAsyncContextManager[Any]:
    """A context whose reads of ``store`` see one committed state: its :class:`Snapshots` capability,
    else nothing (the store is read as it is)."""
    return store.snapshot() if offers(store, Snapshots) else nullcontext()


@runtime_checkable
class ParquetExport(Protocol):
    """Capability: :func:`graphwalk_core.stores.parquet.export_parquet` without building every model."""

    def save(self, directory: str | Path) -> Path:
        """Write exactly the tables ``export_parquet`` writes into ``directory``; returns it."""
        ...


@runtime_checkable
class BulkWrites(Protocol):
    """Capability: many elements read and written in set-based statements (durable stores)."""

    async def get_edges(self, ids: Sequence[EdgeId]) -> dict[EdgeId, Edge]:
        """The edges that exist among ``ids``."""
        ...

    async def upsert_many(self, nodes: Iterable[Node] = (), edges: Iterable[Edge] = ()) -> tuple[int, int]:
        """Insert or replace ``nodes``, then ``edges`` (endpoints must exist); how many of each."""
        ...


@runtime_checkable
class Prefetch(Protocol):
    """Capability: the elements a write transaction is about to merge into, read ahead in a few set-based
    statements instead of one read per document (a store that reads by id cheaply has no need of it)."""

    async def prefetch(self, node_ids: Iterable[NodeId], edge_ids: Iterable[EdgeId]) -> None:
        """Inside a transaction: read what the store holds for these ids now, so that the transaction's
        later by-id reads of them are answered from memory; outside one, nothing. Changes no read's result."""
        ...


async def prefetch(store: GraphStore, node_ids: Iterable[NodeId], edge_ids: Iterable[EdgeId]) -> None:
    """:class:`Prefetch` when ``store`` offers it, else nothing (its by-id reads are cheap)."""
    if offers(store, Prefetch):
        await store.prefetch(node_ids, edge_ids)


async def _one_by_one(keys: Sequence[K], get: Callable[[K], Awaitable[V | None]]) -> dict[K, V]:
    """``get`` of each distinct key, in first-appearance order, those it finds (a capability's fallback)."""
    out: dict[K, V] = {}
    for key in dict.fromkeys(keys):
        value = await get(key)
        if value is not None:
            out[key] = value
    return out


async def get_edges(store: GraphStore, ids: Sequence[EdgeId]) -> dict[EdgeId, Edge]:
    """The edges that exist among ``ids``, in first-appearance order."""
    if offers(store, BulkWrites):
        found = await store.get_edges(ids)
        return {i: found[i] for i in dict.fromkeys(ids) if i in found}
    return await _one_by_one(ids, store.get_edge)


async def upsert_many(store: GraphStore, nodes: Sequence[Node] = (), edges: Sequence[Edge] = ()) -> None:
    """Insert or replace ``nodes``, then ``edges``, as ``upsert_node`` / ``upsert_edge`` one by one would."""
    if offers(store, BulkWrites):
        await store.upsert_many(nodes, edges)
        return
    for node in nodes:
        await store.upsert_node(node)
    for edge in edges:
        await store.upsert_edge(edge)


async def get_metadata_many(store: GraphStore, keys: Sequence[str]) -> dict[str, str]:
    """The values of the metadata keys set among ``keys``, in first-appearance order."""
    if offers(store, MetadataReads):
        return await store.get_metadata_many(keys)
    return await _one_by_one(keys, store.get_metadata)


async def node_names(store: GraphStore, ids: Sequence[NodeId]) -> dict[NodeId, str]:
    """The names of the nodes that exist among ``ids``."""
    if offers(store, NodeNames):
        return store.node_names(ids)
    return {node_id: node.name for node_id, node in (await store.get_nodes(ids)).items()}


async def node_labels(store: GraphStore) -> AsyncIterator[tuple[NodeId, str, tuple[str, ...]]]:
    """Every node's (id, name, aliases), ordered by id (a whole-graph name index reads these)."""
    if offers(store, NodeLabels):
        for labels in store.node_labels():
            yield labels
        return
    async for node in store.iter_nodes():
        yield node.id, node.name, tuple(node.aliases)


async def edge_triples(store: GraphStore) -> list[tuple[NodeId, str, NodeId]]:
    """Every edge as (source, type, target), in the store's order (sort them to compare)."""
    if offers(store, EdgeTriples):
        return store.triples()
    return [(e.source, e.type, e.target) async for e in store.iter_edges()]


async def named_triples(store: GraphStore) -> list[tuple[str, str, str]]:
    """Every edge as (source name, relation, target name), sorted: what a MetaQA-style triples file holds
    (an ingested graph's node ids are hashes)."""
    edges = await edge_triples(store)
    names = await node_names(store, sorted({end for s, _, t in edges for end in (s, t)}))
    return sorted((names.get(s, s), relation, names.get(t, t)) for s, relation, t in edges)


async def edge_between(store: GraphStore, source: NodeId, type: str, target: NodeId) -> Edge | None:
    """The edge ``source --type--> target``, or None."""
    if offers(store, EdgeLookup):
        return store.edge_between(source, type, target)
    return await store.get_edge(edge_id(source, type, target))


def group_order(key: GroupKey) -> tuple[bool, str]:
    """The one order of a node's adjacency, whatever store read it (the memory store keeps insertion
    order, the SQL store key order): outgoing before incoming, then by relation; within a group, by
    neighbor (:func:`adjacency_order`). The traversal engine's options and cards both follow it."""
    relation, side = key
    return (side != "out", relation)


def adjacency_order(entry: Adjacent) -> tuple[bool, str, str]:
    """:func:`group_order` for one adjacency entry: its group, then its neighbor."""
    relation, neighbor, side = entry
    return (*group_order((relation, side)), neighbor)


async def first_adjacent(store: GraphStore, node_id: NodeId, limit: int) -> list[Adjacent]:
    """Up to ``limit`` of ``node_id``'s adjacency entries, the same ones from every store: the first in
    :func:`adjacency_order`. For what a caller shows of a node, e.g. a decider's card."""
    if limit <= 0:
        return []
    return heapq.nsmallest(limit, await store.adjacent(node_id), key=adjacency_order)


def group_adjacent(entries: Iterable[Adjacent]) -> NeighborGroups:
    """One node's adjacency as its distinct neighbors per (relation, direction), in entry order."""
    groups: dict[GroupKey, dict[NodeId, None]] = {}
    for relation, neighbor, side in entries:
        group = groups.get((relation, side))
        if group is None:
            group = groups[(relation, side)] = {}
        group[neighbor] = None
    return {key: list(members) for key, members in groups.items()}


def merge_groups(per_node: Sequence[Mapping[GroupKey, Sequence[NodeId]]]) -> NeighborGroups:
    """The union of nodes' groups (each group of distinct neighbors), in first-appearance order."""
    parts: dict[GroupKey, list[Sequence[NodeId]]] = {}
    for groups in per_node:
        for key, neighbors in groups.items():
            found = parts.get(key)
            if found is None:
                parts[key] = [neighbors]
            else:
                found.append(neighbors)
    return {
        key: list(dict.fromkeys(chain.from_iterable(found)) if len(found) > 1 else found[0])
        for key, found in parts.items()
    }


async def neighbor_groups(
    store: GraphStore,
    nodes: Sequence[NodeId],
    *,
    direction: Direction = "both",
    edge_types: Collection[str] | None = None,
) -> NeighborGroups:
    """The distinct neighbors of ``nodes`` per (relation, direction), as ``adjacent`` gives them.

    Keys come in order of first appearance (node order, then each node's ``adjacent`` order), and so
    do each key's neighbors. Stores offering :class:`GroupedAdjacency` answer in one call.
    """
    if offers(store, GroupedAdjacency):
        return store.neighbor_groups(nodes, direction=direction, edge_types=edge_types)
    adjacency = [await store.adjacent(n, direction=direction, edge_types=edge_types) for n in nodes]
    return merge_groups([group_adjacent(entries) for entries in adjacency])
