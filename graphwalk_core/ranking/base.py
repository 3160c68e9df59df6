"""What a passage ranker returns: ranked hits (with the path that proves each), profile and coverage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field


class PathStep(BaseModel):
    """One traversed step from ``source`` to ``target``: ``out`` walks the relation forward
    (``source -[relation]-> target``), ``in`` against it (the relation is ``target -[relation]-> source``)."""

    source: str
    relation: str
    target: str
    direction: Literal["out", "in"]


class RankedHit(BaseModel):
    """One ranked passage: its score and, for graph rankers, how the graph reached it."""

    passage_id: str
    score: float
    base_rank: int | None = None
    graph_rank: int | None = None
    strength: float | None = None
    anchor: str | None = None
    anchor_rank: int | None = None
    path: list[PathStep] = Field(default_factory=list)


class RankResult(BaseModel):
    """A ranker's answer to one question, best hit first.

    ``profile`` is the versioned ranking profile (its name pins every parameter); ``seeds`` says what the
    graph was seeded with; ``coverage`` counts the work done and ``stop_reasons`` says which bound cut
    it (empty: the search ran to completion).
    """

    profile: str
    hits: list[RankedHit]
    seeds: dict[str, Any] = Field(default_factory=dict)
    coverage: dict[str, Any] = Field(default_factory=dict)
    stop_reasons: list[str] = Field(default_factory=list)

    @property
    def passage_ids(self) -> list[str]:
        return [h.passage_id for h in self.hits]


class DenseScorer(Protocol):
    """Cosine similarity of a text to every corpus passage, in corpus order."""

    def similarities(self, text: str) -> np.ndarray: ...


class LexicalScorer(Protocol):
    """The ``k`` best passages (corpus indices) for a text, best first, with their scores."""

    def top(self, text: str, k: int) -> list[tuple[int, float]]: ...


class PassageRanker(Protocol):
    @property
    def profile(self) -> str: ...

    def rank(self, question: str, k: int) -> RankResult: ...


def rank_positions(order: Sequence[int]) -> dict[int, int]:
    """One-based rank of each index in ``order``."""
    return {i: r for r, i in enumerate(order, start=1)}
