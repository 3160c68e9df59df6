"""A real local HTTP server speaking the OpenAI wire format, for tests of anything that calls an LLM.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``POST /v1/embeddings`` (hashing vectors).
Replies are scripted (a queue, else a function of the request messages, else the last user message echoed),
and the queue may hold failures: :class:`Fail` (e.g. a 429 with ``Retry-After``, a 500) and
:class:`Malformed` (a 200 whose body is not JSON). Every request is recorded with its headers and body.

Use it from any test folder: in that folder's ``conftest.py`` (or a test module) write::

    from servers.openai_server import OpenAIServer, openai_server  # noqa: F401

(``tests/`` is on ``sys.path`` because it has a ``conftest.py`` and no ``__init__.py``.) Then::

    async def test_x(openai_server: OpenAIServer):
        openai_server.enqueue('{"answer": "Paris"}')
        ... call litellm with model="openai/test-model", api_base=openai_server.base_url ...
        assert openai_server.chat_requests[0].body["messages"][0]["content"] == "..."
"""

from __future__ import annotations

import base64
import json
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
import pytest

from graphwalk_core.embeddings.hashing import HashingEmbedder
from servers.background import BackgroundHTTPServer


@dataclass(frozen=True)
class Reply:
    """A chat completion reply; token counts default to whitespace word counts of prompt and reply.
    ``trickle_s``: the body is sent a byte at a time, this far apart."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None  # reported as usage.cost (OpenRouter style) when set
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"
    trickle_s: float = 0.0


@dataclass(frozen=True)
class Fail:
    """An HTTP error in the OpenAI error format; ``retry_after`` (seconds) sets Retry-After headers."""

    status: int
    retry_after: float | None = None
    message: str = "scripted failure"


@dataclass(frozen=True)
class Malformed:
    """A reply whose body is not JSON (status 200 unless set)."""

    body: str = "<html>this is not json</html>"
    status: int = 200


Scripted = str | Reply | Fail | Malformed
ScriptFn = Callable[[list[dict[str, Any]]], Scripted]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw: bytes
    at: float = field(default_factory=time.monotonic)  # arrival time (time.monotonic)


#: Internal: how ``_chat`` tells the handler to trickle a reply (not sent).
TRICKLE_HEADER = "x-test-trickle-s"


def _words(text: str) -> int:
    return len(text.split())


class OpenAIServer(BackgroundHTTPServer):
    """A threaded HTTP server on 127.0.0.1 (a free port) that speaks the OpenAI API."""

    thread_name = "openai-server"

    def __init__(
        self,
        script: ScriptFn | None = None,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] = ("test-model",),
        embed_dim: int = 32,
    ) -> None:
        self.script = script
        self.api_key = api_key  # when set, other Bearer tokens get a 401
        self.models = models
        self.embedder = HashingEmbedder(dim=embed_dim)
        self.queue: deque[Scripted] = deque()
        self.requests: list[RecordedRequest] = []
        super().__init__(_make_handler(self))
        self._counter = 0

    @property
    def base_url(self) -> str:
        """The OpenAI ``api_base``, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def enqueue(self, *items: Scripted) -> None:
        """Replies (or failures) for the next chat completions, in order; served before ``script``."""
        with self._lock:
            self.queue.extend(items)

    # -- request handling (called from the handler thread) --

    def _record(self, req: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(req)
            self._counter += 1
            return self._counter

    def _next_reply(self, messages: list[dict[str, Any]]) -> Scripted:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
        if self.script is not None:
            return self.script(messages)
        users = [m.get("content") for m in messages if m.get("role") == "user"]
        return str(users[-1]) if users else ""

    def _chat(self, body: dict[str, Any], number: int) -> tuple[int, dict[str, str], bytes]:
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not isinstance(messages, list):
            return _error(400, "request needs a 'model' string and a 'messages' list")
        if body.get("stream"):
            return _error(400, "streaming is not supported by the test server")
        scripted = self._next_reply(messages)
        if isinstance(scripted, Fail | Malformed):
            return _scripted_failure(scripted)
        reply = scripted if isinstance(scripted, Reply) else Reply(text=str(scripted))
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = sum(_words(str(m.get("content", ""))) for m in messages)
        completion_tokens = reply.completion_tokens
        if completion_tokens is None:
            completion_tokens = _words(reply.text)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if reply.cost is not None:
            usage["cost"] = reply.cost
        payload = {
            "id": f"chatcmpl-test-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": usage,
        }
        headers = dict(reply.headers)
        if reply.trickle_s:
            headers[TRICKLE_HEADER] = str(reply.trickle_s)
        return 200, headers, json.dumps(payload).encode()

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return _error(400, "'input' must be a string or a list of strings")
        vectors = self.embedder.embed(inputs)
        encode = _b64_floats if body.get("encoding_format") == "base64" else np.ndarray.tolist
        data = [{"object": "embedding", "index": i, "embedding": encode(v)} for i, v in enumerate(vectors)]
        tokens = sum(_words(t) for t in inputs)
        payload = {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return 200, {}, json.dumps(payload).encode()

    def _models(self) -> tuple[int, dict[str, str], bytes]:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "tests"} for m in self.models]
        return 200, {}, json.dumps({"object": "list", "data": data}).encode()

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict, bytes]:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        number = self._record(RecordedRequest(method, path, headers, body, raw))
        auth = headers.get("authorization", "")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            # echoes the key it got, as some proxies do: clients must redact it from their errors
            got = auth.removeprefix("Bearer ")
            return _error(401, f"Incorrect API key provided: {got}", code="invalid_api_key")
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            return self._models()
        if method != "POST" or route not in ("/v1/chat/completions", "/v1/embeddings"):
            return _error(404, f"no route {method} {path}")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        if route.endswith("/embeddings"):
            return self._embeddings(body)
        return self._chat(body, number)


def _b64_floats(vec: np.ndarray) -> str:
    """A vector as OpenAI's ``encoding_format="base64"``: little-endian float32 bytes, base64."""
    return base64.b64encode(vec.astype("<f4").tobytes()).decode()


def _error(status: int, message: str, code: str | None = None) -> tuple[int, dict[str, str], bytes]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    payload = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return status, {}, json.dumps(payload).encode()


def _scripted_failure(item: Fail | Malformed) -> tuple[int, dict[str, str], bytes]:
    if isinstance(item, Malformed):
        return item.status, {"Content-Type": "text/html"}, item.body.encode()
    status, headers, body = _error(item.status, item.message, code=str(item.status))
    if item.retry_after is not None:
        headers["Retry-After"] = f"{item.retry_after:g}"
        headers["retry-after-ms"] = str(int(item.retry_after * 1000))
    return status, headers, body


def _make_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, body = server.handle(self.command, self.path, headers, raw)
            trickle_s = float(extra.pop(TRICKLE_HEADER, 0))
            self.send_response(status)
            if not any(k.lower() == "content-type" for k in extra):
                self.send_header("Content-Type", "application/json")
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                if not trickle_s:
                    self.wfile.write(body)
                for i in range(len(body) if trickle_s else 0):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(trickle_s)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                self.close_connection = True

        do_GET = _serve
        do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:  # silence stderr
            return

    return Handler


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started :class:`OpenAIServer`, stopped after the test."""
    with OpenAIServer() as server:
        yield server
