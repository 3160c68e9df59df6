"""The LLMBackend protocol: chat messages in, text (and optionally a validated object) out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from graphwalk_core.errors import BackendError
from graphwalk_core.model.usage import Usage

T = TypeVar("T", bound=BaseModel)


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class LLMResult(BaseModel, Generic[T]):
    text: str
    parsed: T | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    attempts: int = 1


class LLMError(BackendError):
    """The LLM failed after retries, or its reply never validated against the schema.

    ``usage`` and ``attempts``: what the failed completion still cost, over every HTTP request it made
    (replies that never validated were billed all the same).
    """

    def __init__(self, message: str, usage: Usage | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else Usage()
        self.attempts = attempts

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.usage, self.attempts)


class LLMReplyError(LLMError):
    """Every request was answered, but no reply validated against the schema."""


@runtime_checkable
class LLMBackend(Protocol):
    @property
    def model_id(self) -> str: ...

    async def complete(
        self, messages: Sequence[Message], *, schema: type[T] | None = None, temperature: float = 0.0
    ) -> LLMResult[T]:
        """One completion. With ``schema`` the reply is JSON validated into it (one retry with the error)."""
