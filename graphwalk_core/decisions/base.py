"""The decision contract: choice questions in, full probability distributions out."""

from __future__ import annotations

import logging
import math
from typing import Any, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphwalk_core.errors import BackendError
from graphwalk_core.model.usage import Usage

log = logging.getLogger(__name__)

JSONContent: TypeAlias = str | dict[str, Any] | list[Any]

#: Jev's documented option limit per choice question.
JEV_MAX_OPTIONS = 255


class ChoiceQuestion(BaseModel):
    """One choice question. Labels are short and unique; descriptions carry the meaning."""

    model_config = ConfigDict(frozen=True)

    key: str
    instructions: JSONContent | None = None
    options: dict[str, JSONContent | None]

    @field_validator("options")
    @classmethod
    def _at_least_two(cls, v: dict[str, JSONContent | None]) -> dict[str, JSONContent | None]:
        if len(v) < 2:
            raise ValueError(f"a choice question needs at least 2 options, got {len(v)}")
        return v


class DecisionRequest(BaseModel):
    """One call: a shared ``state`` and one or more named questions."""

    model_config = ConfigDict(frozen=True)

    state: JSONContent
    questions: list[ChoiceQuestion] = Field(min_length=1)

    @field_validator("questions")
    @classmethod
    def _unique_keys(cls, v: list[ChoiceQuestion]) -> list[ChoiceQuestion]:
        keys = [q.key for q in v]
        duplicates = sorted({k for k in keys if keys.count(k) > 1})
        if duplicates:
            raise ValueError(f"question keys must be unique within a request, repeated: {duplicates}")
        return v


class ChoiceResult(BaseModel):
    """A distribution over exactly the offered labels, summing to 1, in offer order."""

    key: str
    probabilities: dict[str, float]
    top: str
    confidence: float | None = None


class DecisionResponse(BaseModel):
    results: dict[str, ChoiceResult]
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""
    request_id: str | None = None
    provider: str | None = None


class DecisionError(BackendError):
    """The decision backend failed (after retries) or broke the contract.

    ``usage``: what a reply that broke the contract still cost (it was billed all the same). ``status``:
    the HTTP status the backend last answered with, when it refused the call.
    """

    def __init__(self, message: str, usage: Usage | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else Usage()
        self.status = status

    @property
    def refused(self) -> bool:
        """The key was refused, or its credits are spent: no retry or fallback helps until the user acts."""
        return self.status in (401, 402, 403)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.usage, self.status)


@runtime_checkable
class DecisionBackend(Protocol):
    """Anything that answers choice questions with full distributions."""

    @property
    def model_id(self) -> str:
        """Identity recorded in traces and eval runs (e.g. ``jev:jev-1.13.0``, ``local:...``)."""

    @property
    def max_options(self) -> int: ...

    async def decide(self, request: DecisionRequest) -> DecisionResponse: ...


async def close_decider(decider: object) -> None:
    """Close what ``decider`` opened in the running event loop (a Jev decider's HTTP client; the others
    open none). The code that runs a loop calls it before the loop ends: the connections would otherwise
    stay open, one client per loop, until garbage collection. The decider stays usable in other loops."""
    aclose = getattr(decider, "aclose", None)
    if aclose is not None:
        await aclose()


def model_fingerprint(decider: DecisionBackend) -> str | None:
    """The content fingerprint of the model file a decider answers with, or None (no model file).

    Hook for trained deciders (``GRAPHWALK_DECIDER_MODEL``): a backend that loads weights exposes
    ``model_fingerprint`` (a property or method returning e.g. the sha256 of its file). Eval systems put
    it in their identity, so the eval run id changes, and answers are redone, when the model changes.
    """
    value = getattr(decider, "model_fingerprint", None)
    return value() if callable(value) else value


def normalize_distribution(offered: list[str], raw: dict[str, float], *, key: str = "?") -> dict[str, float]:
    """Enforce the contract on a backend's distribution.

    - A label that was not offered is an error.
    - An offered label that is missing gets 0 (with a warning).
    - The result is renormalized to sum to 1, keyed in offer order.
    - An all-zero (or negative, NaN or infinite) distribution is an error.
    """
    unknown = [label for label in raw if label not in offered]
    if unknown:
        raise DecisionError(f"question {key!r}: backend returned labels that were not offered: {unknown}")
    missing = [label for label in offered if label not in raw]
    if missing:
        log.warning("question %r: labels missing from the distribution, taken as 0: %s", key, missing)
    values = [float(raw.get(label, 0.0)) for label in offered]
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise DecisionError(f"question {key!r}: invalid probabilities {raw}")
    total = sum(values)
    if math.isinf(total):  # finite values, too large to add: scaled down first
        values = [v / max(values) for v in values]
        total = sum(values)
    if total <= 0:
        raise DecisionError(f"question {key!r}: the distribution has no mass: {raw}")
    return {label: v / total for label, v in zip(offered, values, strict=True)}


def top_label(probabilities: dict[str, float]) -> str:
    """The most probable label; ties break by offer (insertion) order."""
    best_label, best_p = "", -1.0
    for label, p in probabilities.items():
        if p > best_p:
            best_label, best_p = label, p
    return best_label


def choice_confidence(probabilities: dict[str, float]) -> float:
    """TypeSafe's normalized choice confidence: (n * p_max - 1) / (n - 1)."""
    n = len(probabilities)
    if n < 2:
        return 1.0
    return (n * max(probabilities.values()) - 1) / (n - 1)
