"""Feature rows of a trained decider: one per offered move (STOP included) of a :class:`DecisionView`.

The features are about coverage, never about depth or the shape of the path, so a model trained on
short questions still walks a longer one (see :mod:`graphwalk_core.decisions.coverage`). For an option
``o`` of a decision with masked question ``q`` and path so far ``p`` (embedded by the offline
embedder): the blocks ``[o, q*o]`` (zero for STOP, whose score may not depend on which question it is,
only on what is left uncovered), then scalars: is STOP, reverse direction, walks the last hop back,
the zero-shot local scorer's own signals (``cos(q, o)`` and the gain ``cos(q, p; o) - cos(q, p)``),
so a relation the model never saw still scores by how well its words match the question, and the
coverage model's :data:`~graphwalk_core.decisions.coverage.COVERAGE_SCALARS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from graphwalk_core.decisions.coverage import COVERAGE_SCALARS, Coverage
from graphwalk_core.decisions.views import DecisionView, move_text, path_text

#: The feature set's id; a model of another one is refused.
FEATURE_VERSION = "coverage-3"
#: The embedding blocks, in column order.
BLOCKS = ("option", "question*option")
#: Names of the scalar features, in column order after the embedding blocks.
SCALARS = ("is_stop", "is_reverse", "walks_back", "cos_question_option", "gain", *COVERAGE_SCALARS)


def view_texts(view: DecisionView) -> list[str]:
    """Every text a view needs embedded: question, path, per option its move and path-plus-move."""
    last = view.path[-1] if view.path else None
    here = path_text(view.path)
    texts = [view.question, here]
    for move in view.options:
        text = move_text(move, last)
        texts += [text, f"{here}; {text}" if move is not None else here]
    return texts


def n_features(dim: int) -> int:
    return len(BLOCKS) * dim + len(SCALARS)


def view_features(view: DecisionView, vector: Callable[[str], np.ndarray], coverage: Coverage) -> np.ndarray:
    """The ``(n_options, n_features)`` matrix of one view; ``vector(text)`` gives a unit embedding."""
    last = view.path[-1] if view.path else None
    here = path_text(view.path)
    q, p = vector(view.question), vector(here)
    moves = [move_text(m, last) for m in view.options]
    o = np.stack([vector(t) for t in moves])
    c = np.stack(
        [vector(f"{here}; {t}") if m is not None else p for m, t in zip(view.options, moves, strict=True)]
    )
    stop = np.array([m is None for m in view.options])
    n_base = len(SCALARS) - len(COVERAGE_SCALARS)
    scalars = np.empty((len(view.options), len(SCALARS)), dtype=np.float32)
    scalars[:, 0] = stop
    scalars[:, 1] = [m is not None and m[1] == "in" for m in view.options]
    scalars[:, 2] = [
        m is not None and last is not None and m[0] == last[0] and m[1] != last[1] for m in view.options
    ]
    scalars[:, 3] = o @ q
    scalars[:, 4] = c @ q - float(p @ q)
    scalars[:, n_base:] = coverage.scalars(view.question, view.path, view.options)
    blocks = np.hstack([o, o * q])
    blocks[stop] = 0.0
    return np.hstack([blocks, scalars]).astype(np.float32, copy=False)


def distinct_texts(views: Iterable[DecisionView]) -> list[str]:
    """Every text the views need, each once, in first-seen order."""
    return list(dict.fromkeys(t for v in views for t in view_texts(v)))
