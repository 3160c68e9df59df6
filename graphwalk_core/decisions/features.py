"""Feature rows of a trained decider: one per offered move (STOP included) of a :class:`DecisionView`.

For an option ``o`` of a decision with masked question ``q`` and path so far ``p`` (all embedded by the
offline embedder): ``[q, p, o, q*o, p*o]`` followed by a few scalars, among them the zero-shot local
scorer's own signals (``cos(q, o)`` and the gain ``cos(q, p; o) - cos(q, p)``), so a relation the model
never saw still scores by how well its words match the question. A row depends only on (question,
path, option), so training rows deduplicate across questions of one template.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from graphwalk_core.decisions.views import DecisionView, move_text, path_text

#: The embedding blocks, in column order.
BLOCKS = ("question", "path", "option", "question*option", "path*option")
#: Names of the scalar features, in column order after the five embedding blocks.
SCALARS = (
    "is_stop",
    "is_reverse",
    "walks_back",
    "depth",
    "cos_question_option",
    "gain",
    "cos_question_path",
)


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


def view_features(view: DecisionView, vector: Callable[[str], np.ndarray]) -> np.ndarray:
    """The ``(n_options, n_features)`` matrix of one view; ``vector(text)`` gives a unit embedding."""
    last = view.path[-1] if view.path else None
    here = path_text(view.path)
    q, p = vector(view.question), vector(here)
    n = len(view.options)
    moves = [move_text(m, last) for m in view.options]
    o = np.stack([vector(t) for t in moves])
    c = np.stack(
        [vector(f"{here}; {t}") if m is not None else p for m, t in zip(view.options, moves, strict=True)]
    )
    cos_qp = float(p @ q)
    scalars = np.empty((n, len(SCALARS)), dtype=np.float32)
    scalars[:, 0] = [m is None for m in view.options]
    scalars[:, 1] = [m is not None and m[1] == "in" for m in view.options]
    scalars[:, 2] = [
        m is not None and last is not None and m[0] == last[0] and m[1] != last[1] for m in view.options
    ]
    scalars[:, 3] = len(view.path)
    scalars[:, 4] = o @ q
    scalars[:, 5] = c @ q - cos_qp
    scalars[:, 6] = cos_qp
    qs = np.broadcast_to(q, o.shape)
    ps = np.broadcast_to(p, o.shape)
    return np.hstack([qs, ps, o, qs * o, ps * o, scalars]).astype(np.float32, copy=False)


def distinct_texts(views: Iterable[DecisionView]) -> list[str]:
    """Every text the views need, each once, in first-seen order."""
    return list(dict.fromkeys(t for v in views for t in view_texts(v)))
