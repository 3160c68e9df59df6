"""``graphwalk train decider`` end to end: labeled questions over a triples file, then query with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphwalk_core.cli import app

from .kb import TRIPLES, questions

runner = CliRunner()


@pytest.fixture
def files(tmp_path: Path, minilm_dir: Path) -> tuple[Path, Path]:
    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"{s}|{r}|{o}\n" for s, r, o in TRIPLES), encoding="utf-8")
    qs = tmp_path / "questions.jsonl"
    rows = [
        {"id": q.id, "question": q.text, "answers": q.gold, "start": q.start[0]} for q in questions(range(9))
    ]
    qs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return kb, qs


def test_train_then_query(files: tuple[Path, Path], tmp_path: Path) -> None:
    kb, qs = files
    out = tmp_path / "model"
    examples = tmp_path / "decision_examples.parquet"
    args = ["train", "decider", "--graph", str(kb), "--questions", str(qs), "--out", str(out),
            "--examples-out", str(examples), "--max-iter", "200", "--quiet"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "examples: examples=63, train=" in result.stdout
    assert "questions without a path to a gold answer: 0" in result.stdout
    assert "| stop | 1.000 |" in result.stdout
    assert (out / "manifest.json").is_file() and examples.is_file()

    trace = tmp_path / "traces" / "q1.json"
    trace.parent.mkdir()
    args = ["query", str(kb), "which films share the director of Film 10", "--start", "Film 10",
            "--hop-mode", "relation", "--decider", "trained", "--decider-model", str(out), "--json",
            "--trace", str(trace)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["decider"].startswith("trained:model@")
    assert sorted(payload["answers"][0]["names"]) == ["Film 2", "Film 6"]

    # the walk's trace is itself training data (soft labels)
    result = runner.invoke(
        app, ["train", "decider", "--traces", str(trace.parent), "--out", str(tmp_path / "m2"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert "source_weak=0, source_trace=3" in result.stdout


def test_refuses_test_split_and_missing_inputs(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "decider", "--dataset", "metaqa", "--split", "test", "--out", "x"])
    assert result.exit_code == 2 and "never on test" in result.output
    result = runner.invoke(app, ["train", "decider", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and "nothing to learn from" in result.output
    result = runner.invoke(app, ["train", "decider", "--questions", "q.jsonl", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and "--questions needs --graph" in result.output
