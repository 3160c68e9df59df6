"""``graphwalk query``: answers, JSON output, trace file and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from graphwalk_core.cli import app

from .conftest import MOVIES

runner = CliRunner()


def test_query_json_relation_mode(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    args = ["query", str(MOVIES), "who directed Avatar", "--start", "Avatar", "--hop-mode", "relation",
            "--decider", "fake", "--json", "--trace", str(trace)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "ok"
    assert payload["start"] == ["Avatar"]
    assert payload["decider"] == "fake:seed=0"
    assert json.loads(trace.read_text())["query"] == "who directed Avatar"


def test_query_resolves_the_start_and_prints_witnesses() -> None:
    result = runner.invoke(app, ["query", str(MOVIES), "who directed Memento", "--decider", "fake"])
    assert result.exit_code == 0, result.output
    assert "start=['Memento']" in result.stdout
    assert "1. " in result.stdout and "calls=" in result.stdout


def test_query_errors_are_clear(tmp_path: Path) -> None:
    result = runner.invoke(app, ["query", str(MOVIES), "q", "--start", "Titanc", "--decider", "fake"])
    assert result.exit_code == 2
    assert "start node not in the graph: 'Titanc' (did you mean: Titanic?)" in result.output
    result = runner.invoke(app, ["query", str(tmp_path / "none.txt"), "q"])
    assert (result.exit_code, "graph not found" in result.output) == (2, True)
    result = runner.invoke(app, ["query", str(MOVIES), "  "])
    assert (result.exit_code, "the question is empty" in result.output) == (2, True)
    result = runner.invoke(app, ["query", str(MOVIES), "q", "--strategy", "bfs"])
    assert (result.exit_code, "--strategy must be one of greedy, beam, sample" in result.output) == (2, True)
