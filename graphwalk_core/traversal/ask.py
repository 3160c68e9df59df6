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
from graphwalk_core.traversal.entry import EntryResolver, NameEntryResolver, NameIndex


@dataclass(frozen=True)
class Asked:
    """A walk's result (None when the question names no graph node) and the start it walked from."""

    result: WalkResult | None
    start: list[NodeId]


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` (did you mean: A, B, C?)`` naming up to three of ``names`` close to ``name``; empty if none is."""
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f" (did you mean: {', '.join(close)}?)" if close else ""


async def check_start(store: GraphStore, start: Sequence[NodeId]) -> None:
    """Raise InputError naming each unknown start node, with close names from the graph."""
    found = await store.get_nodes(list(start))
    missing = [s for s in start if s not in found]
    if not missing:
        return
    index = await NameIndex.build(store)
    names = list(index.names.values())
    hints = [f"{node!r}{did_you_mean(node, names)}" for node in missing]
    raise InputError(f"start node not in the graph: {'; '.join(hints)}")


async def answer(
    graph: Traverser,
    question: str,
    start: Sequence[NodeId] | None = None,
    *,
    resolver: EntryResolver | None = None,
) -> Asked:
    """Walk ``graph`` (a Traverser over the store) to answer ``question``.

    ``start`` given: those nodes (an unknown one is an InputError with close names). Else the
    question's node mentions, found by ``resolver`` (default: a NameEntryResolver over the store with
    the traverser's embedder); none found gives ``Asked(None, [])``.
    """
    if not question.strip():
        raise InputError("the question is empty")
    if start:
        nodes = list(start)
        await check_start(graph.store, nodes)
    else:
        if resolver is None:
            resolver = await NameEntryResolver.from_store(graph.store, embedder=graph.embedder)
        nodes = list(await resolver.resolve(question))
        if not nodes:
            return Asked(None, [])
    return Asked(await graph.walk(question, nodes), nodes)
