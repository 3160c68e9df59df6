"""A decider trained on decision examples: a small MLP over coverage features and embedder vectors, times a
path planner's distribution (a product of experts, :mod:`graphwalk_core.decisions.plan`).

The model folder (written by :mod:`graphwalk_core.training.fit`) holds ``weights.npz`` (the feature
scaler, the network's layers, the coverage model's weights and the path planner's gains),
``questions.json`` (the questions it learned from, :func:`question_key`) and ``manifest.json``
(format, embedder id, training data hash, example counts, validation metrics, library versions). The
network's inference is two matrix products in numpy; the question, path and option texts are embedded
once and cached by content, so a walk embeds its question once and known option texts never again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import zipfile
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from graphwalk_core.blas import one_blas_thread
from graphwalk_core.decisions.base import (
    ChoiceResult,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    Usage,
    choice_confidence,
    normalize_distribution,
    top_label,
)
from graphwalk_core.decisions.coverage import Coverage
from graphwalk_core.decisions.features import FEATURE_VERSION, distinct_texts, n_features, view_features
from graphwalk_core.decisions.local import softmax
from graphwalk_core.decisions.plan import Planner
from graphwalk_core.decisions.views import DecisionView, view_of
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.errors import ConfigError
from graphwalk_core.files import atomic_path, write_text_atomic

#: The model folder's format; a folder of another format (an older feature set) is refused.
MODEL_FORMAT = "graphwalk-trained-decider/4"
MANIFEST = "manifest.json"
WEIGHTS = "weights.npz"
#: The questions a model learned from (:func:`question_key`; plain ids in folders saved before keys were),
#: a JSON list (folders saved before it have none).
QUESTIONS = "questions.json"


def question_key(question_id: str, text: str) -> str:
    """A learned question as ``questions.json`` lists it: ``<id>#<12 hex digits of its text's sha256>``, so
    another dataset's question that reuses the id (custom files number theirs q00001, q00002, …) is not
    taken for it."""
    return f"{question_id}#{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def learned_ids(folder: Path) -> list[str] | None:
    """The questions (keys) the model in ``folder`` learned from; None for a folder saved before
    models kept them. An unreadable list is a ConfigError naming the file."""
    path = folder / QUESTIONS
    if not path.is_file():
        return None
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable list of learned questions ({exc})") from exc
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ConfigError(f"{path}: not a JSON list of question keys")
    return ids


def read_manifest(path: Path) -> dict[str, Any]:
    """A model's ``manifest.json``; one that is no JSON object is a ConfigError naming the file."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(manifest, dict):
        raise ConfigError(f"{path}: not a JSON object")
    return manifest


@dataclass(frozen=True)
class DeciderModel:
    """Coverage model, scaler + MLP layers (ReLU hidden, one logit out), path planner and the manifest
    describing them."""

    mean: np.ndarray
    scale: np.ndarray
    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    coverage: Coverage
    planner: Planner
    manifest: dict[str, Any]
    #: the keys (:func:`question_key`) of the questions its examples came from (validation ones included),
    #: sorted; None: not known (a folder saved before models kept them), which is not "none" (an empty
    #: list refuses nothing)
    questions: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        """``<name>@<fingerprint[:12]>``: another model (even one trained on the same examples) has another
        one, the name of its folder in a warehouse (``warehouse.models.model_folder``)."""
        return f"{self.manifest.get('name', 'decider')}@{self.fingerprint[:12]}"

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over the weights and the manifest: changes whenever the model does."""
        digest = hashlib.sha256(json.dumps(self.manifest, sort_keys=True).encode())
        arrays = (self.coverage.arrays() | self.planner.arrays()).values()
        for array in (self.mean, self.scale, *self.weights, *self.biases, *arrays):
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()

    def logits(self, x: np.ndarray) -> np.ndarray:
        """One score per row of features."""
        return self.scaled_logits((x - self.mean) / self.scale)

    def scaled_logits(self, h: np.ndarray) -> np.ndarray:
        """One score per row of already standardized features."""
        for w, b in zip(self.weights[:-1], self.biases[:-1], strict=True):
            h = np.maximum(h @ w + b, 0.0)
        return (h @ self.weights[-1] + self.biases[-1])[:, 0]

    def save(self, folder: Path) -> Path:
        """Write ``weights.npz``, ``questions.json`` (when the questions are known; a list left by an
        earlier model is removed otherwise) and ``manifest.json`` into ``folder`` (created); returns the
        folder. A folder is a model once it has a manifest: an earlier model's goes first and the new one
        last (each file replaced whole), so a save cut short leaves no model, never a mix of two."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST).unlink(missing_ok=True)
        arrays = {"mean": self.mean, "scale": self.scale}
        arrays |= {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays |= {f"b{i}": b for i, b in enumerate(self.biases)}
        arrays |= self.coverage.arrays() | self.planner.arrays()
        with atomic_path(folder / WEIGHTS) as tmp, tmp.open("wb") as f:
            np.savez(f, **arrays)
        if self.questions is None:
            (folder / QUESTIONS).unlink(missing_ok=True)
        else:
            write_text_atomic(json.dumps(list(self.questions)) + "\n", folder / QUESTIONS)
        write_text_atomic(json.dumps(self.manifest, indent=2, sort_keys=True) + "\n", folder / MANIFEST)
        return folder

    @classmethod
    def load(cls, folder: Path) -> DeciderModel:
        """Read a model folder; a missing or foreign folder is a ConfigError naming the file."""
        manifest_path, weights_path = folder / MANIFEST, folder / WEIGHTS
        if not manifest_path.is_file() or not weights_path.is_file():
            raise ConfigError(f"{folder}: not a trained decider (needs {MANIFEST} and {WEIGHTS})")
        manifest = read_manifest(manifest_path)
        if manifest.get("format") != MODEL_FORMAT:
            raise ConfigError(
                f"{manifest_path}: format {manifest.get('format')!r}, expected {MODEL_FORMAT!r} "
                f"(features {FEATURE_VERSION!r}): a model of an older graphwalk; retrain it with "
                "`graphwalk train decider`"
            )
        try:
            with np.load(weights_path) as npz:
                n_layers = sum(1 for k in npz.files if re.fullmatch(r"w\d+", k))
                weights = tuple(npz[f"w{i}"] for i in range(n_layers))
                biases = tuple(npz[f"b{i}"] for i in range(n_layers))
                mean, scale = npz["mean"], npz["scale"]
                saved = {k: npz[k] for k in npz.files}
                coverage = Coverage.from_saved(manifest["coverage"], saved)
                planner = Planner.from_saved(manifest["plan"], saved)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise ConfigError(f"{weights_path}: unreadable weights ({exc})") from exc
        learned = learned_ids(folder)
        questions = None if learned is None else tuple(learned)
        return cls(mean, scale, weights, biases, coverage, planner, manifest, questions)

    def scores(self, view: DecisionView, features: np.ndarray) -> np.ndarray:
        """Per option of ``view`` (its feature rows), the combined log probability (:meth:`combine`)."""
        return self.combine(view, self.logits(features))

    def combine(self, view: DecisionView, logits: np.ndarray) -> np.ndarray:
        """The network's log probabilities times the plan's to the power of its weight (a product of
        experts), renormalized by the caller's softmax; the network's alone where the planner abstains or
        weighs nothing (0 * -inf would be NaN)."""
        log_p = logits - logits.max()
        log_p -= np.log(np.exp(log_p).sum())
        if self.planner.weight == 0:
            return log_p
        planned = self.planner.distribution(view.question, view.path, view.options)
        return log_p if planned is None else log_p + self.planner.weight * planned


class TrainedDecisionBackend:
    """Scores every option (STOP included) with a trained model; a full distribution like any backend."""

    def __init__(
        self,
        model: DeciderModel,
        embedder: Embedder,
        *,
        stop_labels: Collection[str] = ("STOP",),
        max_options: int = 255,
        cache_size: int = 50_000,
    ) -> None:
        trained_with = model.manifest.get("embedder")
        if trained_with != embedder.model_id:
            raise ConfigError(
                f"the trained decider was trained with embedder {trained_with!r} but this run embeds "
                f"with {embedder.model_id!r}: retrain it, or configure that embedder"
            )
        if model.mean.shape != (n_features(embedder.dim),):
            raise ConfigError(
                f"the trained decider expects {model.mean.shape[0]} features; embedder dim "
                f"{embedder.dim} gives {n_features(embedder.dim)} (features {FEATURE_VERSION!r})"
            )
        self.model = model
        self.embedder = embedder
        self.stop_labels = frozenset(stop_labels)
        self._max_options = max_options
        self.cache = VectorCache(cache_size)

    @classmethod
    def load(cls, folder: Path, embedder: Embedder, **kwargs: Any) -> TrainedDecisionBackend:
        return cls(DeciderModel.load(folder), embedder, **kwargs)

    @property
    def model_id(self) -> str:
        return f"trained:{self.model.name}:{self.embedder.model_id}"

    @property
    def model_fingerprint(self) -> str:
        """The model's content fingerprint (eval run ids change with it; see ``model_fingerprint``)."""
        return self.model.fingerprint

    @property
    def max_options(self) -> int:
        return self._max_options

    def __repr__(self) -> str:
        return f"TrainedDecisionBackend({self.model_id!r})"

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        started = time.perf_counter()
        for q in request.questions:
            if len(q.options) > self._max_options:
                raise DecisionError(
                    f"question {q.key!r}: {len(q.options)} options exceed the limit of {self._max_options}"
                )
        views = [view_of(request.state, q, self.stop_labels) for q in request.questions]
        texts = distinct_texts(views)
        matrix = self.cache.embed_through(texts, self.embedder.dim, self.embedder.embed)
        vecs = dict(zip(texts, matrix, strict=True))
        # a few rows times one small layer: BLAS threads only add waiting (200 ms a call on a busy machine)
        with one_blas_thread():
            logits = [
                self.model.scores(view, view_features(view, vecs.__getitem__, self.model.coverage))
                for view in views
            ]
        results = {}
        for q, scores in zip(request.questions, logits, strict=True):
            labels = list(q.options)
            raw = dict(zip(labels, softmax(scores, 1.0).tolist(), strict=True))
            dist = normalize_distribution(labels, raw, key=q.key)
            results[q.key] = ChoiceResult(
                key=q.key, probabilities=dist, top=top_label(dist), confidence=choice_confidence(dist)
            )
        return DecisionResponse(
            results=results,
            usage=Usage(),
            latency_s=time.perf_counter() - started,
            model=self.model_id,
            provider="trained",
        )
