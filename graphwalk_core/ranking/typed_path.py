"""Bounded typed-path ranking (the reference notes' ``typed_path_evidence`` method) over passages.

Base candidates come from BM25 (``lexical``), the dense scorer (``vector``) or both fused by weighted
reciprocal rank (``hybrid``); at most ``base_candidates`` are kept and the first ``anchors`` of them
seed the graph. An anchor at one-based base rank ``r`` starts with strength ``1 / (2 + r)``; each
traversed edge multiplies it by ``0.5 * relation_weight * destination_affinity`` (affinity 1 for lexical
seeds; for vector seeds ``0.5 + 0.5 * max(cos, 0)`` for a passage and 0.5 for an entity, which has no
vector: counted as ``missing_affinity``). Each reached node keeps its strongest path (max, not sum);
ties prefer fewer hops, a better anchor, then the lexicographically smaller steps. Passages are
graph-ranked by strength (desc), hops, anchor rank, id, and the final score is
``0.25 / (2 + base_rank) + 0.75 / (2 + graph_rank)`` (either term absent when the passage has no such
rank); final ties by passage id.

Expansion is breadth first, depth by depth, stronger nodes first, outgoing before incoming, relation
kinds in order; it stops at ``max_depth`` or after ``max_relaxations`` edge relaxations and says so in
``stop_reasons``. An empty base gives an empty result: no unrelated roots are substituted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from graphwalk_core.errors import InputError
from graphwalk_core.ranking.base import (
    DenseScorer,
    LexicalScorer,
    PathStep,
    RankedHit,
    RankResult,
    rank_positions,
)
from graphwalk_core.ranking.passage_graph import ABOUT, MENTIONS, PassageGraph
from graphwalk_core.traversal.name_vectors import top_k

SeedMode = Literal["lexical", "vector", "hybrid"]


class TypedPathProfile(BaseModel):
    """An immutable ranking profile; its ``name`` is recorded with every result."""

    model_config = ConfigDict(frozen=True)

    name: str
    seed_mode: SeedMode
    base_candidates: int = 100
    anchors: int = 4
    #: relation kind -> weight; kinds not listed take ``other_relation_weight``; 0 excludes a kind
    relation_weights: dict[str, float] = Field(
        default_factory=lambda: {ABOUT: 1.0, MENTIONS: 0.8, "co_occurs_with": 0.4}
    )
    other_relation_weight: float = 0.6
    max_depth: int = 4
    max_relaxations: int = 16_384
    rrf_k: int = 60
    rrf_weights: tuple[float, float] = (1.0, 1.0)
    base_weight: float = 0.25
    graph_weight: float = 0.75


PROFILES: dict[str, TypedPathProfile] = {
    p.name: p
    for p in (
        TypedPathProfile(name="typed-path/v1-lexical", seed_mode="lexical"),
        TypedPathProfile(name="typed-path/v1-vector", seed_mode="vector"),
        TypedPathProfile(name="typed-path/v1-hybrid", seed_mode="hybrid"),
    )
}
DEFAULT_PROFILE = "typed-path/v1-hybrid"


def _ranks(keys: Sequence[tuple[str, str]]) -> np.ndarray:
    """Each key's place in the sorted keys (equal keys: in input order)."""
    ranks = np.zeros(len(keys), dtype=np.int64)
    ranks[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    return ranks


class _Search:
    """The strongest path found to every node so far, as arrays indexed by node (parent pointers)."""

    def __init__(self, n_nodes: int, steps: list[list[tuple[int, str, str]]]) -> None:
        self.strength = np.full(n_nodes, -1.0)
        self.hops = np.zeros(n_nodes, dtype=np.int64)
        self.anchor_rank = np.zeros(n_nodes, dtype=np.int64)
        self.anchor = np.full(n_nodes, -1, dtype=np.int64)
        self.parent = np.full(n_nodes, -1, dtype=np.int64)
        self.edge = np.full(n_nodes, -1, dtype=np.int64)  # index into the parent's adjacency
        self._adjacency = steps

    def reached(self) -> np.ndarray:
        return np.flatnonzero(self.strength >= 0)

    def order(self, nodes: Sequence[int] | np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
        """``nodes`` by strength (desc), hops, anchor rank, then ``tiebreak`` (ascending)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        keys = (tiebreak, self.anchor_rank[nodes], self.hops[nodes], -self.strength[nodes])
        return nodes[np.lexsort(keys)]

    def steps(self, node: int) -> list[tuple[int, str, int, str]]:
        """(from, relation kind, to, direction) from the anchor to ``node``, in order."""
        out = []
        while (parent := int(self.parent[node])) >= 0:
            _, kind, direction = self._adjacency[parent][int(self.edge[node])]
            out.append((parent, kind, node, direction))
            node = parent
        return out[::-1]

    def tie_wins(self, node: int, parent: int, edge: int) -> bool:
        """On equal strength, hops and anchor rank: whether the path via ``parent`` has smaller steps."""
        _, kind, direction = self._adjacency[parent][edge]
        mine = [(k, d) for _, k, _, d in self.steps(parent)] + [(kind, direction)]
        theirs = [(k, d) for _, k, _, d in self.steps(node)]
        return mine < theirs


class TypedPathRanker:
    """Bounded strongest-path ranking over a :class:`PassageGraph` with one pinned profile."""

    def __init__(
        self,
        graph: PassageGraph,
        *,
        profile: TypedPathProfile | str = DEFAULT_PROFILE,
        lexical: LexicalScorer | None = None,
        dense: DenseScorer | None = None,
    ) -> None:
        if isinstance(profile, str):
            if profile not in PROFILES:
                raise InputError(
                    f"unknown typed-path profile {profile!r}; choose one of {', '.join(PROFILES)}"
                )
            profile = PROFILES[profile]
        if profile.seed_mode in ("lexical", "hybrid") and lexical is None:
            raise InputError(f"{profile.name} needs a lexical (BM25) index")
        if profile.seed_mode in ("vector", "hybrid") and dense is None:
            raise InputError(f"{profile.name} needs a dense scorer")
        self.graph, self.settings, self.lexical, self.dense = graph, profile, lexical, dense
        self.adjacency = self._adjacency()
        self._steps = [[(v, kind, d) for v, kind, d, _ in row] for row in self.adjacency]
        self._neighbors = [np.array([t[0] for t in row], dtype=np.int64) for row in self.adjacency]
        self._factors = [np.array([t[3] for t in row], dtype=np.float64) for row in self.adjacency]
        #: per node, each edge's place by its step (relation kind, direction): of equal candidates for one
        #: neighbor the smaller step wins, as :meth:`_Search.tie_wins` decides between two parents
        self._step_rank = [_ranks([(kind, d) for _, kind, d in row]) for row in self._steps]
        ids = graph.passage_ids
        #: each passage's position in id order (graph-rank ties go to the smaller id)
        self._id_rank = np.zeros(graph.n_passages, dtype=np.int64)
        self._id_rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))

    @property
    def profile(self) -> str:
        return self.settings.name

    def _weight(self, kind: str) -> float:
        return self.settings.relation_weights.get(kind, self.settings.other_relation_weight)

    def _adjacency(self) -> list[list[tuple[int, str, str, float]]]:
        """Per node: (neighbor, relation kind, direction, 0.5 * weight), outgoing first, then by kind
        and neighbor; zero-weight kinds are left out before any expansion."""
        adj: dict[int, list[tuple[int, str, str, float]]] = defaultdict(list)
        edges = [(p, kind, e) for p, e, kind in self.graph.links] + list(self.graph.relations)
        for a, kind, b in edges:
            if self._weight(kind) <= 0:
                continue
            factor = 0.5 * self._weight(kind)
            adj[a].append((b, kind, "out", factor))
            adj[b].append((a, kind, "in", factor))
        order = {"out": 0, "in": 1}
        return [
            sorted(adj.get(n, []), key=lambda t: (order[t[2]], t[1], t[0])) for n in range(self.graph.n_nodes)
        ]

    def base(self, question: str) -> tuple[list[int], np.ndarray | None]:
        """Base candidates (passage indices, best first) and the dense cosines when vector-seeded."""
        mode, limit = self.settings.seed_mode, self.settings.base_candidates
        cosines = self.dense.similarities(question) if mode != "lexical" and self.dense else None
        lexical = (
            [i for i, _ in self.lexical.top(question, limit)] if mode != "vector" and self.lexical else []
        )
        vector = top_k(cosines, limit).tolist() if cosines is not None else []
        if mode == "lexical":
            return lexical, None
        if mode == "vector":
            return vector, cosines
        k, (wl, wv) = self.settings.rrf_k, self.settings.rrf_weights
        fused: dict[int, float] = defaultdict(float)
        for r, i in enumerate(lexical, start=1):
            fused[i] += wl / (k + r)
        for r, i in enumerate(vector, start=1):
            fused[i] += wv / (k + r)
        order = sorted(fused, key=lambda i: (-fused[i], self.graph.passage_ids[i]))
        return order[:limit], cosines

    def rank(self, question: str, k: int) -> RankResult:
        """The ``k`` best passages with their proving paths, coverage and stop reasons."""
        g, s = self.graph, self.settings
        base, cosines = self.base(question)
        seeds = {
            "mode": s.seed_mode,
            "base": len(base),
            "anchors": [g.passage_ids[i] for i in base[: s.anchors]],
        }
        if not base:
            return RankResult(profile=s.name, hits=[], seeds=seeds, stop_reasons=["empty_seed"])
        passages = g.n_passages
        # affinity per destination: 1 (lexical), else the passage's cosine or 0.5 for a vectorless entity
        passage_affinity = None if cosines is None else 0.5 + 0.5 * np.maximum(cosines, 0.0)
        missing = np.zeros(g.n_nodes, dtype=bool)
        search = _Search(g.n_nodes, self._steps)
        for r, a in enumerate(base[: s.anchors], start=1):
            search.strength[a], search.anchor_rank[a], search.anchor[a] = 1.0 / (2 + r), r, a
        frontier = [int(a) for a in base[: s.anchors]]
        relaxations, stop, budget = 0, [], s.max_relaxations
        for depth in range(1, s.max_depth + 1):
            changed: set[int] = set()
            for u in search.order(frontier, np.asarray(frontier, dtype=np.int64)).tolist():
                if search.hops[u] == depth:  # strengthened at this depth: it expands at the next one
                    continue
                neighbors, factors = self._neighbors[u], self._factors[u]
                step_rank = self._step_rank[u]
                if relaxations + len(neighbors) > budget:
                    neighbors, factors = neighbors[: budget - relaxations], factors[: budget - relaxations]
                    step_rank = step_rank[: budget - relaxations]
                    stop = ["edge_budget"]
                relaxations += len(neighbors)
                if passage_affinity is None:
                    affinity = 1.0
                else:
                    is_passage = neighbors < passages
                    affinity = np.where(is_passage, passage_affinity[np.where(is_passage, neighbors, 0)], 0.5)
                    missing[neighbors[~is_passage]] = True
                cand = float(search.strength[u]) * factors * affinity
                # per neighbor, its strongest candidate (the smaller step on equal strength)
                order = np.lexsort((step_rank, -cand))
                nodes, first = np.unique(neighbors[order], return_index=True)
                idx = order[first]
                old = search.strength[nodes]
                better = cand[idx] > old
                for j in np.flatnonzero(cand[idx] == old).tolist():  # equal strength: rare, in Python
                    v, e = int(nodes[j]), int(idx[j])
                    mine = (depth, int(search.anchor_rank[u]))
                    theirs = (int(search.hops[v]), int(search.anchor_rank[v]))
                    better[j] = mine < theirs or (mine == theirs and search.tie_wins(v, u, e))
                win, edges = nodes[better], idx[better]
                search.strength[win] = cand[edges]
                search.hops[win] = depth
                search.anchor_rank[win] = search.anchor_rank[u]
                search.anchor[win] = search.anchor[u]
                search.parent[win] = u
                search.edge[win] = edges
                changed.update(win.tolist())
                if stop:
                    break
            frontier = sorted(changed)
            if stop or not frontier:
                break
        else:
            if self._could_improve(frontier, search):
                stop = ["depth_limit"]
        reached = search.reached()
        reached = reached[reached < g.n_passages]
        graph_order = search.order(reached, self._id_rank[reached]).tolist()
        graph_rank, base_rank = rank_positions(graph_order), rank_positions(base)
        score = {
            n: (s.base_weight / (2 + base_rank[n]) if n in base_rank else 0.0)
            + (s.graph_weight / (2 + graph_rank[n]) if n in graph_rank else 0.0)
            for n in set(graph_rank) | set(base_rank)
        }
        top = sorted(score, key=lambda n: (-score[n], g.passage_ids[n]))[:k]
        hits = [self._hit(n, score[n], base_rank.get(n), graph_rank.get(n), search) for n in top]
        coverage = {
            "relaxations": relaxations,
            "reached_nodes": len(search.reached()),
            "reached_passages": len(reached),
            "missing_affinity": int(missing.sum()),
            "complete": not stop,
        }
        return RankResult(profile=s.name, hits=hits, seeds=seeds, coverage=coverage, stop_reasons=stop)

    def _could_improve(self, frontier: list[int], search: _Search) -> bool:
        """Whether one more depth could reach a new node or strengthen one (affinity at most 1)."""
        for u in frontier:
            cand = float(search.strength[u]) * self._factors[u]
            if np.any(cand > search.strength[self._neighbors[u]]):
                return True
        return False

    def _hit(self, node: int, score: float, base_rank: int | None, graph_rank: int | None,
             search: _Search) -> RankedHit:  # fmt: skip
        label, reached = self.graph.node_label, search.strength[node] >= 0
        steps = [
            PathStep(source=label(a), relation=kind, target=label(b), direction=d)  # type: ignore[arg-type]
            for a, kind, b, d in (search.steps(node) if reached else ())
        ]
        return RankedHit(
            passage_id=label(node),
            score=score,
            base_rank=base_rank,
            graph_rank=graph_rank,
            strength=float(search.strength[node]) if reached else None,
            anchor=label(int(search.anchor[node])) if reached else None,
            anchor_rank=int(search.anchor_rank[node]) if reached else None,
            path=steps,
        )
