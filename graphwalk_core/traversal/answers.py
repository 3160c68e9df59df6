"""Walk results: answers with witness paths (edge ids, relation, direction and edge sources)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from itertools import chain, pairwise
from typing import Literal

from pydantic import BaseModel, Field

from graphwalk_core.model import EdgeId, NodeId, edge_id
from graphwalk_core.stores.base import GraphStore, edge_between, node_names
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
    witness_paths: list[int] = Field(
        default_factory=list,
        description="relation mode: distinct start-to-node paths along the relation path, per node "
        "(nodes are ranked by it, most first; empty when the set was too large to count)",
    )


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


def _stored(source: NodeId, relation: str, direction: str, target: NodeId) -> tuple[NodeId, str, NodeId]:
    """A hop's edge as stored: (source, relation, target)."""
    return (source, relation, target) if direction == "out" else (target, relation, source)


#: ``(node, relation, direction) -> neighbors`` (None: unknown): the Traverser's adjacency reader.
GroupReader = Callable[[NodeId, str, Literal["out", "in"]], Awaitable[Sequence[NodeId] | None]]


async def _back_neighbors(
    store: GraphStore, grouped: GroupReader | None, node: NodeId, relation: str, back: Literal["out", "in"]
) -> Sequence[NodeId]:
    if grouped is not None:
        found = await grouped(node, relation, back)
        if found is not None:
            return found
    return [a.neighbor for a in await store.adjacent(node, direction=back, edge_types=(relation,))]


async def _witness_refs(
    store: GraphStore, grouped: GroupReader | None, beam: Beam, members: list[set[NodeId]], node: NodeId
) -> list[HopRef]:
    """Relation mode: one concrete path to ``node``, found backwards through the beam's frontiers
    (``members``: the frontier before each hop, as sets)."""
    refs: list[HopRef] = []
    current = node
    for hop, before in zip(reversed(beam.hops), reversed(members), strict=True):
        back: Literal["out", "in"] = "in" if hop.direction == "out" else "out"
        neighbors = await _back_neighbors(store, grouped, current, hop.relation, back)
        prev = next(filter(before.__contains__, neighbors))
        refs.append(HopRef(hop.relation, hop.direction, prev, current))
        current = prev
    return refs[::-1]


#: Above this many nodes in a relation-mode answer set its nodes keep their reached order (not counted).
MAX_RANKED = 5_000


async def witness_path_counts(
    store: GraphStore, grouped: GroupReader | None, beam: Beam
) -> dict[NodeId, int] | None:
    """Relation mode: per node of the final set, how many distinct start-to-node paths follow the walk's
    relation path (None when a set is larger than MAX_RANKED)."""
    frontiers = [*beam.trail, beam.frontier]
    if any(len(f) > MAX_RANKED for f in frontiers):
        return None
    counts: dict[NodeId, int] = dict.fromkeys(frontiers[0], 1)
    for hop, after in zip(beam.hops, frontiers[1:], strict=True):
        back: Literal["out", "in"] = "in" if hop.direction == "out" else "out"
        nxt: dict[NodeId, int] = {}
        for node in after:
            neighbors = await _back_neighbors(store, grouped, node, hop.relation, back)
            nxt[node] = sum(counts.get(p, 0) for p in neighbors)
        counts = nxt
    return counts


async def _hops(store: GraphStore, refs: Sequence[HopRef]) -> list[Hop]:
    hops = []
    for ref in refs:
        assert ref.source is not None and ref.target is not None
        stored = _stored(ref.source, ref.relation, ref.direction, ref.target)
        edge = await edge_between(store, *stored)
        sources = sorted({p.source_id for p in edge.provenance}) if edge is not None else []
        hops.append(Hop(source=ref.source, target=ref.target, relation=ref.relation,
                        direction=ref.direction, edge_id=edge_id(*stored), source_ids=sources))  # fmt: skip
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
    grouped: GroupReader | None = None,
) -> list[Answer]:
    """Group walks by the node set they reached; rank by votes (sampling) or by the best walk.

    In relation mode the nodes of an answer set are ranked by their witness paths (most first, ties
    in reached order): the answer's score ranks sets, the path count ranks nodes within one.
    """
    groups: dict[frozenset[NodeId], list[Beam]] = {}
    for beam in rank_walks(beams, alpha, floor):
        if beam.frontier:
            groups.setdefault(frozenset(beam.frontier), []).append(beam)
    ordered = list(groups.values())
    if by_votes:
        ordered.sort(key=lambda group: -len(group))  # stable: ties keep walk rank
    names = await node_names(store, list(dict.fromkeys(chain.from_iterable(g[0].frontier for g in ordered))))
    answers = []
    for group in ordered:
        best = group[0]
        counts: dict[NodeId, int] | None = None
        if relation_mode and best.hops:
            counts = await witness_path_counts(store, grouped, best)
            if counts is not None:
                best.frontier = sorted(best.frontier, key=lambda n: -counts[n])  # type: ignore[index]
        if relation_mode:
            members = [set(frontier) for frontier in best.trail]
            shown = best.frontier[:max_witnesses]
            witnesses = {
                n: await _hops(store, await _witness_refs(store, grouped, best, members, n)) for n in shown
            }
            witness = witnesses[best.frontier[0]] if best.frontier else []
        else:
            witness, witnesses = await _hops(store, best.hops), {}
        answers.append(
            Answer(
                node_ids=list(best.frontier),
                names=list(map(names.get, best.frontier, best.frontier)),
                score=best.score(alpha, floor),
                votes=len(group),
                n_choices=best.n_choices,
                min_confidence=best.min_confidence,
                terminated_by=best.terminated_by or "aborted",
                relation_path=[f"{h.relation}:{h.direction}" for h in best.hops],
                witness=witness,
                witnesses=witnesses,
                witness_paths=[counts[n] for n in best.frontier] if counts is not None else [],
            )
        )
    return answers


#: MetaQA qtype words -> KB relations (``movie_to_X`` follows X's relation out of the film).
_METAQA_RELATIONS = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "language": "in_language",
    "tags": "has_tags",
    "tag": "has_tags",
    "genre": "has_genre",
    "imdbvotes": "has_imdb_votes",
    "imdbrating": "has_imdb_rating",
}


def metaqa_relation_path(qtype: str) -> list[tuple[str, Literal["out", "in"]]]:
    """The gold relation path of a MetaQA qtype, e.g. ``actor_to_movie_to_writer`` ->
    ``[("starred_actors", "in"), ("written_by", "out")]``."""
    parts = qtype.strip().split("_to_")
    path: list[tuple[str, Literal["out", "in"]]] = []
    for here, there in pairwise(parts):
        if (here == "movie") == (there == "movie"):
            raise ValueError(f"qtype {qtype!r}: every hop must go to or from a movie")
        word = there if here == "movie" else here
        if word not in _METAQA_RELATIONS:
            raise ValueError(f"qtype {qtype!r}: unknown entity kind {word!r}")
        path.append((_METAQA_RELATIONS[word], "out" if here == "movie" else "in"))
    if not path:
        raise ValueError(f"qtype {qtype!r} has no hop")
    return path


async def follow_relation_path(
    store: GraphStore,
    start: Sequence[NodeId],
    path: Sequence[tuple[str, Literal["out", "in"]]],
    *,
    exclude_start: bool = True,
) -> set[NodeId]:
    """Plain breadth-first set expansion along ``path`` (the relation-path answerability ceiling).

    With ``exclude_start`` the start nodes never re-enter the set, as in MetaQA's gold answers.
    """
    excluded = set(start) if exclude_start else set()
    frontier = set(start)
    for relation, direction in path:
        nxt: set[NodeId] = set()
        for node in frontier:
            for adj in await store.adjacent(node, direction=direction, edge_types=(relation,)):
                nxt.add(adj.neighbor)
        frontier = nxt - excluded
    return frontier
