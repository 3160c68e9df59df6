"""The local OpenAI-compatible test server speaks the wire format (checked with stdlib HTTP)."""

from __future__ import annotations

import base64
import concurrent.futures
import json
import urllib.error
import urllib.request
from typing import Any

import numpy as np
from servers.openai_server import Fail, Malformed, OpenAIServer, Reply


def call(url: str, body: dict[str, Any] | None = None, key: str = "sk-x") -> tuple[int, dict, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {key}"})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


CHAT = {"model": "test-model", "messages": [{"role": "user", "content": "hello there world"}]}


def test_chat_echo_and_usage(openai_server: OpenAIServer) -> None:
    status, _, body = call(openai_server.base_url + "/chat/completions", CHAT)
    assert status == 200
    payload = json.loads(body)
    assert payload["object"] == "chat.completion"
    assert payload["id"] == "chatcmpl-test-1"
    assert payload["choices"][0]["message"] == {"role": "assistant", "content": "hello there world"}
    assert payload["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
    assert openai_server.chat_requests[0].body == CHAT
    assert openai_server.chat_requests[0].headers["authorization"] == "Bearer sk-x"


def test_queue_then_script_and_failures(openai_server: OpenAIServer) -> None:
    openai_server.script = lambda messages: f"n={len(messages)}"
    openai_server.enqueue(
        Fail(429, retry_after=0.25),
        Fail(500),
        Malformed(),
        Reply("two words", prompt_tokens=7, completion_tokens=2, cost=0.0012, headers={"x-a": "1"}),
    )
    url = openai_server.base_url + "/chat/completions"
    status, headers, body = call(url, CHAT)
    assert (status, headers["Retry-After"], headers["retry-after-ms"]) == (429, "0.25", "250")
    assert json.loads(body)["error"]["type"] == "invalid_request_error"
    status, _, body = call(url, CHAT)
    assert (status, json.loads(body)["error"]["type"]) == (500, "server_error")
    status, _, body = call(url, CHAT)
    assert (status, body) == (200, b"<html>this is not json</html>")
    status, headers, body = call(url, CHAT)
    assert headers["x-a"] == "1"
    assert json.loads(body)["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "total_tokens": 9,
        "cost": 0.0012,
    }
    status, _, body = call(url, CHAT)
    assert json.loads(body)["choices"][0]["message"]["content"] == "n=1"
    assert len(openai_server.chat_requests) == 5


def test_models_embeddings_and_bad_requests(openai_server: OpenAIServer) -> None:
    status, _, body = call(openai_server.base_url + "/models")
    assert (status, [m["id"] for m in json.loads(body)["data"]]) == (200, ["test-model"])
    emb_url = openai_server.base_url + "/embeddings"
    status, _, body = call(emb_url, {"model": "e", "input": ["a b", "c"]})
    payload = json.loads(body)
    vecs = np.array([d["embedding"] for d in payload["data"]], dtype=np.float32)
    np.testing.assert_allclose(vecs, openai_server.embedder.embed(["a b", "c"]), rtol=1e-6)
    assert payload["usage"] == {"prompt_tokens": 3, "total_tokens": 3}
    _, _, body = call(emb_url, {"model": "e", "input": "a b", "encoding_format": "base64"})
    raw = base64.b64decode(json.loads(body)["data"][0]["embedding"])
    np.testing.assert_array_equal(np.frombuffer(raw, dtype="<f4"), vecs[0])
    assert call(openai_server.base_url + "/chat/completions", {"model": "m"})[0] == 400
    assert call(openai_server.base_url + "/nope", {})[0] == 404


def test_api_key_enforced() -> None:
    with OpenAIServer(api_key="sk-right") as server:
        status, _, body = call(server.base_url + "/chat/completions", CHAT, key="sk-wrong")
        assert (status, json.loads(body)["error"]["code"]) == (401, "invalid_api_key")
        assert call(server.base_url + "/chat/completions", CHAT, key="sk-right")[0] == 200


def test_concurrent_requests_all_recorded(openai_server: OpenAIServer) -> None:
    n = 3
    url = openai_server.base_url + "/chat/completions"
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        statuses = list(pool.map(lambda _: call(url, CHAT)[0], range(n)))
    assert statuses == [200] * n
    assert len(openai_server.requests) == n
