"""Answer-set metrics (SQuAD-style normalization), latency percentiles and bootstrap intervals.

Definitions (also in docs/eval-tables.md):

- ``normalize_answer``: lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace.
- An answer *set* is the normalized answers with empty strings and duplicates removed; a prediction
  keeps its order (its first element is the top answer).
- Empty gold: every metric is 1.0 when the prediction is empty too, else 0.0. Non-empty gold with an
  empty prediction scores 0.0 everywhere.
- ``exact`` matching (entity-set datasets such as MetaQA): two answers match when their normalized forms
  are equal. EM = 1 when the two sets are equal. F1 = harmonic mean of set precision |P∩G|/|P| and set
  recall |P∩G|/|G|. hits@1 = 1 when the top prediction is in the gold set.
- ``token`` matching (free-text datasets such as HotpotQA and 2Wiki): as above, but a pair of answers
  earns its SQuAD token F1 instead of 0/1. Precision is the mean over predictions of the best token F1
  against any gold answer, recall the mean over gold answers of the best token F1 against any
  prediction. With one predicted and one gold answer, F1 is the HotpotQA/2Wiki scripts' F1: SQuAD's
  token F1, except that a pair where either side is ``yes``, ``no`` or ``noanswer`` scores 1 only when
  equal, else 0 (``"No Doubt"`` earns nothing against ``"no"``). EM and hits@1 still need exact
  normalized equality.
- ``aliases`` (SQuAD-style references: gold texts that are alternatives for one answer, not a set to
  predict in full): each measure is its best against any single reference (SQuAD's
  ``metric_max_over_ground_truths``).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Literal

import numpy as np

MatchMode = Literal["exact", "token"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
#: Answers the official HotpotQA and 2Wiki F1 scores all or nothing (no partial token credit).
_ALL_OR_NOTHING = frozenset({"yes", "no", "noanswer"})


@lru_cache(maxsize=1 << 17)
def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, no punctuation, no articles, single spaces."""
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_set(answers: Iterable[str]) -> list[str]:
    """Normalized answers in first-seen order, empties and duplicates removed."""
    seen: dict[str, None] = {}
    for answer in answers:
        norm = normalize_answer(answer)
        if norm:
            seen.setdefault(norm, None)
    return list(seen)


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 between two already-normalized answers; 0 when either is yes/no/noanswer and the
    other differs (the HotpotQA and 2Wiki scripts' rule)."""
    if prediction != gold and (prediction in _ALL_OR_NOTHING or gold in _ALL_OR_NOTHING):
        return 0.0
    pred_tokens, gold_tokens = prediction.split(), gold.split()
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _empty_case(pred: list[str], gold: list[str]) -> float | None:
    if not gold:
        return 1.0 if not pred else 0.0
    if not pred:
        return 0.0
    return None


def _em(pred: list[str], gold: list[str]) -> float:
    empty = _empty_case(pred, gold)
    if empty is not None:
        return empty
    return 1.0 if set(pred) == set(gold) else 0.0


def _f1(pred: list[str], gold: list[str], match: MatchMode) -> float:
    if match not in ("exact", "token"):
        raise ValueError(f"unknown match mode {match!r}; use 'exact' or 'token'")
    empty = _empty_case(pred, gold)
    if empty is not None:
        return empty
    if match == "exact":
        common = len(set(pred) & set(gold))
        precision, recall = common / len(pred), common / len(gold)
    else:
        precision = sum(max(token_f1(p, g) for g in gold) for p in pred) / len(pred)
        recall = sum(max(token_f1(p, g) for p in pred) for g in gold) / len(gold)
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _hits(pred: list[str], gold: list[str]) -> float:
    empty = _empty_case(pred, gold)
    if empty is not None:
        return empty
    return 1.0 if pred[0] in set(gold) else 0.0


def exact_match(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """1.0 when the normalized answer sets are equal."""
    return _em(answer_set(predicted), answer_set(gold))


def f1_score(predicted: Sequence[str], gold: Sequence[str], *, match: MatchMode = "exact") -> float:
    """Set F1 (``exact``) or soft token-level set F1 (``token``); see the module docstring."""
    return _f1(answer_set(predicted), answer_set(gold), match)


def hits_at_1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """1.0 when the top (first) prediction is a gold answer."""
    return _hits(answer_set(predicted), answer_set(gold))


def answer_scores(
    predicted: Sequence[str], gold: Sequence[str], *, match: MatchMode = "exact", aliases: bool = False
) -> tuple[float, float, float]:
    """(EM, F1, hits@1), normalizing each answer once; ``aliases``: the best against any one gold text."""
    pred, gold_set = answer_set(predicted), answer_set(gold)
    if aliases and gold_set:
        per = [_scores(pred, [g], match) for g in gold_set]
        return max(s[0] for s in per), max(s[1] for s in per), max(s[2] for s in per)
    return _scores(pred, gold_set, match)


def _scores(pred: list[str], gold: list[str], match: MatchMode) -> tuple[float, float, float]:
    return _em(pred, gold), _f1(pred, gold, match), _hits(pred, gold)


#: The retrieval budgets every text eval scores (recall@k of the gold supporting passages).
RECALL_KS = (2, 5, 10)


def recall_at(retrieved: Sequence[str], supporting: Sequence[str], k: int) -> float:
    """Share of the supporting passages among the first ``k`` distinct retrieved ones (1 if none needed)."""
    support = list(dict.fromkeys(supporting))
    if not support:
        return 1.0
    top = set(list(dict.fromkeys(retrieved))[:k])
    return sum(s in top for s in support) / len(support)


def retrieval_scores(retrieved: Sequence[str], supporting: Sequence[str]) -> dict[str, float | bool]:
    """``recall_at_2/5/10`` and ``all_supporting_at_10`` (every supporting passage in the first 10)."""
    scores: dict[str, float | bool] = {
        f"recall_at_{k}": recall_at(retrieved, supporting, k) for k in RECALL_KS
    }
    scores["all_supporting_at_10"] = scores["recall_at_10"] == 1.0
    return scores


def linking_correct(linked: Sequence[str] | None, gold_start: str | None) -> bool | None:
    """Whether the first linked start is the gold start; None when either is unknown.

    A system that reports an empty link (it found no entry node) is a linking miss.
    """
    if linked is None or gold_start is None:
        return None
    if not linked:
        return False
    return normalize_answer(linked[0]) == normalize_answer(gold_start)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation, numpy's default); None for no values."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the non-None values; None when there are none."""
    present = [v for v in values if v is not None]
    return float(sum(present) / len(present)) if present else None


def cost_per_1k(costs: Sequence[float | None]) -> float | None:
    """Provider-reported cost per 1,000 questions: the mean of the reported costs × 1000.

    None when no question reported a cost (nothing is ever estimated).
    """
    mean = mean_or_none(costs)
    return None if mean is None else mean * 1000.0


def bootstrap_ci(
    values: Sequence[float], *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (seeded); None for no values."""
    if len(values) == 0:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(data), size=(n_resamples, len(data)))
    means = data[idx].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)
