"""A real local HTTP server speaking the Hugging Face Hub wire format ``snapshot_download`` uses.

It serves dataset repos pinned to commits (``add_repo``). Routes, as huggingface_hub 1.x calls them for
a revision that is a commit sha (no ``/revision/`` look-up is needed then):

- ``GET /api/datasets/{repo}/tree/{sha}?recursive=...``: the file listing, one page (no ``Link``), as
  ``[{"type": "file"|"directory", "oid", "size", "path"}]``;
- ``HEAD|GET /datasets/{repo}/resolve/{sha}/{path}``: the file, with ``X-Repo-Commit`` (the sha),
  ``ETag`` (the git blob id, quoted) and ``Content-Length``.

Unknown repos, revisions and files get 404s with the hub's ``X-Error-Code`` (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``). Every request is recorded.

Use it from a test module or conftest.py::

    from servers.hf_hub_server import HubServer, hub_server  # noqa: F401
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from servers.background import BackgroundHTTPServer

Reply = tuple[int, dict[str, str], bytes]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # without the query string, percent-decoded
    query: dict[str, list[str]]


def git_blob_id(data: bytes) -> str:
    """The git object id of a blob (what the hub reports as a small file's oid and ETag)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


class HubServer(BackgroundHTTPServer):
    """A threaded HTTP server on 127.0.0.1 (a free port) serving dataset repos at fixed commits."""

    thread_name = "hub-server"

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, dict[str, bytes]]] = {}  # repo id -> sha -> path -> content
        self.requests: list[RecordedRequest] = []
        super().__init__(_make_handler(self))

    @property
    def endpoint(self) -> str:
        """The hub endpoint, e.g. ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def add_repo(self, repo_id: str, sha: str, files: dict[str, str | bytes]) -> None:
        """Serve ``files`` (path -> content) as dataset repo ``repo_id`` at commit ``sha``."""
        encoded = {p: c.encode() if isinstance(c, str) else c for p, c in files.items()}
        with self._lock:
            self.repos.setdefault(repo_id, {})[sha] = encoded

    # -- request handling (called from the handler thread) --

    def handle(self, method: str, target: str) -> Reply:
        """(status, headers, body) for a request; the handler sends no body for HEAD."""
        parts = urlsplit(target)
        path = unquote(parts.path)
        with self._lock:
            self.requests.append(RecordedRequest(method, path, parse_qs(parts.query)))
        if method == "GET" and path.startswith("/api/datasets/") and "/tree/" in path:
            repo_id, _, rest = path.removeprefix("/api/datasets/").partition("/tree/")
            sha, _, folder = rest.partition("/")
            recursive = parse_qs(parts.query).get("recursive", ["false"])[0].lower() == "true"
            return self._tree(repo_id, sha, folder, recursive)
        if method == "GET" and path.startswith("/api/datasets/") and "/revision/" in path:
            repo_id, _, sha = path.removeprefix("/api/datasets/").partition("/revision/")
            return self._info(repo_id, sha)
        if method in ("GET", "HEAD") and path.startswith("/datasets/") and "/resolve/" in path:
            repo_id, _, rest = path.removeprefix("/datasets/").partition("/resolve/")
            sha, _, file = rest.partition("/")
            return self._resolve(repo_id, sha, file)
        return _error(404, f"no route {method} {path}")

    def _files(self, repo_id: str, sha: str) -> dict[str, bytes] | Reply:
        with self._lock:
            revisions = self.repos.get(repo_id)
            if revisions is None:
                return _error(404, "Repository not found", code="RepoNotFound")
            files = revisions.get(sha)
        if files is None:
            return _error(404, f"Invalid rev id: {sha}", code="RevisionNotFound")
        return files

    def _tree(self, repo_id: str, sha: str, folder: str, recursive: bool) -> Reply:
        files = self._files(repo_id, sha)
        if isinstance(files, tuple):
            return files
        prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
        entries: dict[str, dict[str, Any]] = {}
        for path, data in sorted(files.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for depth in range(1, len(parts)):  # the folders on the way
                if not recursive and depth > 1:
                    break
                name = prefix + "/".join(parts[:depth])
                entries.setdefault(
                    name, {"type": "directory", "oid": git_blob_id(name.encode()), "path": name}
                )
            if recursive or len(parts) == 1:
                entries[path] = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": path}
        return 200, {"Content-Type": "application/json"}, json.dumps(list(entries.values())).encode()

    def _info(self, repo_id: str, sha: str) -> Reply:
        files = self._files(repo_id, sha)
        if isinstance(files, tuple):
            return files
        info = {
            "_id": git_blob_id(repo_id.encode()),
            "id": repo_id,
            "sha": sha,
            "private": False,
            "disabled": False,
            "gated": False,
            "tags": [],
            "siblings": [{"rfilename": path} for path in sorted(files)],
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(info).encode()

    def _resolve(self, repo_id: str, sha: str, file: str) -> Reply:
        files = self._files(repo_id, sha)
        if isinstance(files, tuple):
            return files
        data = files.get(file)
        if data is None:
            status, headers, payload = _error(404, f"Entry not found: {file}", code="EntryNotFound")
            return status, {**headers, "X-Repo-Commit": sha}, payload
        headers = {"X-Repo-Commit": sha, "ETag": f'"{git_blob_id(data)}"', "Content-Type": "text/plain"}
        return 200, headers, data


def _error(status: int, message: str, code: str | None = None) -> Reply:
    headers = {"Content-Type": "application/json", "X-Error-Message": message}
    if code is not None:
        headers["X-Error-Code"] = code
    return status, headers, json.dumps({"error": message}).encode()


def _make_handler(server: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            status, headers, body = server.handle(self.command, self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))  # for HEAD too: the size a GET sends
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = _serve
        do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:  # silence stderr
            return

    return Handler


@pytest.fixture
def hub_server() -> Iterator[HubServer]:
    """A started :class:`HubServer`, stopped after the test."""
    with HubServer() as server:
        yield server
