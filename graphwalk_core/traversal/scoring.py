"""Walk scoring: floored log-probabilities, length normalization and walk ranking."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from graphwalk_core.model import NodeId

Termination = Literal["stop", "dead_end", "max_depth", "aborted", "error"]

#: Walks that ended on their own rank before walks cut off by a limit.
_ENDED = ("stop", "dead_end")


def step_logp(p: float, floor: float) -> float:
    """``log(max(p, floor))``: a rounded-to-zero probability never gives ``-inf``."""
    return math.log(max(p, floor))


def normalized_score(
    sum_logp: float, n_decisions: int, alpha: float, floor: float, n_choices: int | None = None
) -> float:
    """``sum_logp / n_decisions ** alpha``.

    ``n_decisions`` counts every decision including STOP (a forced STOP at a dead end counts, with
    p = 1). A walk the decider never answered (``n_choices == 0``) scores ``log(floor)``, the lowest.
    """
    if n_decisions == 0 or n_choices == 0:
        return math.log(floor)
    return sum_logp / n_decisions**alpha


@dataclass(frozen=True, slots=True)
class HopRef:
    """One hop of a walk. Entity mode has a source and target; relation mode has neither."""

    relation: str
    direction: Literal["out", "in"]
    source: NodeId | None = None
    target: NodeId | None = None


@dataclass(slots=True)
class Beam:
    """One walk (a beam or a sample). ``frontier`` is the current node, or node set in relation mode."""

    id: int
    parent: int | None
    walk: int = 0
    start: tuple[NodeId, ...] = ()
    frontier: list[NodeId] = field(default_factory=list)
    hops: list[HopRef] = field(default_factory=list)
    visited: set[NodeId] = field(default_factory=set)
    sum_logp: float = 0.0
    n_decisions: int = 0
    n_choices: int = 0
    finished: bool = False
    terminated_by: Termination | None = None
    min_confidence: float | None = None
    #: Relation mode: the frontier before each hop (shared, never mutated), to rebuild witness paths.
    trail: list[list[NodeId]] = field(default_factory=list)

    def score(self, alpha: float, floor: float) -> float:
        return normalized_score(self.sum_logp, self.n_decisions, alpha, floor, self.n_choices)

    def child(self, new_id: int) -> Beam:
        """A copy that records this beam as its parent (collections copied, not shared)."""
        return Beam(
            id=new_id,
            parent=self.id,
            walk=self.walk,
            start=self.start,
            frontier=list(self.frontier),
            hops=list(self.hops),
            visited=set(self.visited),
            sum_logp=self.sum_logp,
            n_decisions=self.n_decisions,
            n_choices=self.n_choices,
            min_confidence=self.min_confidence,
            trail=list(self.trail),
        )

    def record_decision(
        self, p: float, floor: float, confidence: float | None, *, forced: bool = False
    ) -> float:
        """Add one decision with probability ``p``; returns its floored log-probability.

        ``forced`` marks a forced STOP at a dead end: it counts as a decision but not a real choice.
        """
        lp = step_logp(p, floor)
        self.sum_logp += lp
        self.n_decisions += 1
        self.n_choices += 0 if forced else 1
        if confidence is not None:
            self.min_confidence = (
                confidence if self.min_confidence is None else min(self.min_confidence, confidence)
            )
        return lp

    def finish(self, why: Termination) -> None:
        self.finished = True
        self.terminated_by = why


def rank_walks(beams: Sequence[Beam], alpha: float, floor: float) -> list[Beam]:
    """Walks that ended on their own first, then those cut off by a limit; each by score."""
    return sorted(beams, key=lambda b: (b.terminated_by not in _ENDED, -b.score(alpha, floor)))
