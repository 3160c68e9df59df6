"""What a question asks for that the path has not walked yet: learned question-words -> moves models.

Two ridge regressions (scikit-learn) over the words and word pairs (up to four words apart) of the
masked question, fitted on the training questions' own labeled paths, so they work on any graph:

- *demand*: how many times each move (relation and direction) is walked on the way to the answer.
  The prediction is additive in the words, so a question chaining two known phrasings ("the films
  that share directors with ENTITY were in which genres") demands the moves of both, whatever the
  length of the questions it was trained on;
- *first*: which move comes first, from the words weighted by their closeness to the entity mention
  (a question unfolds from its entity outward: "genres of the films directed by the director of
  ENTITY" starts with the director).

The features a trained decider reads (:meth:`Coverage.scalars`) depend on the question and the moves
walked so far, never on the depth: each option's demand and residual (demand minus times walked; at
the start, its first-move score), what stays uncovered after it (STOP: what is uncovered now), whether
it is the next one asked for, and its relation's residual in both directions. Counts, not set
membership: a relation may rightly be walked twice (out to the director, back to the director's films).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphwalk_core.decisions.views import MASK, Move

#: The scalar features coverage adds per option, in column order.
COVERAGE_SCALARS = (
    "demand",
    "residual",
    "remaining_after",
    "remaining_now",
    "is_next",
    "behind_next",
    "relation_residual",
)
#: A move's demand above this counts as still asked for (for "next").
UNCOVERED = 0.5
#: ``behind_next`` of a move that is not asked for.
FAR = 10.0
#: Word pairs up to this many words apart are terms: a phrasing that puts words between the ones that
#: ask for a move ("share the same actor of" / "share actors with") still shares their pair.
PAIR_WINDOW = 4
_WORD = re.compile(r"\w+")
_MASK_WORD = MASK.lower()


def move_key(move: Move) -> str:
    """A move as coverage counts it: relation and stored direction (walking a hop back is the reverse
    direction, which it is)."""
    return f"{move[0]} ({move[1]})"


def _word(token: str) -> str:
    """A lowercased word with a plural ``s`` dropped ("directors" reads as "director")."""
    word = token.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def question_words(question: str) -> list[str]:
    """The question's words, lowercased, plural ``s`` dropped (the mask reads ``entity``)."""
    return [_word(w) for w in _WORD.findall(question)]


def question_terms(question: str, window: int = PAIR_WINDOW) -> list[tuple[str, int]]:
    """(term, distance in words to the nearest entity mention) for every word and every ordered pair of
    words at most ``window`` apart (a skip pair is named like an adjacent one: "share the same actor"
    and "share actors" both hold "share actor"); 0 for every term of a question without a mention."""
    words = question_words(question)
    masks = [i for i, w in enumerate(words) if w == _MASK_WORD]

    def dist(i: int) -> int:
        return min((abs(i - m) for m in masks), default=0)

    terms = [(w, dist(i)) for i, w in enumerate(words) if w != _MASK_WORD]
    for gap in range(1, window + 1):
        pairs = enumerate(zip(words, words[gap:], strict=False))
        terms += [(f"{a} {b}", min(dist(i), dist(i + gap))) for i, (a, b) in pairs]
    return terms


def proximity(distance: int) -> float:
    """A term's weight for the first move, by its distance in words to the entity mention."""
    return 1.0 / (1.0 + distance) ** 2


@dataclass(frozen=True)
class Asked:
    """What one question asks for, per move: walk count, position of its words, first-move score."""

    demand: np.ndarray
    position: np.ndarray
    first: np.ndarray


@dataclass(frozen=True)
class Coverage:
    """The demand and first-move ridge weights (moves x terms) and their intercepts."""

    terms: tuple[str, ...]
    moves: tuple[str, ...]
    coef: np.ndarray
    intercept: np.ndarray
    first_coef: np.ndarray
    first_intercept: np.ndarray
    _term_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _move_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _same_relation: np.ndarray = field(init=False, repr=False, compare=False)
    _cache: dict[str, Asked] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        relation = [key.rpartition(" (")[0] for key in self.moves]
        same = np.array([[a == b for b in relation] for a in relation], dtype=bool).reshape(len(relation), -1)
        object.__setattr__(self, "_term_index", {t: i for i, t in enumerate(self.terms)})
        object.__setattr__(self, "_move_index", {m: i for i, m in enumerate(self.moves)})
        object.__setattr__(self, "_same_relation", same)
        object.__setattr__(self, "_cache", {})

    def asked(self, question: str) -> Asked:
        """What ``question`` asks for (cached per text). A move's position is the distance from the
        entity mention of the words asking for it, weighted by their squared positive weights."""
        hit = self._cache.get(question)
        if hit is not None:
            return hit
        demand = self.intercept.copy()
        first = self.first_intercept.copy()
        mass = np.zeros(len(self.moves))
        spread = np.zeros(len(self.moves))
        for term, distance in question_terms(question):
            j = self._term_index.get(term)
            if j is None:
                continue
            demand += self.coef[:, j]
            first += self.first_coef[:, j] * proximity(distance)
            w = np.maximum(self.coef[:, j], 0.0) ** 2
            mass += w
            spread += w * distance
        position = np.where(mass > 0, spread / np.maximum(mass, 1e-12), 99.0)
        if len(self._cache) >= 10_000:
            self._cache.clear()
        asked = self._cache[question] = Asked(demand, position, first)
        return asked

    def scalars(self, question: str, path: Sequence[Move], options: Sequence[Move | None]) -> np.ndarray:
        """The :data:`COVERAGE_SCALARS` of each option (see module doc); a move never seen in training
        asks nothing (zeros, and what is uncovered now)."""
        asked = self.asked(question)
        walked = np.zeros(len(self.moves))
        for move in path:
            i = self._move_index.get(move_key(move))
            if i is not None:
                walked[i] += 1
        residual = asked.demand - walked
        open_now = np.maximum(residual, 0.0)
        remaining_now = float(open_now.sum())
        if path:  # next: the uncovered move whose words stand nearest the entity
            uncovered = residual > UNCOVERED
            nearest = float(asked.position[uncovered].min()) if uncovered.any() else 99.0
            behind = np.where(uncovered, np.minimum(asked.position - nearest, FAR), FAR)
            wanted = residual
        else:  # at the start: the first move asked for
            behind = float(asked.first.max()) - asked.first
            wanted = asked.first
        out = np.zeros((len(options), len(COVERAGE_SCALARS)), dtype=np.float32)
        out[:, 2] = out[:, 3] = remaining_now
        for k, move in enumerate(options):
            i = None if move is None else self._move_index.get(move_key(move))
            if i is None:
                continue
            out[k, 0] = asked.demand[i] if path else wanted[i]
            out[k, 1] = wanted[i]
            out[k, 2] = remaining_now - open_now[i] + max(residual[i] - 1.0, 0.0)
            out[k, 4] = float(behind[i] <= 1e-9)
            out[k, 5] = behind[i]
            same = self._same_relation[i]
            out[k, 6] = float(asked.demand[same].sum() - walked[same].sum())
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights, by their name in a model's ``weights.npz``."""
        return {
            "coverage_coef": self.coef,
            "coverage_intercept": self.intercept,
            "coverage_first_coef": self.first_coef,
            "coverage_first_intercept": self.first_intercept,
        }

    def manifest(self) -> dict[str, Any]:
        """The vocabulary, for a model's ``manifest.json``."""
        return {"terms": list(self.terms), "moves": list(self.moves)}

    @classmethod
    def from_saved(cls, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> Coverage:
        """Back from :meth:`manifest` and :meth:`arrays`."""
        return cls(
            tuple(manifest["terms"]),
            tuple(manifest["moves"]),
            *(np.asarray(arrays[name], dtype=np.float64) for name in cls.array_names()),
        )

    @staticmethod
    def array_names() -> tuple[str, ...]:
        return ("coverage_coef", "coverage_intercept", "coverage_first_coef", "coverage_first_intercept")

    @classmethod
    def fit(
        cls, labeled: Iterable[tuple[str, Sequence[str]]], *, alpha: float = 1.0, min_count: int = 2
    ) -> Coverage:
        """Fit on (masked question, move keys of its labeled path in order) pairs; terms in fewer than
        ``min_count`` questions are dropped."""
        from scipy.sparse import csr_matrix
        from sklearn.linear_model import Ridge

        grouped = Counter((q, tuple(moves)) for q, moves in labeled)
        seen: Counter[str] = Counter()
        for (q, _), n in grouped.items():
            for t in {t for t, _ in question_terms(q)}:
                seen[t] += n
        terms = tuple(sorted(t for t, c in seen.items() if c >= min_count))
        moves = tuple(sorted({m for _, path in grouped for m in path}))
        t_index = {t: i for i, t in enumerate(terms)}
        m_index = {m: i for i, m in enumerate(moves)}
        counts: list[float] = []
        near: list[float] = []
        cols: list[int] = []
        ptr = [0]
        y = np.zeros((len(grouped), len(moves)))
        y_first = np.zeros((len(grouped), len(moves)))
        for k, (q, path) in enumerate(grouped):
            row: dict[int, list[float]] = {}
            for t, d in question_terms(q):
                if t in t_index:
                    cell = row.setdefault(t_index[t], [0.0, 0.0])
                    cell[0] += 1.0
                    cell[1] += proximity(d)
            for j in sorted(row):
                cols.append(j)
                counts.append(row[j][0])
                near.append(row[j][1])
            ptr.append(len(cols))
            for m in path:
                y[k, m_index[m]] += 1
            if path:
                y_first[k, m_index[path[0]]] = 1
        shape = (len(grouped), len(terms))
        weight = np.array(list(grouped.values()), dtype=np.float64)
        if not terms or not moves:  # nothing to learn from: every question asks the average
            zeros = np.zeros((len(moves), len(terms)))
            mean = np.average(y, axis=0, weights=weight)
            return cls(terms, moves, zeros, mean, zeros.copy(), np.average(y_first, axis=0, weights=weight))
        x_counts = csr_matrix((counts, cols, ptr), shape=shape)
        x_near = csr_matrix((near, cols, ptr), shape=shape)
        demand = Ridge(alpha=alpha).fit(x_counts, y, sample_weight=weight)
        first = Ridge(alpha=alpha).fit(x_near, y_first, sample_weight=weight)
        return cls(
            terms,
            moves,
            np.asarray(demand.coef_, dtype=np.float64).reshape(len(moves), len(terms)),
            np.asarray(demand.intercept_, dtype=np.float64).reshape(len(moves)),
            np.asarray(first.coef_, dtype=np.float64).reshape(len(moves), len(terms)),
            np.asarray(first.intercept_, dtype=np.float64).reshape(len(moves)),
        )
