"""The GraphStore protocol every store implements (async, as the traversal engine awaits it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from graphwalk_core.model import Edge, EdgeId, Node, NodeId

Direction = Literal["out", "in", "both"]


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
