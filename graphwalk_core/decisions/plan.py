"""Path-level planning: score whole relation paths against the question, then marginalize per step.

A question unfolds outward from its entity mention on both sides ("who acted in the films directed
by the director of ENTITY": *director* is the first move, *directed* the second, *acted* the third).
The planner aligns the words of each side, read outward from the mention, monotonically to a path's
moves (a word nearer the mention never belongs to a later move than a farther word on the same side),
each word either explained by one move or by nothing (*null*). A path's score is the best such
alignment's summed gain ``log p(word | move) - log p(word | null)``, with every move explained by at
least one word: a path must explain the question's content words, and each of its moves must be asked
for, whatever its length. So a model fitted on 1- and 2-hop questions scores a 3-hop path by the same
rule.

The word/move tables are fitted on the training questions' own labeled paths (any graph) by hard EM:
IBM-Model-1 style soft counts to start, then Viterbi re-alignment under the monotone rule. Which move
may follow which (the graph's schema) is read from the moves the training examples were offered after
each move, so continuations the graph cannot walk are not planned.

At a decision, each offered move's probability is the summed probability (``exp`` of the score) of
the planned paths that start with the walked path plus that move; STOP's is the walked path's own.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphwalk_core.decisions.coverage import move_key, question_words
from graphwalk_core.decisions.views import MASK, Move

#: Gain of any word for a move the planner never saw (it cannot be planned).
UNKNOWN_MOVE_GAIN = -20.0
#: The most paths planned for one decision (continuations beyond are not enumerated).
MAX_PATHS = 4000
_MASK_WORD = MASK.lower()
NULL = -1


def sides(question: str) -> tuple[list[str], list[str]]:
    """The question's words left and right of its (first) entity mention, each read outward from it;
    every word on the right when there is no mention."""
    words = question_words(question)
    if _MASK_WORD not in words:
        return [], words
    at = words.index(_MASK_WORD)
    left = [w for w in reversed(words[:at]) if w != _MASK_WORD]
    right = [w for w in words[at + 1 :] if w != _MASK_WORD]
    return left, right


def _top_bit(mask: int) -> int:
    return mask.bit_length() - 1


def _align_side(gains: np.ndarray) -> tuple[list[float], list[list[int]]]:
    """Best monotone alignment of one side's words (``gains``: moves x words) per set of moves used:
    (score per mask, move index or NULL per word per mask)."""
    k, n = gains.shape
    size = 1 << k
    best = [-math.inf] * size
    best[0] = 0.0
    tags: list[list[int]] = [[] for _ in range(size)]
    for i in range(n):
        new = list(best)
        new_tags = [[*t, NULL] for t in tags]
        for mask in range(size):
            if best[mask] == -math.inf:
                continue
            for t in range(max(_top_bit(mask), 0), k):
                score = best[mask] + float(gains[t, i])
                target = mask | (1 << t)
                if score > new[target]:
                    new[target] = score
                    new_tags[target] = [*tags[mask], t]
        best, tags = new, new_tags
    return best, tags


def _best_per_mask(gains: np.ndarray) -> np.ndarray:
    """:func:`_align_side`'s scores for many paths at once: ``gains`` is paths x moves x words, the
    result paths x masks. A mask's last move is its top bit; a word aligned to it comes from the mask
    itself (that move again) or from the mask without it (monotone), always from before the word."""
    n, k, n_words = gains.shape
    best = np.full((n, 1 << k), -np.inf)
    best[:, 0] = 0.0
    if k == 0:
        return best
    targets = np.arange(1, 1 << k)
    tops = np.array([_top_bit(int(m)) for m in targets])
    sources = targets - (1 << tops)
    per_mask = gains[:, tops, :]
    for i in range(n_words):
        aligned = np.maximum(best[:, sources], best[:, 1:]) + per_mask[:, :, i]
        np.maximum(best[:, 1:], aligned, out=best[:, 1:])
    return best


def _covering_pairs(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(left mask, right mask) pairs whose union is every one of ``k`` moves."""
    full = (1 << k) - 1
    pairs = [(a, b) for a in range(full + 1) for b in range(full + 1) if a | b == full]
    return np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])


@dataclass(frozen=True)
class _Asked:
    """One question as the planner reads it: its words' table columns per side, the moves some word
    asks for, and the scores of the paths aligned so far."""

    lcols: np.ndarray
    rcols: np.ndarray
    allowed: frozenset[int]
    scores: dict[tuple[int, ...], float]


@dataclass(frozen=True)
class Planner:
    """Word/move gains, the schema (moves offered after each move) and the planning depth."""

    words: tuple[str, ...]
    moves: tuple[str, ...]
    gain: np.ndarray
    follows: Mapping[str, tuple[str, ...]]
    max_depth: int = 3
    #: Subtracted from a path's score per move: a move must be asked for by at least this much gain.
    move_cost: float = 2.0
    #: The plan's weight against the trained network (a product of experts, see ``combine``).
    weight: float = 1.0
    _word_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _move_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _table: np.ndarray = field(init=False, repr=False, compare=False)
    _follows: dict[int, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _cache: dict[str, _Asked] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # one extra column (an unknown word: explained by nothing) and one extra row (an unknown move)
        table = np.zeros((len(self.moves) + 1, len(self.words) + 1))
        table[: len(self.moves), : len(self.words)] = self.gain
        table[len(self.moves), :] = UNKNOWN_MOVE_GAIN
        object.__setattr__(self, "_word_index", {w: i for i, w in enumerate(self.words)})
        object.__setattr__(self, "_move_index", {m: i for i, m in enumerate(self.moves)})
        object.__setattr__(self, "_table", table)
        index = self._move_index
        follows = {
            i: tuple(index[m] for m in self.follows.get(key, ()) if m in index) for key, i in index.items()
        }
        follows[len(self.moves)] = ()
        object.__setattr__(self, "_follows", follows)
        object.__setattr__(self, "_cache", {})

    def knows(self, key: str) -> bool:
        return key in self._move_index

    def _side_gains(self, words: Sequence[str], path: Sequence[str]) -> np.ndarray:
        cols = [self._word_index.get(w, len(self.words)) for w in words]
        rows = [self._move_index.get(m, len(self.moves)) for m in path]
        return self._table[np.ix_(rows, cols)] if rows else np.zeros((0, len(cols)))

    def align(self, question: str, path: Sequence[str]) -> tuple[float, list[int], list[int]]:
        """The best alignment of ``question`` to ``path`` (move keys): its score and, per word of the
        left and right side (outward), the move index or NULL. -inf when some move stays unexplained."""
        left, right = sides(question)
        full = (1 << len(path)) - 1
        lscore, ltags = _align_side(self._side_gains(left, path))
        rscore, rtags = _align_side(self._side_gains(right, path))
        best, pick = -math.inf, (0, 0)
        for a, b in itertools.product(range(full + 1), repeat=2):
            if a | b == full and lscore[a] + rscore[b] > best:
                best, pick = lscore[a] + rscore[b], (a, b)
        return best, ltags[pick[0]], rtags[pick[1]]

    def score(self, question: str, path: Sequence[str]) -> float:
        """The path's score: its best alignment's gain less ``move_cost`` per move."""
        return float(self.scores(question, [tuple(path)])[0])

    def scores(self, question: str, paths: Sequence[tuple[str, ...]]) -> np.ndarray:
        """:meth:`score` of each path (move keys)."""
        unknown = len(self.moves)
        return self._scores(question, [tuple(self._move_index.get(m, unknown) for m in p) for p in paths])

    def _asked(self, question: str) -> _Asked:
        hit = self._cache.get(question)
        if hit is None:
            if len(self._cache) >= 20_000:
                self._cache.clear()
            left, right = sides(question)
            lcols = np.array([self._word_index.get(w, len(self.words)) for w in left], dtype=np.intp)
            rcols = np.array([self._word_index.get(w, len(self.words)) for w in right], dtype=np.intp)
            cols = np.concatenate([lcols, rcols])
            wanted = self._table[: len(self.moves), cols].max(axis=1) > 0 if len(cols) else []
            allowed = frozenset(i for i, yes in enumerate(np.asarray(wanted).tolist()) if yes)
            hit = self._cache[question] = _Asked(lcols, rcols, allowed, {})
        return hit

    def _scores(self, question: str, paths: Sequence[tuple[int, ...]]) -> np.ndarray:
        """Scores of paths of move indices, the missing ones of one length aligned at once (cached per
        question)."""
        asked = self._asked(question)
        known = asked.scores
        missing = [p for p in dict.fromkeys(paths) if p not in known]
        by_length: dict[int, list[tuple[int, ...]]] = defaultdict(list)
        for p in missing:
            by_length[len(p)].append(p)
        for k, group in by_length.items():
            rows = np.array(group, dtype=np.intp).reshape(len(group), k)
            gains = self._table[rows]
            lbest = _best_per_mask(gains[:, :, asked.lcols])
            rbest = _best_per_mask(gains[:, :, asked.rcols])
            a, b = _covering_pairs(k)
            total = (lbest[:, a] + rbest[:, b]).max(axis=1) - self.move_cost * k
            known.update(zip(group, total.tolist(), strict=True))
        return np.array([known[p] for p in paths])

    def asked(self, question: str) -> frozenset[str]:
        """The moves some word of ``question`` asks for (a positive gain): the only ones a plan
        continues with (any other move costs at least ``move_cost`` and explains nothing)."""
        return frozenset(self.moves[i] for i in self._asked(question).allowed)

    def continuations(
        self, path: tuple[str, ...], allowed: Collection[str] | None = None
    ) -> list[tuple[str, ...]]:
        """``path`` and every schema continuation of it (through ``allowed`` moves only, when given) up
        to ``max_depth`` moves (bounded)."""
        index = self._move_index
        through = None if allowed is None else frozenset(index[m] for m in allowed if m in index)
        found = self._continuations(tuple(index[m] for m in path), through)
        return [tuple(self.moves[i] for i in p) for p in found]

    def _continuations(self, path: tuple[int, ...], allowed: frozenset[int] | None) -> list[tuple[int, ...]]:
        out = [path]
        layer = [path]
        while layer and len(layer[0]) < self.max_depth and len(out) < MAX_PATHS:
            layer = [(*p, m) for p in layer for m in self._follows[p[-1]] if allowed is None or m in allowed]
            out += layer[: MAX_PATHS - len(out)]
        return out

    def distribution(
        self, question: str, path: Sequence[Move], options: Sequence[Move | None]
    ) -> np.ndarray | None:
        """Per offered option (None: STOP) the planned log probability, or None when the planner does
        not know every offered move (it abstains)."""
        index = self._move_index
        keys = [move_key(m) for m in path] + [move_key(o) for o in options if o is not None]
        if any(k not in index for k in keys):
            return None
        walked = tuple(index[move_key(m)] for m in path)
        allowed = self._asked(question).allowed
        planned = [
            [walked] if o is None else self._continuations((*walked, index[move_key(o)]), allowed)
            for o in options
        ]
        flat = self._scores(question, [p for paths in planned for p in paths])
        mass = np.full(len(options), -np.inf)
        at = 0
        for j, paths in enumerate(planned):
            if len(paths[0]) <= self.max_depth:  # no plan is longer than the labeled paths may be
                mass[j] = _logsumexp(flat[at : at + len(paths)])
            at += len(paths)
        if not np.isfinite(mass).any():
            return None
        return mass - _logsumexp(mass)

    # -- persistence --------------------------------------------------------------------------

    def arrays(self) -> dict[str, np.ndarray]:
        return {"plan_gain": self.gain}

    def manifest(self) -> dict[str, Any]:
        return {
            "words": list(self.words),
            "moves": list(self.moves),
            "follows": {k: list(v) for k, v in sorted(self.follows.items())},
            "max_depth": self.max_depth,
            "move_cost": self.move_cost,
            "weight": self.weight,
        }

    @classmethod
    def from_saved(cls, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> Planner:
        return cls(
            tuple(manifest["words"]),
            tuple(manifest["moves"]),
            np.asarray(arrays["plan_gain"], dtype=np.float64),
            {k: tuple(v) for k, v in manifest["follows"].items()},
            int(manifest["max_depth"]),
            float(manifest["move_cost"]),
            float(manifest["weight"]),
        )

    # -- fitting ------------------------------------------------------------------------------

    @classmethod
    def fit(
        cls,
        labeled: Iterable[tuple[str, Sequence[str]]],
        follows: Mapping[str, Iterable[str]],
        *,
        max_depth: int = 3,
        move_cost: float = 2.0,
        weight: float = 1.0,
        soft_iterations: int = 3,
        hard_iterations: int = 4,
        smoothing: float = 0.1,
        min_count: int = 2,
    ) -> Planner:
        """Fit on (masked question, move keys of its labeled path) pairs; ``follows`` maps a move to the
        moves offered after it. Words in fewer than ``min_count`` questions are left out."""
        grouped = Counter((q, tuple(p)) for q, p in labeled if p)
        seen: Counter[str] = Counter()
        for (q, _), n in grouped.items():
            for w in set(itertools.chain(*sides(q))):
                seen[w] += n
        words = tuple(sorted(w for w, c in seen.items() if c >= min_count))
        moves = tuple(sorted({m for _, p in grouped for m in p} | {m for ms in follows.values() for m in ms}))
        schema = {k: tuple(sorted(set(v))) for k, v in sorted(follows.items())}
        planner = cls(words, moves, np.zeros((len(moves), len(words))), schema, max_depth, move_cost, weight)
        w_index, m_index = planner._word_index, planner._move_index
        pairs = [
            ([w_index.get(w, -1) for w in itertools.chain(*sides(q))], [m_index[m] for m in p], n)
            for (q, p), n in grouped.items()
        ]
        for it in range(soft_iterations + hard_iterations):
            counts = np.zeros((len(moves) + 1, len(words)))  # last row: null
            if it < soft_iterations:
                for ws, ms, n in pairs:
                    for w in ws:
                        if w < 0:
                            continue
                        if it == 0:
                            post = np.full(len(ms) + 1, 1.0 / (len(ms) + 1))
                        else:
                            post = np.exp(np.append(planner.gain[ms, w], 0.0))
                            post /= post.sum()
                        counts[ms, w] += n * post[:-1]
                        counts[-1, w] += n * post[-1]
            else:
                for (q, p), n in grouped.items():
                    _, ltags, rtags = planner.align(q, p)
                    for word, tag in zip(itertools.chain(*sides(q)), ltags + rtags, strict=True):
                        j = w_index.get(word)
                        if j is not None:
                            counts[-1 if tag == NULL else m_index[p[tag]], j] += n
            probs = (counts + smoothing) / (counts.sum(axis=1, keepdims=True) + smoothing * len(words))
            gain = np.log(probs[:-1]) - np.log(probs[-1])
            planner = cls(words, moves, gain, schema, max_depth, move_cost, weight)
        return planner


def schema_of(transitions: Iterable[tuple[Move, Iterable[Move | None]]]) -> dict[str, list[str]]:
    """Move key -> the move keys offered after it, from (last move, offered options) pairs."""
    out: dict[str, set[str]] = defaultdict(set)
    for last, offered in transitions:
        out[move_key(last)].update(move_key(o) for o in offered if o is not None)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _logsumexp(values: np.ndarray) -> float:
    top = float(values.max())
    if top == -math.inf:
        return top
    return top + math.log(float(np.exp(values - top).sum()))
