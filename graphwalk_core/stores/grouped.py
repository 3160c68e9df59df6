"""Grouped adjacency as flat arrays, so merging the neighbors of thousands of nodes is array work.

Every distinct (group key, neighbor) pair of the graph gets an integer *tag*, where a group key is
(relation, direction). A node's tags list its groups in adjacency order (outgoing first), each group's
neighbors in adjacency order. The union over a node set is then: gather the nodes' tags, keep each
tag's first occurrence, split them by group key in order of first appearance.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import chain, pairwise, repeat
from operator import itemgetter

import numpy as np

from graphwalk_core.model import NodeId
from graphwalk_core.stores.base import Adjacent, Direction, GroupKey, NeighborGroups

_UNSEEN = np.iinfo(np.int64).max


class GroupedAdjacencyIndex:
    """A snapshot of a graph's adjacency, grouped by (relation, direction), for ``neighbor_groups``.

    Build it from outgoing and incoming :class:`Adjacent` lists (each (relation, neighbor) once per
    list) and drop it when they change. Not thread-safe: merges share one scratch array.
    """

    def __init__(
        self, out: Mapping[NodeId, Sequence[Adjacent]], inc: Mapping[NodeId, Sequence[Adjacent]]
    ) -> None:
        nodes = list(dict.fromkeys(chain(out, inc)))
        self._handles = dict(zip(nodes, range(len(nodes)), strict=True))
        self._none = len(nodes)  # the handle of any other node: an empty range
        relations, block, key, neighbor = _entries(self._handles, out, inc)
        self._keys: list[GroupKey] = [(relation, side) for relation in relations for side in ("out", "in")]
        order = _index_order(block, key, len(self._keys))
        pairs, tags = np.unique(key * len(nodes) + neighbor, return_inverse=True)  # (key, neighbor) -> tag
        self._tags = tags[order]
        # node h's tags are _tags[_bounds[h]:_bounds[h + 1]]
        self._bounds = np.searchsorted(block[order], 2 * np.arange(len(nodes) + 2))
        self._tag_key = (pairs // max(len(nodes), 1)).astype(np.min_scalar_type(len(self._keys)))
        self._tag_node = np.array(nodes, dtype=object)[pairs % max(len(nodes), 1)]
        self._first = np.full(len(pairs), _UNSEEN, dtype=np.int64)
        self._single: dict[NodeId, NeighborGroups] = {}

    def groups(
        self, nodes: Sequence[NodeId], direction: Direction, edge_types: Collection[str] | None
    ) -> NeighborGroups:
        """The distinct neighbors of ``nodes`` per group key, keys and neighbors in first-appearance order."""
        types = None if edge_types is None else frozenset(edge_types)
        if len(nodes) == 1:  # cached: copied, callers may change the lists they get
            cached = self._node_groups(nodes[0])
            return {
                key: list(neighbors) for key, neighbors in cached.items() if _wanted(key, direction, types)
            }
        merged = self._split(self._first_occurrences(self._gather(nodes)))
        return {key: neighbors for key, neighbors in merged.items() if _wanted(key, direction, types)}

    def _node_groups(self, node: NodeId) -> NeighborGroups:
        """One node's groups (cached: hubs are asked for again and again)."""
        groups = self._single.get(node)
        if groups is None:
            handle = self._handles.get(node, self._none)
            tags = self._tags[self._bounds[handle] : self._bounds[handle + 1]]
            groups = self._single[node] = self._split(tags)
        return groups

    def _split(self, tags: np.ndarray) -> NeighborGroups:
        """Distinct ``tags`` as groups: keys in order of first appearance, neighbors in tag order."""
        if not len(tags):
            return {}
        order = np.argsort(self._tag_key[tags], kind="stable")  # a radix sort: small unsigned ints
        tags = tags[order]
        keys = self._tag_key[tags]
        names = self._tag_node[tags].tolist()
        bounds = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist(), len(names)]
        runs = sorted(pairwise(bounds), key=lambda run: order[run[0]])  # by the key's first appearance
        return {self._keys[keys[start]]: names[start:end] for start, end in runs}

    def _gather(self, nodes: Sequence[NodeId]) -> np.ndarray:
        """The nodes' tags, node after node."""
        handles = self._handles.get
        found = np.fromiter(map(handles, nodes, repeat(self._none)), dtype=np.int64, count=len(nodes))
        starts = self._bounds[found]
        lengths = self._bounds[found + 1] - starts
        offsets = np.cumsum(lengths) - lengths  # where each node's tags go in the result
        return self._tags[np.repeat(starts - offsets, lengths) + np.arange(lengths.sum())]

    def _first_occurrences(self, tags: np.ndarray) -> np.ndarray:
        """``tags`` without repeats, each kept where it first occurs."""
        positions = np.arange(len(tags))
        np.minimum.at(self._first, tags, positions)
        keep = self._first[tags] == positions
        self._first[tags] = _UNSEEN
        return tags[keep]


def _wanted(key: GroupKey, direction: Direction, types: frozenset[str] | None) -> bool:
    return direction in ("both", key[1]) and (types is None or key[0] in types)


def _entries(
    handles: Mapping[NodeId, int],
    out: Mapping[NodeId, Sequence[Adjacent]],
    inc: Mapping[NodeId, Sequence[Adjacent]],
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Every adjacency entry, list after list: the distinct relations, then per entry its block
    (2 * node handle + side), its group key (2 * relation id + side) and its neighbor's handle."""
    block = np.concatenate([_blocks(handles, adjacency, side) for side, adjacency in enumerate((out, inc))])
    entries = list(chain.from_iterable(chain(out.values(), inc.values())))
    relations = list(map(itemgetter(0), entries))
    relation_ids = {relation: i for i, relation in enumerate(dict.fromkeys(relations))}
    key = 2 * _ids(relation_ids, relations) + block % 2
    return list(relation_ids), block, key, _ids(handles, list(map(itemgetter(1), entries)))


def _blocks(
    handles: Mapping[NodeId, int], adjacency: Mapping[NodeId, Sequence[Adjacent]], side: int
) -> np.ndarray:
    """The block of each entry of ``adjacency``'s lists, in list order."""
    sizes = np.fromiter(map(len, adjacency.values()), dtype=np.int64, count=len(adjacency))
    return np.repeat(2 * _ids(handles, list(adjacency)) + side, sizes)


def _index_order(block: np.ndarray, key: np.ndarray, n_keys: int) -> np.ndarray:
    """The entries in index order: by block, then group (in order of first appearance), then position."""
    _, first, group = np.unique(block * n_keys + key, return_index=True, return_inverse=True)
    return np.lexsort((np.arange(len(block)), first[group], block))


def _ids(ids: Mapping[str, int], values: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(ids.__getitem__, values), dtype=np.int64, count=len(values))
