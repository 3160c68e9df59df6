"""Every owner of a Jev decider closes the HTTP client it opened, checked against the local Jev server:
``graphwalk query`` and ``graphwalk ingest``, and an eval (its system built and run, each in an event loop
of its own). The backend's client (one per event loop) was never closed: its connection stayed open until
garbage collection, one more for each loop an eval ran."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from servers.jev_server import JevServer, running_server
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.decisions import jev
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
from graphwalk_core.eval.evaluate import EvalRun, evaluate
from graphwalk_core.eval.systems.base import SystemBackends
from graphwalk_core.settings import get_settings

KEY = "sk-test-0123456789"


@pytest.fixture
def server() -> Iterator[JevServer]:
    yield from running_server()


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every SDK client the Jev backend makes (held here: garbage collection cannot close them)."""
    made: list[Any] = []

    class Recorded(jev.AsyncTypeSafeClient):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            made.append(self)

    monkeypatch.setattr(jev, "AsyncTypeSafeClient", Recorded)
    return made


def left_open(server: JevServer, clients: list[Any]) -> tuple[int, list[bool]]:
    """(connections the server still holds, whether each client is closed), once the server had 2 s to see
    a closed connection end."""
    deadline = time.monotonic() + 2
    while server.connections_open and time.monotonic() < deadline:
        time.sleep(0.02)
    return server.connections_open, [c._http_client.is_closed for c in clients]


@pytest.fixture
def jev_settings(server: JevServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The settings pick the jev decider on ``server`` (and the hashing embedder)."""
    for name, value in {
        "GRAPHWALK_DECIDER": "jev",
        "GRAPHWALK_JEV_API_KEY": KEY,
        "GRAPHWALK_JEV_BASE_URL": server.base_url,
        "GRAPHWALK_EMBED_MODEL_PATH": "hashing",
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


@pytest.mark.usefixtures("jev_settings")
def test_a_query_closes_its_jev_client(server: JevServer, clients: list[Any], tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text("Film Alpha|directed_by|Dir X\nFilm Beta|directed_by|Dir X\n")
    code, output = cli(["query", str(kb), "who directed Film Alpha"])
    assert (code, output.splitlines()[0]) == (0, "status ok  decider=jev:jev-1.13.0  start=['Film Alpha']")
    assert (len(server.calls()), server.connections_made) == (2, 1)
    assert left_open(server, clients) == (0, [True])


@pytest.mark.usefixtures("jev_settings")
def test_an_ingest_closes_its_jev_client(server: JevServer, clients: list[Any], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Christopher Nolan directed Inception in London.\n")
    (docs / "b.txt").write_text("Nolan directed Memento. Nolan lives in London.\n")
    args = ["ingest", str(docs), "--graph", str(tmp_path / "g.db"), "--routing", "jev", "--extractor", "nlp"]
    code, _ = cli(args)
    assert (code, len(server.calls()), server.connections_made) == (0, 1, 1)
    assert left_open(server, clients) == (0, [True])


def test_an_eval_closes_the_jev_client_of_each_event_loop(
    server: JevServer, clients: list[Any], tmp_path: Path
) -> None:
    """Two datasets: each system is built, then run, in an event loop of its own; each loop's client is
    closed with it (there were two left open)."""
    triples = (("Film Alpha", "directed_by", "Dir X"), ("Film Beta", "directed_by", "Dir X"))
    datasets = [
        Dataset(
            name=name,
            split="dev",
            questions=[
                Question(id="a", text="who directed Film Alpha", gold=["Dir X"], extra={"start": start})
            ],
            knowledge=Knowledge(graph="triples", triples=triples),
        )
        for name, start in (("one", "Film Alpha"), ("two", "Film Beta"))
    ]
    decider = jev.JevBackend(SecretStr(KEY), base_url=server.base_url, max_retries=0)
    backends = SystemBackends(decider, None, None)
    evaluate(datasets, ["relation-greedy"], backends, EvalRun(tmp_path, concurrency=1, quiet=True))
    assert (len(server.calls()), server.connections_made) == (6, 2)
    assert left_open(server, clients) == (0, [True, True])
    assert decider._clients == {}
