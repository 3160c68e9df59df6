"""A scriptable, seeded decision backend for tests: no network, no key, deterministic."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping
from typing import TypeAlias

import numpy as np

from graphwalk_core.decisions.base import (
    JEV_MAX_OPTIONS,
    ChoiceQuestion,
    ChoiceResult,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    JSONContent,
    Usage,
    choice_confidence,
    normalize_distribution,
    top_label,
)
from graphwalk_core.model.hashing import canonical_json

Distribution: TypeAlias = dict[str, float]
ScriptFn: TypeAlias = Callable[[ChoiceQuestion, JSONContent], Mapping[str, float] | None]
#: A callable, or a mapping from question key to a fixed distribution.
Script: TypeAlias = ScriptFn | Mapping[str, Mapping[str, float]]
RaiseOn: TypeAlias = Callable[[ChoiceQuestion], bool] | Collection[str]

#: Fake usage reported per question; output tokens per question.
FAKE_INPUT_TOKENS_PER_QUESTION = 100
FAKE_OUTPUT_TOKENS_PER_QUESTION = 10


def dirichlet_draw(seed: int, question: ChoiceQuestion, state: JSONContent, alpha: float) -> Distribution:
    """A Dirichlet draw over the offered labels, seeded by (seed, question, state) only."""
    material = canonical_json([seed, question.key, question.instructions, question.options, state])
    rng_seed = int.from_bytes(hashlib.sha256(material.encode("utf-8")).digest()[:8], "big")
    rng = np.random.default_rng(rng_seed)
    draw = rng.dirichlet([alpha] * len(question.options))
    return {label: float(p) for label, p in zip(question.options, draw, strict=True)}


class FakeDecisionBackend:
    """Answers from ``script`` when it has an answer, else from a seeded Dirichlet draw.

    ``script`` is a callable ``(question, state) -> dist | None`` or a mapping ``question key -> dist``.
    Every request is recorded in ``requests``. ``fail_after=N`` makes every call after the N-th raise
    :class:`DecisionError`; ``raise_on`` (question keys, or a predicate on the question) raises for
    matching questions. Usage is fixed per question, cost is ``None`` and latency is 0.
    """

    def __init__(
        self,
        seed: int = 0,
        script: Script | None = None,
        *,
        alpha: float = 1.0,
        fail_after: int | None = None,
        raise_on: RaiseOn | None = None,
        max_options: int = JEV_MAX_OPTIONS,
    ) -> None:
        if alpha <= 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        if fail_after is not None and fail_after < 0:
            raise ValueError(f"fail_after must be >= 0, got {fail_after}")
        self.seed = seed
        self.script = script
        self.alpha = alpha
        self.fail_after = fail_after
        self.raise_on = raise_on
        self._max_options = max_options
        self.requests: list[DecisionRequest] = []

    @property
    def model_id(self) -> str:
        return f"fake:seed={self.seed}"

    @property
    def max_options(self) -> int:
        return self._max_options

    @property
    def calls(self) -> int:
        """How many calls were made (including failed ones)."""
        return len(self.requests)

    @property
    def questions(self) -> list[ChoiceQuestion]:
        """Every question asked, in order."""
        return [q for r in self.requests for q in r.questions]

    def _should_raise(self, question: ChoiceQuestion) -> bool:
        if self.raise_on is None:
            return False
        if callable(self.raise_on):
            return bool(self.raise_on(question))
        return question.key in self.raise_on

    def _scripted(self, question: ChoiceQuestion, state: JSONContent) -> Mapping[str, float] | None:
        if self.script is None:
            return None
        if callable(self.script):
            return self.script(question, state)
        return self.script.get(question.key)

    def answer(self, question: ChoiceQuestion, state: JSONContent) -> ChoiceResult:
        """The (normalized) answer to one question, without recording a request."""
        if len(question.options) > self._max_options:
            raise DecisionError(
                f"question {question.key!r}: {len(question.options)} options exceed the limit "
                f"of {self._max_options}"
            )
        raw = self._scripted(question, state)
        if raw is None:
            raw = dirichlet_draw(self.seed, question, state, self.alpha)
        probs = normalize_distribution(list(question.options), dict(raw), key=question.key)
        return ChoiceResult(
            key=question.key,
            probabilities=probs,
            top=top_label(probs),
            confidence=choice_confidence(probs),
        )

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        """Record ``request`` and answer every question in it."""
        self.requests.append(request)
        if self.fail_after is not None and len(self.requests) > self.fail_after:
            raise DecisionError(f"fake backend told to fail after {self.fail_after} call(s)")
        for q in request.questions:
            if self._should_raise(q):
                raise DecisionError(f"fake backend told to raise on question {q.key!r}")
        results = {q.key: self.answer(q, request.state) for q in request.questions}
        n = len(request.questions)
        return DecisionResponse(
            results=results,
            usage=Usage(
                input_tokens=FAKE_INPUT_TOKENS_PER_QUESTION * n,
                output_tokens=FAKE_OUTPUT_TOKENS_PER_QUESTION * n,
                cost_usd=None,
            ),
            latency_s=0.0,
            model=self.model_id,
            request_id=f"fake-{len(self.requests)}",
            provider="fake",
        )
