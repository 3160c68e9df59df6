"""Walk results: answers with witness paths (edge ids, relation, direction and edge sources)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from graphwalk_core.model import EdgeId, NodeId, edge_id
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.traversal.scoring import Beam, HopRef, Termination, rank_walks
from graphwalk_core.traversal.trace import Trace

Status = Literal["ok", "aborted", "error"]


class Hop(BaseModel):
    """One hop of a witness path, in walk order. ``direction="in"`` means the stored edge points back."""

    source: NodeId
    target: NodeId
    relation: str
    direction: Literal["out", "in"]
    edge_id: EdgeId
    source_ids: list[str] = Field(default_factory=list)


class Answer(BaseModel):
    """One answer: a node (entity mode) or node set (relation mode) with the walk that reached it."""

    node_ids: list[NodeId]
    names: list[str]
    score: float
    votes: int = 1
    n_choices: int = 0
    min_confidence: float | None = None
    terminated_by: Termination
    relation_path: list[str] = Field(default_factory=list, description="relation:direction per hop")
    witness: list[Hop] = Field(default_factory=list, description="path to the first node")
    witnesses: dict[NodeId, list[Hop]] = Field(default_factory=dict, description="relation mode: per node")


class WalkResult(BaseModel):
    status: Status
    question: str
    start: list[NodeId]
    answers: list[Answer] = Field(default_factory=list)
    terminated_by: Termination | None = None
    abort_reason: str | None = None
    error: str | None = None
    decider: str
    trace: Trace

    @property
    def top_ids(self) -> list[NodeId]:
        """The best answer's node ids (empty without an answer)."""
        return self.answers[0].node_ids if self.answers else []


def _hop_edge(source: NodeId, relation: str, direction: str, target: NodeId) -> EdgeId:
    return edge_id(source, relation, target) if direction == "out" else edge_id(target, relation, source)


def _witness_refs(beam: Beam, node: NodeId) -> list[HopRef]:
    """Relation mode: one concrete path to ``node`` through the beam's back-pointer layers."""
    refs: list[HopRef] = []
    current = node
    for hop, layer in zip(reversed(beam.hops), reversed(beam.layers), strict=True):
        prev = layer[current]
        refs.append(HopRef(hop.relation, hop.direction, prev, current))
        current = prev
    return refs[::-1]


async def _hops(store: GraphStore, refs: Sequence[HopRef]) -> list[Hop]:
    hops = []
    for ref in refs:
        assert ref.source is not None and ref.target is not None
        eid = _hop_edge(ref.source, ref.relation, ref.direction, ref.target)
        edge = await store.get_edge(eid)
        sources = sorted({p.source_id for p in edge.provenance}) if edge is not None else []
        hops.append(Hop(source=ref.source, target=ref.target, relation=ref.relation,
                        direction=ref.direction, edge_id=eid, source_ids=sources))  # fmt: skip
    return hops


async def build_answers(
    store: GraphStore,
    beams: Sequence[Beam],
    *,
    alpha: float,
    floor: float,
    by_votes: bool,
    relation_mode: bool,
    max_witnesses: int,
) -> list[Answer]:
    """Group walks by the node set they reached; rank by votes (sampling) or by the best walk."""
    groups: dict[frozenset[NodeId], list[Beam]] = {}
    for beam in rank_walks(beams, alpha, floor):
        if beam.frontier:
            groups.setdefault(frozenset(beam.frontier), []).append(beam)
    ordered = list(groups.values())
    if by_votes:
        ordered.sort(key=lambda group: -len(group))  # stable: ties keep walk rank
    names = await store.get_nodes(sorted({n for g in ordered for n in g[0].frontier}))
    answers = []
    for group in ordered:
        best = group[0]
        if relation_mode:
            witnesses = {n: await _hops(store, _witness_refs(best, n)) for n in best.frontier[:max_witnesses]}
            witness = witnesses[best.frontier[0]] if best.frontier else []
        else:
            witness, witnesses = await _hops(store, best.hops), {}
        answers.append(
            Answer(
                node_ids=list(best.frontier),
                names=[names[n].name if n in names else n for n in best.frontier],
                score=best.score(alpha, floor),
                votes=len(group),
                n_choices=best.n_choices,
                min_confidence=best.min_confidence,
                terminated_by=best.terminated_by or "aborted",
                relation_path=[f"{h.relation}:{h.direction}" for h in best.hops],
                witness=witness,
                witnesses=witnesses,
            )
        )
    return answers
