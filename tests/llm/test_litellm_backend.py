"""LiteLLMBackend through real litellm against the local OpenAI-compatible server."""

from __future__ import annotations

import logging
import time

import pytest
from pydantic import BaseModel, SecretStr
from servers.openai_server import Fail, Malformed, OpenAIServer, Reply

from graphwalk_core.decisions.base import Usage
from graphwalk_core.errors import InputError
from graphwalk_core.llm import LiteLLMBackend, LLMBackend, LLMError, Message
from graphwalk_core.llm.jsonreply import schema_instruction

KEY = "sk-test-secret-4242"
MESSAGES = [
    Message(role="system", content="You answer briefly."),
    Message(role="user", content="What is the capital of France?"),
]
WIRE_MESSAGES = [m.model_dump() for m in MESSAGES]


class Capital(BaseModel):
    city: str
    country: str


def backend(server: OpenAIServer, model: str = "openai/test-model", **kw: object) -> LiteLLMBackend:
    return LiteLLMBackend(model, server.base_url, SecretStr(KEY), backoff_s=0.01, **kw)  # type: ignore[arg-type]


async def test_plain_completion_body_key_usage(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("Paris.", prompt_tokens=12, completion_tokens=2))
    llm = backend(openai_server, timeout_s=7)
    assert isinstance(llm, LLMBackend)
    result = await llm.complete(MESSAGES, temperature=0.3)
    assert result.text == "Paris."
    assert result.parsed is None
    assert result.usage == Usage(input_tokens=12, output_tokens=2, cost_usd=None)
    assert (result.model, result.attempts) == ("openai/test-model", 1)
    [request] = openai_server.chat_requests
    assert request.body == {"model": "test-model", "messages": WIRE_MESSAGES, "temperature": 0.3}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-stainless-read-timeout"] == "7.0"
    assert request.headers["x-stainless-retry-count"] == "0"
    assert KEY not in repr(llm)


async def test_schema_request_and_parsed(openai_server: OpenAIServer) -> None:
    openai_server.enqueue('Here you go:\n```json\n{"city": "Paris", "country": "France"}\n```')
    result = await backend(openai_server).complete(MESSAGES, schema=Capital)
    assert result.parsed == Capital(city="Paris", country="France")
    prompt_words = len(schema_instruction(Capital).split()) + 3 + 6  # the server counts words
    assert result.usage == Usage(input_tokens=prompt_words, output_tokens=9)
    assert result.attempts == 1
    [request] = openai_server.chat_requests
    assert request.body == {
        "model": "test-model",
        "messages": [{"role": "system", "content": schema_instruction(Capital)}, *WIRE_MESSAGES],
        "temperature": 0.0,
        "response_format": {"type": "json_object"},
    }


async def test_invalid_then_valid_sends_the_error(openai_server: OpenAIServer) -> None:
    openai_server.enqueue('{"city": "Paris"}', '{"city": "Paris", "country": "France"}')
    result = await backend(openai_server).complete(MESSAGES, schema=Capital)
    assert result.parsed == Capital(city="Paris", country="France")
    assert result.attempts == 2
    second = openai_server.chat_requests[1].body["messages"]
    assert second[-2:] == [
        {"role": "assistant", "content": '{"city": "Paris"}'},
        {
            "role": "user",
            "content": "That reply was invalid: reply does not match Capital: country: Field required. "
            "Reply with the corrected JSON object.",
        },
    ]


async def test_never_validates_after_exactly_two_attempts(openai_server: OpenAIServer) -> None:
    openai_server.script = lambda _messages: "I think it is Paris."
    with pytest.raises(LLMError) as err:
        await backend(openai_server).complete(MESSAGES, schema=Capital)
    assert str(err.value) == (
        "LLM openai/test-model: reply never validated against Capital in 2 tries: "
        "no JSON object in the reply: 'I think it is Paris.'"
    )
    assert len(openai_server.chat_requests) == 2


async def test_retries_429_with_retry_after_and_500(
    openai_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.enqueue(Fail(429, retry_after=0.3), Fail(500), Reply("Paris."))
    with caplog.at_level(logging.WARNING, logger="graphwalk_core.llm.litellm_backend"):
        result = await backend(openai_server).complete(MESSAGES)
    assert (result.text, result.attempts) == ("Paris.", 3)
    first, second, third = openai_server.chat_requests
    assert second.at - first.at >= 0.3  # waited as Retry-After said (backoff alone is 0.01 s)
    assert first.body == second.body == third.body
    waits = [r.getMessage().rsplit(" ", 1)[-1] for r in caplog.records]
    assert waits == ["0.30s", "0.02s"]  # Retry-After, then backoff_s * 2**1


async def test_malformed_body_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Malformed(), Reply("ok"))
    result = await backend(openai_server).complete(MESSAGES)
    assert (result.text, result.attempts) == ("ok", 2)


async def test_gives_up_after_max_retries(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Fail(503), Fail(503), Fail(503), Reply("never reached"))
    with pytest.raises(LLMError, match=r"^LLM openai/test-model failed after 3 attempt\(s\): "):
        await backend(openai_server, max_retries=2).complete(MESSAGES)
    assert len(openai_server.chat_requests) == 3


async def test_auth_error_not_retried_and_key_redacted(caplog: pytest.LogCaptureFixture) -> None:
    with OpenAIServer(api_key="sk-the-right-one") as server:
        with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as err:
            await backend(server).complete(MESSAGES)
        assert len(server.requests) == 1
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    message = str(err.value)
    assert message.startswith("LLM openai/test-model failed after 1 attempt(s): AuthenticationError: ")
    assert "Incorrect API key provided: **********" in message
    assert KEY not in message
    assert KEY not in caplog.text
    assert err.value.__cause__ is None


async def test_a_key_litellm_reads_from_the_environment_is_redacted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """With no key given, litellm sends the provider's variable (OPENAI_API_KEY, OPENROUTER_API_KEY, ...):
    an error echoing it was shown whole (in eval results' error column, Dagster logs)."""
    env_key = "sk-from-the-environment-7c1e"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    with OpenAIServer(api_key="sk-the-right-one") as server:
        no_key = LiteLLMBackend("openai/test-model", server.base_url, None, backoff_s=0.01)
        with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as err:
            await no_key.complete(MESSAGES)
        assert server.requests[0].headers["authorization"] == f"Bearer {env_key}"
    assert str(err.value) == (
        "LLM openai/test-model failed after 1 attempt(s): AuthenticationError: litellm.AuthenticationError: "
        "AuthenticationError: OpenAIException - Incorrect API key provided: **********"
    )
    assert env_key not in caplog.text


async def test_cost_only_when_reported(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply("a", cost=0.0021),
        Reply("b", headers={"x-litellm-response-cost": "0.5"}),
        Reply("c", prompt_tokens=1000, completion_tokens=1000),
    )
    llm = backend(openai_server, model="openai/gpt-4o-mini")  # a model litellm has prices for
    assert (await llm.complete(MESSAGES)).usage.cost_usd == 0.0021
    assert (await llm.complete(MESSAGES)).usage.cost_usd == 0.5
    assert (await llm.complete(MESSAGES)).usage == Usage(input_tokens=1000, output_tokens=1000, cost_usd=None)


async def test_bad_arguments() -> None:
    with pytest.raises(InputError, match="needs a litellm model string, got ''"):
        LiteLLMBackend("")
    with pytest.raises(InputError, match="max_retries must be >= 0, got -1"):
        LiteLLMBackend("openai/x", max_retries=-1)
    with pytest.raises(InputError, match="needs at least one message"):
        await LiteLLMBackend("openai/x").complete([])


async def test_connection_refused_is_retried_then_fails() -> None:
    with OpenAIServer() as server:
        base = server.base_url  # the port is closed once the server stops
    llm = LiteLLMBackend("openai/test-model", base, SecretStr(KEY), max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMError) as err:
        await llm.complete(MESSAGES)
    assert str(err.value) == (
        "LLM openai/test-model failed after 2 attempt(s): InternalServerError: litellm.InternalServerError: "
        "InternalServerError: OpenAIException - Connection error."
    )


class _HeaderError(Exception):
    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("x")
        self.litellm_response_headers = headers


def test_retry_after_header_forms() -> None:
    from email.utils import formatdate

    from graphwalk_core.llm.litellm_backend import _retry_after_s

    assert _retry_after_s(_HeaderError({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert _retry_after_s(_HeaderError({"retry-after": "2"})) == 2.0
    assert _retry_after_s(_HeaderError({"retry-after": "soon"})) is None
    assert _retry_after_s(_HeaderError({})) is None
    assert _retry_after_s(Exception("no headers")) is None
    in_ten = _retry_after_s(_HeaderError({"retry-after": formatdate(time.time() + 10, usegmt=True)}))
    assert in_ten is not None and 8.0 <= in_ten <= 10.0


async def test_failed_completion_still_reports_what_it_cost(openai_server: OpenAIServer) -> None:
    """Two billed replies that never validated, then a failed transport: the LLMError carries their usage."""
    openai_server.enqueue(
        Reply("no json", prompt_tokens=10, completion_tokens=3, cost=0.001),
        Reply("still none", prompt_tokens=12, completion_tokens=4, cost=0.002),
    )
    with pytest.raises(LLMError) as err:
        await backend(openai_server).complete(MESSAGES, schema=Capital)
    assert err.value.usage == Usage(input_tokens=22, output_tokens=7, cost_usd=0.003)
    assert err.value.attempts == 2

    openai_server.enqueue(Reply("no json", prompt_tokens=10, completion_tokens=3), Fail(503), Fail(503))
    with pytest.raises(LLMError) as err:
        await backend(openai_server, max_retries=1).complete(MESSAGES, schema=Capital)
    assert err.value.usage == Usage(input_tokens=10, output_tokens=3, cost_usd=None)
    assert err.value.attempts == 3


async def test_key_with_surrounding_whitespace_is_sent_stripped(openai_server: OpenAIServer) -> None:
    """A key read with its trailing newline (a secret file) is sent as the key, as the Jev backend does
    (the OpenAI client refused the header as a control character, and that failure was retried)."""
    openai_server.enqueue(Reply("Paris."))
    llm = LiteLLMBackend("openai/test-model", openai_server.base_url, SecretStr(f" {KEY}\n"), max_retries=0)
    assert (await llm.complete(MESSAGES)).text == "Paris."
    assert openai_server.chat_requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_a_reply_trickling_in_times_out_the_attempt(openai_server: OpenAIServer) -> None:
    """The client's timeout is per read: a body sent a byte every 20 ms never tripped the 0.5 s timeout,
    so a reply that never ends hung the extraction; now the attempt ends at the timeout and is retried."""
    llm = backend(openai_server, timeout_s=0.5)
    await backend(openai_server).complete(MESSAGES)  # litellm's first call sets up for ~1 s on a busy machine
    openai_server.enqueue(Reply("Paris, " * 20, trickle_s=0.02), Reply("Paris."))  # the first: ~8 s
    started = time.monotonic()
    result = await llm.complete(MESSAGES)
    assert time.monotonic() - started < 2.5
    assert (result.text, result.attempts) == ("Paris.", 2)
    assert len(openai_server.chat_requests) == 3
    openai_server.enqueue(Reply("Paris, " * 20, trickle_s=0.02))
    with pytest.raises(LLMError) as err:
        await backend(openai_server, timeout_s=0.5, max_retries=0).complete(MESSAGES)
    assert str(err.value) == (
        "LLM openai/test-model failed after 1 attempt(s): TimeoutError: no whole reply within 0.5s"
    )
