"""FakeLLM: a scripted in-process LLMBackend for unit tests; records every call."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence

from graphwalk_core.errors import InputError
from graphwalk_core.llm.base import LLMError, LLMResult, Message, T
from graphwalk_core.llm.jsonreply import ask_for_json
from graphwalk_core.model.usage import Usage

Script = Callable[[list[Message]], str] | str | Sequence[str]


def _words(messages: Sequence[Message]) -> int:
    return sum(len(m.content.split()) for m in messages)


class FakeLLM:
    """Replies from ``script``: a function of the messages, one fixed text, or a list used in order.

    ``calls`` holds the messages of every request (with a schema, the JSON instruction comes first and
    an invalid reply causes a second call, exactly as with the real backend). Usage counts words.
    """

    def __init__(self, script: Script, model: str = "fake") -> None:
        if isinstance(script, str):
            text = script
            self._next: Callable[[list[Message]], str] = lambda _messages: text
        elif callable(script):
            self._next = script
        elif isinstance(script, Sequence):
            queue = deque(script)

            def pop(_messages: list[Message]) -> str:
                if not queue:
                    raise LLMError(f"FakeLLM {model}: the scripted replies are used up")
                return queue.popleft()

            self._next = pop
        else:
            raise InputError(f"FakeLLM script must be a callable, a str or a list of str, not {script!r}")
        self._model = model
        self.calls: list[list[Message]] = []

    @property
    def model_id(self) -> str:
        return self._model

    async def complete(
        self, messages: Sequence[Message], *, schema: type[T] | None = None, temperature: float = 0.0
    ) -> LLMResult[T]:
        """One scripted completion (validated into ``schema`` when given)."""
        if not messages:
            raise InputError("complete() needs at least one message")
        start = time.perf_counter()
        usage = Usage()
        first = len(self.calls)

        async def send(chat: list[dict[str, str]]) -> str:
            request = [Message.model_validate(m) for m in chat]
            self.calls.append(request)
            reply = self._next(request)
            usage.input_tokens += _words(request)
            usage.output_tokens += len(reply.split())
            return reply

        chat = [m.model_dump() for m in messages]
        parsed: T | None = None
        try:
            if schema is None:
                text = await send(chat)
            else:
                text, parsed = await ask_for_json(send, chat, schema, self._model)
        except LLMError as err:  # what the failed completion cost goes with it, as with LiteLLMBackend
            err.usage, err.attempts = usage, len(self.calls) - first
            raise
        return LLMResult(
            text=text,
            parsed=parsed,
            usage=usage,
            model=self._model,
            latency_s=time.perf_counter() - start,
            attempts=len(self.calls) - first,
        )
