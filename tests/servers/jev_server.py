"""A local Jev (TypeSafe / OpenRouter) HTTP server speaking the wire format ``typesafe-sdk`` uses.

Routes: ``POST /v1/systemone`` and ``GET /v1/models`` (TypeSafe), the same under ``/api`` plus
``GET /api/v1/models/{id}/endpoints`` (OpenRouter). Replies are scripted: queued :class:`Reply`
objects are served first (status, headers, body, delay), then the normal answer built by
``answer_fn`` from the request. Every request is recorded with its headers and decoded JSON body.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers.background import BackgroundHTTPServer

#: Answers one choice question: (question name, question JSON, state) -> label -> probability.
AnswerFn = Callable[[str, dict[str, Any], Any], dict[str, float]]

TOKENS_IN_PER_QUESTION = 120
TOKENS_OUT_PER_QUESTION = 12
#: OpenRouter bills input tokens only: $0.042 per million.
OPENROUTER_USD_PER_INPUT_TOKEN = 0.042e-6


@dataclass
class Reply:
    """A scripted reply. ``body``: raw bytes (sent as is), JSON, or a function of the recorded request.

    ``delay_s`` sleeps before answering; ``trickle_s`` sends the body a byte at a time, this far apart.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0
    #: For 200 replies with ``body=None``: the normal answer, passed through this edit.
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass
class Recorded:
    method: str
    path: str
    #: Header names in lower case.
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def first_label_answer(name: str, question: dict[str, Any], state: Any) -> dict[str, float]:
    """Default answer: 0.7 on the first label, the rest shared evenly (rounded to 2 decimals, like Jev)."""
    labels = list(question["criteria"])
    rest = round(0.3 / (len(labels) - 1), 2) if len(labels) > 1 else 0.0
    return {label: (0.7 if i == 0 else rest) for i, label in enumerate(labels)}


class JevServer(BackgroundHTTPServer):
    """Scriptable fake of Jev's HTTP API on 127.0.0.1 (a real server, real sockets)."""

    thread_name = "jev-server"

    def __init__(self, *, flavor: str = "typesafe", models: tuple[str, ...] = ("jev-1.13.0",)) -> None:
        self.flavor = flavor
        self.models = list(models)
        self.answer_fn: AnswerFn = first_label_answer
        #: OpenRouter endpoints per model id; the echoed model is the dated endpoint id.
        self.openrouter_endpoints: dict[str, list[dict[str, Any]]] = {
            "typesafe/jev-1.13": [
                {"name": "TypeSafe | typesafe/jev-1.13-20260917", "provider_name": "TypeSafe"}
            ]
        }
        self.echo_model: Callable[[str], str] = (
            (lambda m: m + "-20260917") if flavor == "openrouter" else (lambda m: m)
        )
        self.requests: list[Recorded] = []
        #: client connections open now, and opened in all
        self.connections_open = 0
        self.connections_made = 0
        self._queue: list[Reply] = []
        self._count = 0
        super().__init__(self._handler())

    @property
    def base_url(self) -> str:
        """The SDK's base URL for this flavor (OpenRouter's lives under ``/api``)."""
        root = f"http://127.0.0.1:{self.port}"
        return root + "/api" if self.flavor == "openrouter" else root

    def enqueue(self, *replies: Reply) -> None:
        """Serve these replies to the next requests, in order, before the normal answers."""
        with self._lock:
            self._queue.extend(replies)

    def calls(self, path_suffix: str = "/v1/systemone") -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith(path_suffix)]

    def normal_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON a healthy server returns for a ``systemone`` request body."""
        answers = {}
        for name, q in body["questions"].items():
            probs = self.answer_fn(name, q, body["state"])
            best = max(probs, key=lambda label: probs[label])
            n = len(probs)
            conf = round((n * probs[best] - 1) / (n - 1), 2) if n > 1 else 1.0
            # Jev returns the probability keys in no particular order.
            answers[name] = {
                "type": "choice",
                "choice": best,
                "confidence": conf,
                "probabilities": dict(reversed(probs.items())),
            }
        n_q = len(body["questions"])
        usage: dict[str, Any] = {
            "input_tokens": TOKENS_IN_PER_QUESTION * n_q,
            "output_tokens": TOKENS_OUT_PER_QUESTION * n_q,
        }
        reply: dict[str, Any] = {"model": self.echo_model(body["model"]), "answers": answers, "usage": usage}
        if self.flavor == "openrouter":
            usage["cost"] = round(usage["input_tokens"] * OPENROUTER_USD_PER_INPUT_TOKEN, 12)
            reply = {"id": f"gen-dec-{self._count}", "provider": "TypeSafe", **reply}
        return reply

    def _route(self, method: str, path: str, body: bytes) -> Reply:
        prefix = "/api" if self.flavor == "openrouter" else ""
        if not path.startswith(prefix + "/v1/"):
            return Reply(404, {"error": f"no route {path}"})
        sub = path[len(prefix) :]
        if method == "POST" and sub == "/v1/systemone":
            with self._lock:
                scripted = self._queue.pop(0) if self._queue else None
            reply = scripted or Reply()
            if reply.status == 200 and reply.body is None:
                answer = self.normal_answer(json.loads(body))
                reply.body = reply.edit(answer) if reply.edit else answer
            return reply
        if method == "GET" and sub == "/v1/models":
            listed = [
                {"name": m, "description": f"{m} model", "release_date": "2026-09-15"} for m in self.models
            ]
            return Reply(200, {"models": listed})
        if method == "GET" and self.flavor == "openrouter" and sub.startswith("/v1/models/"):
            model_id = sub[len("/v1/models/") :].removesuffix("/endpoints")
            endpoints = self.openrouter_endpoints.get(model_id)
            if endpoints is None:
                return Reply(404, {"error": {"message": "Model not found", "code": 404}})
            return Reply(200, {"data": {"id": model_id, "name": model_id, "endpoints": endpoints}})
        return Reply(405 if sub in ("/v1/systemone", "/v1/models") else 404, {"error": f"no route {path}"})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # silence stderr
                return

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.connections_open += 1
                    server.connections_made += 1

            def finish(self) -> None:  # the client closed the connection (or the server gave up on it)
                with server._lock:
                    server.connections_open -= 1
                super().finish()

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "zstd":
                    from backports.zstd import decompress  # only present when the SDK compresses

                    raw = decompress(raw)
                headers = {name.lower(): value for name, value in self.headers.items()}
                rec = Recorded(method, self.path, headers, raw, time.monotonic())
                with server._lock:
                    server._count += 1
                    number = server._count
                    server.requests.append(rec)
                reply = server._route(method, self.path, raw)
                if callable(reply.body):
                    reply.body = reply.body(rec)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("x-typesafe-request-id", f"req-{number}")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.trickle_s:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.close_connection = True

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

        return Handler


def running_server(**kwargs: Any) -> Iterator[JevServer]:
    """Generator for a pytest fixture: a started server, stopped afterwards."""
    server = JevServer(**kwargs).start()
    try:
        yield server
    finally:
        server.stop()
