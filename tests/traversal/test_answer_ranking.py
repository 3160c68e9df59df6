"""Relation-mode answer sets are ranked by witness paths, so hits@1 reads a real ranking."""

from __future__ import annotations

from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.traversal.answers import build_answers
from graphwalk_core.traversal.scoring import Beam, HopRef

TRIPLES = [
    ("A", "starred_actors", "x1"),
    ("A", "starred_actors", "x2"),
    ("A", "starred_actors", "x3"),
    ("C", "starred_actors", "x1"),
    ("B", "starred_actors", "x2"),
    ("B", "starred_actors", "x3"),
]


async def test_nodes_reached_by_more_paths_rank_first() -> None:
    store = MemoryGraphStore.from_triples(TRIPLES, source_id="t")
    beam = Beam(
        id=0,
        parent=None,
        start=("A",),
        frontier=["C", "B"],  # reached order: C (via x1) first
        hops=[HopRef("starred_actors", "out"), HopRef("starred_actors", "in")],
        trail=[["A"], ["x1", "x2", "x3"]],
        n_decisions=2,
        n_choices=2,
        finished=True,
        terminated_by="stop",
    )
    (answer,) = await build_answers(
        store, [beam], alpha=1.0, floor=1e-6, by_votes=False, relation_mode=True, max_witnesses=5
    )
    assert answer.node_ids == ["B", "C"]
    assert answer.witness_paths == [2, 1]
    assert [h.target for h in answer.witness] == ["x2", "B"]
