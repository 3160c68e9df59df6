"""The LLMBackend protocol: chat messages in, text (and optionally a validated object) out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, Literal, Protocol, TypeVar, runtime_checkable

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
    """The LLM failed after retries, or its reply never validated against the schema."""


@runtime_checkable
class LLMBackend(Protocol):
    @property
    def model_id(self) -> str: ...

    async def complete(
        self, messages: Sequence[Message], *, schema: type[T] | None = None, temperature: float = 0.0
    ) -> LLMResult[T]:
        """One completion. With ``schema`` the reply is JSON validated into it (one retry with the error)."""
