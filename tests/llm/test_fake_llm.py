"""FakeLLM: scripted replies, recorded calls, the same JSON retry as the real backend."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from graphwalk_core.errors import InputError
from graphwalk_core.llm import FakeLLM, LLMBackend, LLMError, Message


class Answer(BaseModel):
    answer: str


USER = [Message(role="user", content="capital of France?")]


async def test_callable_script_and_usage() -> None:
    llm = FakeLLM(lambda msgs: f"you said {msgs[-1].content}")
    assert isinstance(llm, LLMBackend)
    result = await llm.complete(USER)
    assert result.text == "you said capital of France?"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cost_usd) == (3, 5, None)
    assert (result.model, result.attempts, result.parsed) == ("fake", 1, None)
    assert llm.calls == [USER]


async def test_list_script_schema_retry_then_exhausted() -> None:
    llm = FakeLLM(["not json", '```json\n{"answer": "Paris"}\n```'])
    result = await llm.complete(USER, schema=Answer)
    assert result.parsed == Answer(answer="Paris")
    assert result.attempts == 2
    assert [m.role for m in llm.calls[1]] == ["system", "user", "assistant", "user"]
    assert llm.calls[1][3].content == (
        "That reply was invalid: no JSON object in the reply: 'not json'. "
        "Reply with the corrected JSON object."
    )
    with pytest.raises(LLMError, match="FakeLLM fake: the scripted replies are used up"):
        await llm.complete(USER)


async def test_never_valid() -> None:
    llm = FakeLLM('{"answer": 1}', model="m")
    with pytest.raises(LLMError, match=r"^LLM m: reply never validated against Answer in 2 tries: reply "):
        await llm.complete(USER, schema=Answer)
    assert len(llm.calls) == 2


async def test_bad_input() -> None:
    with pytest.raises(InputError, match="needs at least one message"):
        await FakeLLM("x").complete([])
    with pytest.raises(InputError, match="FakeLLM script must be"):
        FakeLLM(42)  # type: ignore[arg-type]


async def test_attempts_count_one_completion_not_every_call_so_far() -> None:
    llm = FakeLLM("Paris")
    assert [(await llm.complete(USER)).attempts for _ in range(3)] == [1, 1, 1]
