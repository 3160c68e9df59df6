"""Dense top-k as a ranker: passages by cosine to the question (the baseline every ranker must beat)."""

from __future__ import annotations

from collections.abc import Sequence

from graphwalk_core.ranking.base import DenseScorer, RankedHit, RankResult
from graphwalk_core.traversal.name_vectors import top_k


class DenseRanker:
    """Passages ranked by the dense scorer's cosine; ties by corpus order."""

    def __init__(
        self, passage_ids: Sequence[str], dense: DenseScorer, *, profile: str = "dense/cosine"
    ) -> None:
        self.passage_ids = list(passage_ids)
        self.dense = dense
        self._profile = profile

    @property
    def profile(self) -> str:
        return self._profile

    def rank(self, question: str, k: int) -> RankResult:
        scores = self.dense.similarities(question)
        hits = [
            RankedHit(passage_id=self.passage_ids[i], score=float(scores[i]))
            for i in top_k(scores, k).tolist()
        ]
        return RankResult(profile=self.profile, hits=hits)
