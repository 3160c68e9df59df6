"""The QASystem protocol, its answer record, and the placeholder for systems that cannot run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from graphwalk_core.eval.datasets.base import Question

if TYPE_CHECKING:
    from graphwalk_core.decisions.base import DecisionBackend
    from graphwalk_core.embeddings.base import Embedder
    from graphwalk_core.llm.base import LLMBackend

Status = Literal["ok", "error", "aborted", "skipped"]


class SystemAnswer(BaseModel):
    """One system's answer to one question, with what it cost.

    ``cost_usd`` is provider-reported only (None when nothing reported it). ``linked_start`` is the
    entry node(s) the system chose itself (None when it was given the gold start or does not link).
    ``passages`` are ids of the source passages the system retrieved or reached, best first.
    """

    answers: list[str] = Field(default_factory=list)
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    decision_calls: int = 0
    llm_calls: int = 0
    linked_start: list[str] | None = None
    passages: list[str] = Field(default_factory=list)
    #: False when ``passages`` are no passage ids (a walk over a triples KB reaches the KB file): no
    #: retrieval scores, not zeros
    cites_passages: bool = True
    #: False for a system that only retrieves (the passage rankers): no answer scores, not zeros
    answers_question: bool = True
    trace: dict[str, Any] | None = None
    status: Status = "ok"
    error: str | None = None


@runtime_checkable
class QASystem(Protocol):
    """Anything that answers questions. ``identity`` is recorded with every run. A system that only
    retrieves (a passage ranker) says so with ``answers_question = False`` (see :func:`answers_questions`)."""

    @property
    def name(self) -> str: ...

    def identity(self) -> dict[str, Any]:
        """Config and model ids (decider, embedder, llm, extractor) that define this system's results."""

    async def answer(self, question: Question) -> SystemAnswer: ...


def answers_questions(system: object) -> bool:
    """Whether ``system``'s answers are scored as answers (its ``answers_question``, default True): what a
    failure of a system that only retrieves is recorded as, since it returned no answer to say so."""
    return bool(getattr(system, "answers_question", True))


@dataclass(frozen=True)
class SystemBackends:
    """The backends systems are built with: each, or None with the reason it is not configured."""

    decider: DecisionBackend | None
    embedder: Embedder | None
    llm: LLMBackend | None
    reasons: dict[str, str] = field(default_factory=dict)


class SkippedSystem:
    """A system whose backend is not configured: every question is recorded as skipped, with why."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def identity(self) -> dict[str, Any]:
        return {"system": self.name, "skipped": self.reason}

    async def answer(self, question: Question) -> SystemAnswer:
        return SystemAnswer(status="skipped", error=self.reason)


class UsageTally:
    """Accumulates calls, tokens and provider-reported cost across one question's backend calls."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd: float | None = None
        self.llm_calls = 0
        self.decision_calls = 0

    def add(self, usage: Any, *, llm: bool) -> None:
        """Add one call's ``Usage`` (input/output tokens and an optional reported cost)."""
        self.input_tokens += int(usage.input_tokens)
        self.output_tokens += int(usage.output_tokens)
        if usage.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(usage.cost_usd)
        if llm:
            self.llm_calls += 1
        else:
            self.decision_calls += 1

    def fields(self) -> dict[str, Any]:
        """Keyword arguments for ``SystemAnswer``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "llm_calls": self.llm_calls,
            "decision_calls": self.decision_calls,
        }
