"""``graph-ppr``: passages ranked by Personalized PageRank over the passage-entity graph.

Seeds (the restart distribution) are the question's linked mentions, each weighted by specificity
(``log(1 + P / n)`` for a title naming ``n`` passages, the entity's IDF for an entity), plus the dense
top passages by reciprocal rank, weighing ``dense_weight`` against the mentions' 1 (0.05, as HippoRAG 2
weights its passage seeds: 4.8% of the mass), plus, for ``graph-ppr-walk``, the passages an entity walk
reached (witness-path passages first) by reciprocal rank, weighing ``walk_weight`` against the other
seeds' 1. A passage links to
the entities it mentions with the entity's specificity as weight (a walk leaves a passage through its
rare names), ``title_weight`` times more to the entity the passage is about. PageRank runs as
scipy.sparse power iteration; passages rank by mass. A question with no mention and no dense scorer
has no seed and gets no hits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field

from graphwalk_core.ranking.base import DenseScorer, RankedHit, RankResult
from graphwalk_core.ranking.passage_graph import ABOUT, PassageGraph
from graphwalk_core.traversal.name_vectors import top_k


class PPRProfile(BaseModel):
    """Every parameter of a PPR ranking; ``name`` is recorded with each result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "graph-ppr/v1"
    #: the chance of following a link rather than restarting (0 ranks by seeds only, 1 forgets them)
    damping: float = Field(default=0.5, gt=0.0, lt=1.0)
    #: dense top passages seeded (0: none)
    dense_k: int = Field(default=5, ge=0)
    dense_weight: float = Field(default=0.05, ge=0.0)
    title_weight: float = Field(default=3.0, ge=0.0)
    relation_weight: float = Field(default=0.0, ge=0.0)
    #: share of the restart mass given to the passages a walk reached (0: walk results are ignored)
    walk_weight: float = Field(default=0.0, ge=0.0)
    walk_k: int = Field(default=10, ge=0)
    max_iterations: int = Field(default=50, ge=1)
    tolerance: float = Field(default=1e-8, ge=0.0)


class PPRRanker:
    """Personalized PageRank passage ranking over one :class:`PassageGraph`."""

    def __init__(
        self, graph: PassageGraph, dense: DenseScorer | None = None, profile: PPRProfile | None = None
    ) -> None:
        self.graph = graph
        self.dense = dense
        self._passage_index = {pid: i for i, pid in enumerate(graph.passage_ids)}
        self.settings = profile or PPRProfile()
        spec = graph.specificity
        n = graph.n_passages
        tw = self.settings.title_weight

        def weight(_p: int, e: int, kind: str) -> float:
            return float(spec[e - n]) * (tw if kind == ABOUT else 1.0)

        adjacency = graph.adjacency(weight, self.settings.relation_weight)
        degree = np.asarray(adjacency.sum(axis=0)).ravel()
        degree[degree == 0] = 1.0
        #: column-stochastic transition matrix (a node without links keeps no mass)
        self.transition = (adjacency @ sp.diags(1.0 / degree)).tocsr()

    @property
    def profile(self) -> str:
        return self.settings.name

    def seeds(self, question: str, walk: Sequence[str] = ()) -> tuple[np.ndarray, dict[str, object]]:
        """The restart distribution and a record of where it came from (``walk``: passage ids a walk
        reached, best first; used when the profile's ``walk_weight`` is positive)."""
        g, n = self.graph, self.graph.n_passages
        linked = np.zeros(g.n_nodes)
        mentions = g.link(question)
        for m in mentions:
            for i in m.passages:
                linked[i] += math.log(1 + n / len(m.passages)) / len(m.passages)
            for e in m.entities:
                linked[e] += g.specificity[e - n] / len(m.entities)
        seed = linked / linked.sum() if linked.sum() > 0 else linked
        dense_top: list[int] = []
        if self.dense is not None and self.settings.dense_k > 0:
            dense_top = top_k(self.dense.similarities(question), self.settings.dense_k).tolist()
            dense = np.zeros(g.n_nodes)
            for r, i in enumerate(dense_top, start=1):
                dense[i] += 1.0 / r
            share = self.settings.dense_weight if linked.sum() > 0 else 1.0
            seed = seed + share * dense / dense.sum()
        walked = [self._passage_index[p] for p in dict.fromkeys(walk) if p in self._passage_index]
        walked = walked[: self.settings.walk_k] if self.settings.walk_weight > 0 else []
        if walked:
            boost = np.zeros(g.n_nodes)
            for r, i in enumerate(walked, start=1):
                boost[i] += 1.0 / r
            boost /= boost.sum()
            seed = seed / seed.sum() + self.settings.walk_weight * boost if seed.any() else boost
        total = seed.sum()
        record = {
            "mentions": [m.text for m in mentions],
            "dense": [g.passage_ids[i] for i in dense_top],
        }
        if walked:
            record["walk"] = [g.passage_ids[i] for i in walked]
        return (seed / total if total > 0 else seed), record

    def rank(self, question: str, k: int, *, walk: Sequence[str] = ()) -> RankResult:
        """The ``k`` passages with the most PageRank mass, best first (``walk``: see :meth:`seeds`)."""
        seed, record = self.seeds(question, walk)
        if not seed.any():
            return RankResult(profile=self.profile, hits=[], seeds=record, stop_reasons=["empty_seed"])
        d, mass = self.settings.damping, seed
        iterations, delta = 0, float("inf")
        while iterations < self.settings.max_iterations and delta > self.settings.tolerance:
            nxt = (1 - d) * seed + d * (self.transition @ mass)
            delta = float(np.abs(nxt - mass).sum())
            mass, iterations = nxt, iterations + 1
        scores = mass[: self.graph.n_passages]
        top = top_k(scores, k, positive_only=True).tolist()
        hits = [RankedHit(passage_id=self.graph.passage_ids[i], score=float(scores[i])) for i in top]
        stop = [] if delta <= self.settings.tolerance else ["max_iterations"]
        return RankResult(
            profile=self.profile,
            hits=hits,
            seeds=record,
            coverage={"iterations": iterations, "residual": delta},
            stop_reasons=stop,
        )
