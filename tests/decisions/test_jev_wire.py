"""JevBackend through the real typesafe-sdk and real HTTP against the local Jev server."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from servers.jev_server import JevServer, Recorded, Reply, running_server

from graphwalk_core.decisions import ChoiceQuestion, DecisionError, DecisionRequest, normalize_distribution
from graphwalk_core.decisions.jev import JevBackend
from graphwalk_core.errors import ConfigError

KEY = "sk-test-S3CRET-0123456789abcdef"
QUESTIONS = [
    ChoiceQuestion(
        key="b0",
        instructions={"task": "pick the next hop", "current": "Memento"},
        options={
            "o1": {"relation": "directed_by", "node": "Christopher Nolan"},
            "o2": "released 2000",
            "STOP": None,
        },
    ),
    ChoiceQuestion(key="b1", options={"yes": "a person", "no": "not a person"}),
]
REQUEST = DecisionRequest(state={"query": "who directed Memento?"}, questions=QUESTIONS)


@pytest.fixture
def server() -> Iterator[JevServer]:
    yield from running_server()


@pytest.fixture
def openrouter() -> Iterator[JevServer]:
    yield from running_server(flavor="openrouter")


def backend(server: JevServer, **kw: object) -> JevBackend:
    opts: dict[str, object] = {"backoff_initial_s": 0.05, "backoff_jitter": 0.0, "timeout_s": 2.0}
    opts.update(kw)
    return JevBackend(SecretStr(KEY), base_url=server.base_url, provider=server.flavor, **opts)  # type: ignore[arg-type]


async def test_normal_call_exact_wire_body_and_parsed_result(server: JevServer) -> None:
    jev = backend(server)
    resp = await jev.decide(REQUEST)
    [call] = server.requests
    assert (call.method, call.path) == ("POST", "/v1/systemone")
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert call.headers["content-type"] == "application/json"
    assert "content-encoding" not in call.headers
    assert call.json == {
        "state": {"query": "who directed Memento?"},
        "model": "jev-1.13.0",
        "questions": {
            "b0": {
                "type": "choice",
                "instructions": {"task": "pick the next hop", "current": "Memento"},
                "criteria": {
                    "o1": {"relation": "directed_by", "node": "Christopher Nolan"},
                    "o2": "released 2000",
                    "STOP": None,
                },
            },
            "b1": {"type": "choice", "criteria": {"yes": "a person", "no": "not a person"}},
        },
    }
    b0, b1 = resp.results["b0"], resp.results["b1"]
    assert list(b0.probabilities) == ["o1", "o2", "STOP"]  # offer order, though the server reversed it
    assert b0.probabilities == {
        "o1": pytest.approx(0.7),
        "o2": pytest.approx(0.15),
        "STOP": pytest.approx(0.15),
    }
    assert b0.top == "o1"
    assert b0.confidence == 0.55
    assert b1.probabilities == {"yes": pytest.approx(0.7), "no": pytest.approx(0.3)}
    assert b1.confidence == 0.4
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.cost_usd) == (240, 24, None)
    assert resp.model == "jev-1.13.0"
    assert resp.request_id == "req-1"
    assert resp.provider == "typesafe"
    assert resp.latency_s > 0
    assert jev.model_id == "jev:jev-1.13.0"
    assert jev.max_options == 255
    await jev.aclose()


async def test_429_retry_after_is_honoured(server: JevServer) -> None:
    server.enqueue(Reply(429, {"error": "slow down"}, headers={"Retry-After": "0.4"}))
    resp = await backend(server, max_retries=2).decide(REQUEST)
    first, second = server.calls()
    assert "x-typesafe-retry-count" not in first.headers
    assert second.headers["x-typesafe-retry-count"] == "1"
    assert second.at - first.at >= 0.4  # the backoff alone would be 0.05 s
    assert resp.request_id == "req-2"


async def test_5xx_then_success_uses_exponential_backoff(server: JevServer) -> None:
    server.enqueue(Reply(503, {"error": "busy"}), Reply(500, {"error": "oops"}))
    resp = await backend(server, max_retries=3, backoff_initial_s=0.1).decide(REQUEST)
    calls = server.calls()
    assert len(calls) == 3
    assert [c.headers.get("x-typesafe-retry-count") for c in calls] == [None, "1", "2"]
    assert calls[1].at - calls[0].at >= 0.1
    assert calls[2].at - calls[1].at >= 0.2
    assert resp.results["b0"].top == "o1"


async def test_5xx_after_all_retries_is_decision_error(server: JevServer) -> None:
    server.enqueue(*[Reply(502, {"error": "bad gateway"}) for _ in range(3)])
    with pytest.raises(DecisionError) as info:
        await backend(server, max_retries=2).decide(REQUEST)
    assert len(server.calls()) == 3
    msg = str(info.value)
    assert "HTTP 502" in msg
    assert "bad gateway" in msg
    assert "request id: req-3" in msg
    assert "up to 2 retries" in msg


async def test_4xx_is_not_retried(server: JevServer) -> None:
    server.enqueue(Reply(400, {"detail": "questions.b0.criteria: too many"}))
    with pytest.raises(DecisionError, match=r"HTTP 400: .*too many.*request id: req-1"):
        await backend(server).decide(REQUEST)
    assert len(server.calls()) == 1


async def test_slow_reply_times_out_then_retry_succeeds(server: JevServer) -> None:
    server.enqueue(Reply(delay_s=0.8))
    resp = await backend(server, timeout_s=0.3, max_retries=1).decide(REQUEST)
    assert len(server.calls()) == 2
    assert resp.request_id == "req-2"


async def test_slow_replies_exhaust_retries(server: JevServer) -> None:
    server.enqueue(Reply(delay_s=0.8), Reply(delay_s=0.8))
    with pytest.raises(DecisionError, match=r"timed out after 0\.3s per attempt"):
        await backend(server, timeout_s=0.3, max_retries=1).decide(REQUEST)
    assert len(server.calls()) == 2


async def test_malformed_body_is_decision_error_without_retry(server: JevServer) -> None:
    server.enqueue(Reply(200, b'{"model": "jev-1.13.0", "answers": '))
    with pytest.raises(DecisionError, match=r"HTTP 200: .*Invalid response data"):
        await backend(server).decide(REQUEST)
    assert len(server.calls()) == 1


async def test_unknown_label_is_decision_error(server: JevServer) -> None:
    def add_label(body: dict) -> dict:
        body["answers"]["b1"]["probabilities"]["maybe"] = 0.1
        return body

    server.enqueue(Reply(edit=add_label))
    with pytest.raises(DecisionError, match=r"question 'b1'.*not offered: \['maybe'\]"):
        await backend(server).decide(REQUEST)


async def test_missing_label_is_zero_with_warning(
    server: JevServer, caplog: pytest.LogCaptureFixture
) -> None:
    def drop_stop(body: dict) -> dict:
        del body["answers"]["b0"]["probabilities"]["STOP"]
        return body

    server.enqueue(Reply(edit=drop_stop))
    resp = await backend(server).decide(REQUEST)
    assert resp.results["b0"].probabilities == {
        "o1": pytest.approx(0.7 / 0.85),
        "o2": pytest.approx(0.15 / 0.85),
        "STOP": 0.0,
    }
    assert "labels missing from the distribution, taken as 0: ['STOP']" in caplog.text


async def test_missing_answer_and_wrong_model_echo(server: JevServer) -> None:
    def drop_b1(body: dict) -> dict:
        del body["answers"]["b1"]
        return body

    server.enqueue(Reply(edit=drop_b1))
    with pytest.raises(DecisionError, match="question 'b1': Jev returned no answer instead of a choice"):
        await backend(server).decide(REQUEST)
    server.echo_model = lambda m: "jev-2.0.0"
    with pytest.raises(DecisionError, match=r"model 'jev-2.0.0', not the pinned 'jev-1.13.0'.*req-2"):
        await backend(server).decide(REQUEST)


async def test_openrouter_extras(openrouter: JevServer) -> None:
    jev = backend(openrouter)
    assert jev.model == "typesafe/jev-1.13"
    resp = await jev.decide(REQUEST)
    [call] = openrouter.requests
    assert call.path == "/api/v1/systemone"
    assert call.json["model"] == "typesafe/jev-1.13"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert resp.request_id == "gen-dec-1"
    assert resp.provider == "TypeSafe"
    assert resp.model == "typesafe/jev-1.13-20260917"
    assert resp.usage.cost_usd == pytest.approx(240 * 0.042e-6)
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (240, 24)
    assert jev.model_id == "jev:typesafe/jev-1.13"


async def test_verify_model_typesafe(server: JevServer) -> None:
    assert await backend(server).verify_model() == "jev-1.13.0"
    [call] = server.requests
    assert (call.method, call.path, call.headers["authorization"]) == ("GET", "/v1/models", f"Bearer {KEY}")
    with pytest.raises(ConfigError, match=r"'jev-1.12.0' is not offered by .*it lists \['jev-1.13.0'\]"):
        await backend(server, model="jev-1.12.0").verify_model()


async def test_verify_model_openrouter(openrouter: JevServer) -> None:
    assert await backend(openrouter).verify_model() == "typesafe/jev-1.13"
    [call] = openrouter.requests
    assert call.path == "/api/v1/models/typesafe/jev-1.13/endpoints"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(ConfigError, match=r"does not know the Jev model 'typesafe/jev-9'.*404"):
        await backend(openrouter, model="typesafe/jev-9").verify_model()
    openrouter.openrouter_endpoints["typesafe/jev-1.13"] = []
    with pytest.raises(ConfigError, match="with 0 endpoint"):
        await backend(openrouter).verify_model()


@pytest.mark.parametrize("model", ["jev-latest", "typesafe/jev-latest", "latest", " "])
def test_unpinned_model_is_refused(model: str) -> None:
    with pytest.raises(ConfigError, match="pinned"):
        JevBackend(SecretStr(KEY), model=model)


def test_bad_config() -> None:
    with pytest.raises(ConfigError, match="API key"):
        JevBackend(SecretStr(" "))
    with pytest.raises(ConfigError, match="jev_max_retries"):
        JevBackend(SecretStr(KEY), max_retries=-1)
    with pytest.raises(ConfigError, match="jev_timeout_s"):
        JevBackend(SecretStr(KEY), timeout_s=0)
    with pytest.raises(ConfigError, match="unknown Jev provider 'x'"):
        JevBackend(SecretStr(KEY), provider="x")  # type: ignore[arg-type]


def echo_auth(rec: Recorded) -> dict:
    return {"error": f"bad credentials: {rec.headers.get('authorization')}"}


@pytest.mark.parametrize(
    "replies",
    [
        [Reply(401, echo_auth)],
        [Reply(403, echo_auth)],
        [Reply(429, echo_auth, headers={"Retry-After": "0"})] * 2,
        [Reply(500, echo_auth)] * 2,
        [Reply(200, lambda rec: f"not json {rec.headers['authorization']}".encode())],
        [Reply(200, lambda rec: {"model": "jev-1.13.0", "answers": rec.headers["authorization"]})],
        [Reply(delay_s=0.8)] * 2,
    ],
    ids=["401", "403", "429", "500", "garbage", "invalid", "timeout"],
)
async def test_key_never_leaks(
    server: JevServer, replies: list[Reply], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.enqueue(*[Reply(r.status, r.body, dict(r.headers), r.delay_s) for r in replies])
    jev = backend(server, max_retries=1, timeout_s=0.3)
    with pytest.raises(DecisionError) as info:
        await jev.decide(REQUEST)
    assert len(server.calls()) == len(replies)
    assert server.calls()[0].headers["authorization"] == f"Bearer {KEY}"  # the key was really sent
    exc = info.value
    rendered = "".join(traceback.format_exception(exc))
    for text in (str(exc), repr(exc), rendered, repr(jev), caplog.text, json.dumps(vars(jev), default=repr)):
        assert KEY not in text
    assert exc.__cause__ is None
    assert exc.__context__ is None
    if replies[0].body is echo_auth:  # the server echoed the key: it was masked, not dropped
        assert "bad credentials: Bearer ***" in str(exc)


def big_request() -> DecisionRequest:
    options = {f"o{i}": {"relation": "starred_actors", "node": f"Actor number {i}"} for i in range(40)}
    question = ChoiceQuestion(key="b0", options=options)
    return DecisionRequest(state={"query": "who starred in Memento?"}, questions=[question])


async def test_uncompressed_body_when_compression_disabled(server: JevServer) -> None:
    req = big_request()
    await backend(server, compression=False).decide(req)
    [call] = server.calls()
    assert len(call.body) > 1024  # above the SDK's compression threshold
    assert "content-encoding" not in call.headers
    assert call.json["questions"]["b0"]["criteria"] == req.questions[0].options


async def test_zstd_compression_is_decoded_or_refused(server: JevServer) -> None:
    req = big_request()
    try:
        import backports.zstd  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="zstd compression requires"):
            await backend(server, compression="zstd").decide(req)
        assert server.requests == []
        return
    await backend(server, compression="zstd").decide(req)
    [call] = server.calls()
    assert call.headers["content-encoding"] == "zstd"
    assert call.json["questions"]["b0"]["criteria"] == req.questions[0].options


def test_one_backend_serves_several_event_loops(server: JevServer) -> None:
    jev = backend(server)
    first = asyncio.run(jev.decide(REQUEST))
    second = asyncio.run(jev.decide(REQUEST))
    assert (first.request_id, second.request_id) == ("req-1", "req-2")
    assert first.results == second.results


async def test_concurrent_calls_share_one_client(server: JevServer) -> None:
    jev = backend(server)
    replies = await asyncio.gather(*[jev.decide(REQUEST) for _ in range(3)])
    assert sorted(r.request_id or "" for r in replies) == ["req-1", "req-2", "req-3"]
    assert len(server.calls()) == 3
    assert len(jev._clients) == 1
    await jev.aclose()
    assert jev._clients == {}


async def test_saturated_integer_probabilities(server: JevServer) -> None:
    def second_label(name: str, q: dict, state: object) -> dict[str, float]:
        return {label: (1 if i == 1 else 0) for i, label in enumerate(q["criteria"])}

    server.answer_fn = second_label
    resp = await backend(server).decide(REQUEST)
    assert resp.results["b0"].probabilities == {"o1": 0.0, "o2": 1.0, "STOP": 0.0}
    assert resp.results["b0"].top == "o2"
    assert resp.results["b0"].confidence == 1.0
    assert resp.results["b1"].probabilities == {"yes": 0.0, "no": 1.0}


async def test_too_many_options_fail_before_sending(server: JevServer) -> None:
    options = {f"o{i}": None for i in range(256)}
    request = DecisionRequest(state="s", questions=[ChoiceQuestion(key="big", options=options)])
    with pytest.raises(DecisionError, match="'big': 256 options exceed Jev's limit of 255"):
        await backend(server).decide(request)
    assert server.requests == []


@pytest.mark.parametrize("flavor", ["typesafe", "openrouter"])
async def test_key_with_surrounding_whitespace_is_sent_stripped_and_redacted(flavor: str) -> None:
    """A key read with its trailing newline (a secret file, ``kubectl create secret --from-file``): the
    SDK strips it before sending, so the server's echo of it must still be masked, and the model check
    must send the same key."""
    with JevServer(flavor=flavor) as server:
        server.enqueue(Reply(401, echo_auth))
        jev = JevBackend(SecretStr(f" {KEY}\n"), base_url=server.base_url, provider=flavor, max_retries=0)  # type: ignore[arg-type]
        with pytest.raises(DecisionError) as info:
            await jev.decide(REQUEST)
        assert server.calls()[0].headers["authorization"] == f"Bearer {KEY}"
        assert KEY not in str(info.value)
        assert "bad credentials: Bearer ***" in str(info.value)
        assert await jev.verify_model() == jev.model
        assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


async def test_openrouter_model_check_masks_a_key_echoed_in_a_malformed_body(
    openrouter: JevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = Reply(200, lambda rec: f"<html>signed in as {rec.headers['authorization']}</html>".encode())
    monkeypatch.setattr(openrouter, "_route", lambda method, path, body: page)
    with pytest.raises(DecisionError) as info:
        await backend(openrouter).verify_model()
    assert openrouter.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert str(info.value).endswith("malformed body '<html>signed in as Bearer ***</html>'")


async def test_a_reply_trickling_in_is_cut_at_the_retry_budget(server: JevServer) -> None:
    """httpx's timeout is per read: a server (or proxy) sending a byte every 20 ms never tripped the
    0.3 s timeout, so a reply that never ends hung the walk, however small the retry budget."""
    server.enqueue(Reply(trickle_s=0.02))  # ~250 bytes: about 5 s
    jev = backend(server, timeout_s=0.3, max_retries=1, retry_budget_s=1.0)
    started = time.monotonic()
    with pytest.raises(DecisionError) as info:
        await jev.decide(REQUEST)
    assert time.monotonic() - started < 2.0
    assert str(info.value) == (
        "Jev (typesafe, jev-1.13.0) decision failed (up to 1 retries): "
        "no whole reply within the retry budget of 1s"
    )
    assert len(server.calls()) == 1


async def test_probabilities_whose_sum_overflows_are_still_normalized(server: JevServer) -> None:
    """Each value finite, their sum not: the distribution came out all zeros (v / inf), summing to 0,
    its top label the first offered whatever the server said."""

    def huge(body: dict) -> dict:
        body["answers"]["b0"]["probabilities"] = {"o1": 0.0, "o2": 1e308, "STOP": 1e308}
        return body

    server.enqueue(Reply(edit=huge))
    resp = await backend(server).decide(REQUEST)
    assert resp.results["b0"].probabilities == {"o1": 0.0, "o2": 0.5, "STOP": 0.5}
    assert resp.results["b0"].top == "o2"
    # an infinite value (a local model's overflow; the SDK refuses one on the wire) gave NaN
    with pytest.raises(DecisionError, match=r"question 'q': invalid probabilities \{'a': inf, 'b': 0.1\}"):
        normalize_distribution(["a", "b"], {"a": float("inf"), "b": 0.1}, key="q")
