"""Fit a trained decider on decision examples (scikit-learn) and save it as a versioned model folder.

First the coverage model (:class:`~graphwalk_core.decisions.coverage.Coverage`) is fitted on the
training questions' labeled moves: for each question, its longest labeled path (the moves its examples
take, the top target at every step); the path planner (:class:`~graphwalk_core.decisions.plan.Planner`)
on the same paths. Every distinct text is embedded once. A feature row depends only on (masked question,
path, option), so the rows of all examples collapse to distinct rows, each with a positive weight (the
summed target mass it received) and a negative weight (the rest of its occurrences); soft labels from
traces fit the same way. The learner is scikit-learn's ``MLPClassifier`` behind a ``StandardScaler``;
its arrays are exported so inference is plain numpy.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from graphwalk_core.decisions.coverage import Coverage, move_key
from graphwalk_core.decisions.features import BLOCKS, FEATURE_VERSION, SCALARS, distinct_texts, view_features
from graphwalk_core.decisions.plan import Planner, schema_of
from graphwalk_core.decisions.trained import MODEL_FORMAT, DeciderModel, question_key
from graphwalk_core.decisions.views import DecisionView, Move
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.errors import InputError, OptionError
from graphwalk_core.training.examples import KINDS, DecisionExample, examples_hash

#: Row key: (masked question, path, option).
RowKey = tuple[str, tuple[Move, ...], Move | None]


@dataclass(frozen=True)
class FitConfig:
    """Learner settings and the validation split (a deterministic share of question ids)."""

    hidden: tuple[int, ...] = (128,)
    alpha: float = 1e-3
    max_iter: int = 60
    #: Stop when the training loss has not improved by 1e-4 over this many epochs.
    patience: int = 5
    batch_size: int = 256
    validation_fraction: float = 0.1
    seed: int = 0
    name: str = "decider"
    #: Ridge penalty of the coverage model.
    coverage_alpha: float = 1.0
    #: The planner's longest path, per-move cost and weight against the network.
    plan_depth: int = 3
    plan_move_cost: float = 2.0
    plan_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.max_iter < 1:
            raise OptionError("{max_iter} must be at least 1, got {got}", got=self.max_iter)


@dataclass
class FitReport:
    """What a fit did: counts, accuracy per decision kind, seconds, and where the model went."""

    examples: dict[str, int]
    train_accuracy: dict[str, float | None]
    validation_accuracy: dict[str, float | None]
    seconds: dict[str, float] = field(default_factory=dict)
    model_dir: Path | None = None
    model: DeciderModel | None = None


def is_validation(question_id: str, fraction: float) -> bool:
    """A stable pick of about ``fraction`` of the question ids."""
    digest = hashlib.sha256(question_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_examples(
    examples: Sequence[DecisionExample], fraction: float
) -> tuple[list[DecisionExample], list[DecisionExample]]:
    """(train, validation): examples of split ``validation`` and a stable share of question ids held out."""
    train, val = [], []
    for ex in examples:
        held = ex.split == "validation" or is_validation(ex.question_id, fraction)
        (val if held else train).append(ex)
    return train, val


def _rows(examples: Sequence[DecisionExample]) -> tuple[list[RowKey], np.ndarray, np.ndarray]:
    """Distinct row keys (first-seen order), their summed target mass and occurrence counts."""
    index: dict[RowKey, int] = {}
    pos: list[float] = []
    count: list[int] = []
    for ex in examples:
        v = ex.view
        for move, p in zip(v.options, ex.target, strict=True):
            key = (v.question, v.path, move)
            i = index.setdefault(key, len(index))
            if i == len(pos):
                pos.append(0.0)
                count.append(0)
            pos[i] += p
            count[i] += 1
    return list(index), np.array(pos), np.array(count, dtype=np.float64)


def _row_features(
    keys: Sequence[RowKey], vector: Callable[[str], np.ndarray], coverage: Coverage
) -> np.ndarray:
    return np.vstack(
        [view_features(DecisionView(q, path, (move,)), vector, coverage) for q, path, move in keys]
    )


def labeled_paths(examples: Sequence[DecisionExample]) -> dict[str, tuple[str, tuple[Move, ...]]]:
    """Per question id: its masked text and its longest labeled path (each step's top-target move
    appended to the step's path; the first such path of the greatest length)."""
    best: dict[str, tuple[str, tuple[Move, ...]]] = {}
    for ex in examples:
        top = ex.view.options[max(range(len(ex.target)), key=ex.target.__getitem__)]
        full = ex.view.path if top is None else (*ex.view.path, top)
        if ex.question_id not in best or len(full) > len(best[ex.question_id][1]):
            best[ex.question_id] = (ex.view.question, full)
    return best


def fit_coverage(examples: Sequence[DecisionExample], alpha: float = 1.0) -> Coverage:
    """The coverage model of the examples' questions and their labeled paths."""
    paths = labeled_paths(examples).values()
    return Coverage.fit(((q, [move_key(m) for m in path]) for q, path in paths), alpha=alpha)


def fit_planner(examples: Sequence[DecisionExample], config: FitConfig) -> Planner:
    """The path planner of the examples' questions and labeled paths; its schema is what the
    examples were offered after each move."""
    paths = labeled_paths(examples).values()
    schema = schema_of((ex.view.path[-1], ex.view.options) for ex in examples if ex.view.path)
    return Planner.fit(
        ((q, [move_key(m) for m in path]) for q, path in paths),
        schema,
        max_depth=config.plan_depth,
        move_cost=config.plan_move_cost,
        weight=config.plan_weight,
    )


def accuracy(
    examples: Sequence[DecisionExample], score: Callable[[DecisionView], np.ndarray]
) -> dict[str, float | None]:
    """Share of examples whose top-scored option has the target's top mass (ties: any of them), per kind
    and overall."""
    right: dict[str, list[bool]] = {k: [] for k in (*KINDS, "all")}
    for ex in examples:
        scores = score(ex.view)
        ok = ex.target[int(np.argmax(scores))] >= max(ex.target) - 1e-9
        right[ex.kind].append(ok)
        right["all"].append(ok)
    return {k: (sum(v) / len(v) if v else None) for k, v in right.items()}


def fit_decider(
    examples: Sequence[DecisionExample],
    embedder: Embedder,
    *,
    config: FitConfig | None = None,
    out: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    extra_manifest: dict[str, Any] | None = None,
) -> FitReport:
    """Train on ``examples`` (validation held out by question id), save to ``out`` when given."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    config = config or FitConfig()
    if not examples:
        raise InputError("no decision examples to train on")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    train, val = split_examples(examples, config.validation_fraction)
    if not train:
        raise InputError("every example fell in the validation split: nothing to train on")
    if all(ex.kind == "stop" for ex in train):
        raise InputError(
            "no decision example takes a move (every top choice is STOP): nothing to learn which moves a "
            "question asks for"
        )

    texts = distinct_texts(ex.view for ex in examples)
    vectors = np.empty((len(texts), embedder.dim), dtype=np.float32)
    step = 512
    for i in range(0, len(texts), step):
        vectors[i : i + step] = embedder.embed(texts[i : i + step])
        if progress is not None:
            progress("embed", min(i + step, len(texts)), len(texts))
    lookup = dict(zip(texts, vectors, strict=True))
    seconds["embed"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    coverage = fit_coverage(train, config.coverage_alpha)
    planner = fit_planner(train, config)
    keys, pos, count = _rows(train)
    x = _row_features(keys, lookup.__getitem__, coverage)
    neg = count - pos
    rows = np.concatenate([np.flatnonzero(pos > 1e-12), np.flatnonzero(neg > 1e-12)])
    y_fit = np.concatenate([np.ones(int((pos > 1e-12).sum())), np.zeros(int((neg > 1e-12).sum()))])
    w_fit = np.concatenate([pos[pos > 1e-12], neg[neg > 1e-12]])
    if len(set(y_fit.tolist())) < 2:
        raise InputError("the examples' targets never (or always) pick an option: nothing to learn")
    scaler = StandardScaler().fit(x, sample_weight=count)
    scale = np.where(scaler.scale_ > 1e-6, scaler.scale_, 1.0).astype(np.float32)
    mean = scaler.mean_.astype(np.float32)
    x -= mean  # scaled in place: the features are the run's largest array
    x /= scale
    mlp = MLPClassifier(
        hidden_layer_sizes=config.hidden,
        alpha=config.alpha,
        batch_size=min(config.batch_size, len(y_fit)),
        random_state=config.seed,
    )
    rng = np.random.default_rng(config.seed)
    weights = w_fit / w_fit.mean()
    losses: list[float] = []
    for epoch in range(config.max_iter):  # one pass per call, shuffled here, for progress and a stop rule
        order = rng.permutation(len(rows))
        mlp.partial_fit(x[rows[order]], y_fit[order], classes=[0.0, 1.0], sample_weight=weights[order])
        losses.append(float(mlp.loss_))
        if progress is not None:
            progress("fit", epoch + 1, config.max_iter)
        if (
            len(losses) > config.patience
            and losses[-config.patience - 1] - min(losses[-config.patience :]) < 1e-4
        ):
            break
    seconds["fit"] = time.perf_counter() - t1

    learner = {
        "class": "sklearn.neural_network.MLPClassifier",
        "hidden_layer_sizes": list(config.hidden),
        "alpha": config.alpha,
        "batch_size": config.batch_size,
        "max_iter": config.max_iter,
        "epochs": len(losses),
        "final_loss": round(losses[-1], 6),
        "random_state": config.seed,
        "scaler": "StandardScaler",
    }
    model_manifest: dict[str, Any] = {
        "format": MODEL_FORMAT,
        "name": config.name,
        "embedder": embedder.model_id,
        "embedder_dim": embedder.dim,
        "features": {"version": FEATURE_VERSION, "blocks": list(BLOCKS), "scalars": list(SCALARS)},
        "coverage": coverage.manifest(),
        "plan": planner.manifest(),
        "learner": learner,
        "data_hash": examples_hash(examples),
        "validation_fraction": config.validation_fraction,
        "relations": sorted({m[0] for ex in train for m in ex.view.options if m is not None}),
        "libraries": {lib: version(lib) for lib in ("scikit-learn", "numpy", "graphwalk")},
    }
    model = DeciderModel(
        mean=mean,
        scale=scale,
        weights=tuple(w.astype(np.float32) for w in mlp.coefs_),
        biases=tuple(b.astype(np.float32) for b in mlp.intercepts_),
        coverage=coverage,
        planner=planner,
        manifest=model_manifest,
        questions=tuple(sorted({question_key(ex.question_id, ex.question) for ex in examples})),
    )

    t2 = time.perf_counter()
    cache: dict[RowKey, float] = dict(zip(keys, model.scaled_logits(x).tolist(), strict=True))

    def logit(key: RowKey) -> float:
        if key not in cache:
            cache[key] = float(model.logits(_row_features([key], lookup.__getitem__, coverage))[0])
        return cache[key]

    def score(view: DecisionView) -> np.ndarray:
        logits = np.array([logit((view.question, view.path, m)) for m in view.options])
        return model.combine(view, logits)

    counts = {"examples": len(examples), "train": len(train), "validation": len(val), "rows": len(keys)}
    counts |= {f"source_{s}": sum(1 for ex in examples if ex.source == s) for s in ("weak", "trace")}
    for name, part in (("train", train), ("validation", val)):
        counts[f"questions_{name}"] = len({ex.question_id for ex in part})
    train_acc, val_acc = accuracy(train, score), accuracy(val, score)
    seconds["evaluate"] = time.perf_counter() - t2
    model.manifest["counts"] = counts
    model.manifest["train_accuracy"] = train_acc
    model.manifest["validation_accuracy"] = val_acc
    model.manifest.update(extra_manifest or {})
    if out is not None:
        model.save(out)
    return FitReport(counts, train_acc, val_acc, seconds, out, model)
