"""``answer``: resolve a question's start nodes (unless given), then walk. The one resolve-then-walk
used by ``graphwalk query``, the eval systems and the assets."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from graphwalk_core.errors import InputError
from graphwalk_core.model import NodeId
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.traversal.answers import WalkResult
from graphwalk_core.traversal.engine import Traverser
from graphwalk_core.traversal.entry import (
    EntryCandidate,
    EntryResolver,
    NameEntryResolver,
    NameIndex,
    exactly_named,
)

#: Start names (not node ids) looked up one by one; more build the graph's name index.
NAME_LOOKUPS = 8


@dataclass(frozen=True)
class Asked:
    """A walk's result (None when the question names no graph node) and the start it walked from."""

    result: WalkResult | None
    start: list[NodeId]


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` (did you mean: A, B, C?)`` naming up to three of ``names`` close to ``name``; empty if none is."""
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f" (did you mean: {', '.join(close)}?)" if close else ""


async def named_starts(store: GraphStore, starts: Sequence[str]) -> tuple[dict[str, list[NodeId]], list[str]]:
    """Each of ``starts`` -> the nodes it names: itself when it is a node id of ``store``, else the nodes of
    that exact name or alias, in id order (an ingested graph's ids are hashes), [] when neither; and the
    graph's node names for close-name hints (empty when every start names a node). Up to
    :data:`NAME_LOOKUPS` names are looked up one by one, without an index of the whole graph."""
    unique = sorted(set(starts))
    found = await store.get_nodes(unique)
    missing = [s for s in unique if s not in found]
    if len(missing) <= NAME_LOOKUPS:
        named = {s: [n.id for n in await exactly_named(store, s)] for s in missing}
        if all(named.values()):
            return {s: named.get(s, [s]) for s in unique}, []
    index = await NameIndex.build(store)
    named = {s: [s] if s in found else sorted(set(index.by_exact.get(s, ()))) for s in unique}
    return named, sorted(set(index.names.values()))


async def start_nodes(store: GraphStore, start: Sequence[str]) -> list[NodeId]:
    """The nodes ``start`` names (ids, or exact names or aliases: :func:`named_starts`); an InputError
    naming each start that is neither, with close names from the graph."""
    named, names = await named_starts(store, start)
    missing = [s for s in start if not named[s]]
    if missing:
        hints = [f"{node!r}{did_you_mean(node, names)}" for node in missing]
        raise InputError(f"start node not in the graph: {'; '.join(hints)}")
    return list(dict.fromkeys(node for s in start for node in named[s]))


async def answer(
    graph: Traverser,
    question: str,
    start: Sequence[NodeId] | None = None,
    *,
    resolver: EntryResolver | None = None,
) -> Asked:
    """Walk ``graph`` (a Traverser over the store) to answer ``question``.

    ``start`` given: the nodes it names, by id or by exact name or alias (one that names none is an
    InputError with close names). Else the question's node mentions, found by ``resolver`` (default: a
    NameEntryResolver over the store with the traverser's embedder, its name index built only when
    the question is not bracketed), recorded in the trace's ``links``;
    none found gives ``Asked(None, [])``.
    """
    if not question.strip():
        raise InputError("the question is empty")
    links: list[EntryCandidate] = []
    if start:
        nodes = await start_nodes(graph.store, start)
    else:
        if resolver is None:
            resolver = NameEntryResolver(graph.store, embedder=graph.embedder)
        links = await resolver.link(question)
        if not links:
            return Asked(None, [])
        nodes = [link.node_id for link in links]
    result = await graph.walk(question, nodes)
    result.trace.links = links
    return Asked(result, nodes)
