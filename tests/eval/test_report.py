"""Result and summary tables (exact values), summary.md and the PNG plots."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Question
from graphwalk_core.eval.plots import f1_by_hops_series
from graphwalk_core.eval.report import (
    RESULTS_SCHEMA,
    report_from_runs,
    results_table,
    summary_markdown,
    summary_table,
    write_report,
)
from graphwalk_core.eval.runner import CHECKPOINT, run_eval
from graphwalk_core.eval.systems.base import SkippedSystem, SystemAnswer
from graphwalk_core.eval.systems.rankers import RankerSystem
from graphwalk_core.eval.tables import partition_stats, partition_status

from .fakes import DictSystem, toy_dataset


def test_results_table_has_the_documented_columns(tmp_path: Path) -> None:
    run = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path)
    table = results_table(run.results)
    assert table.schema == RESULTS_SCHEMA
    assert table.num_rows == 6
    row = table.to_pylist()[1]
    assert {
        k: row[k] for k in ("dataset", "split", "hops", "system", "question_id", "gold", "predicted")
    } == {
        "dataset": "toy",
        "split": "dev",
        "hops": 2,
        "system": "dict",
        "question_id": "q001",
        "gold": ["ans1"],
        "predicted": ["wrong"],
    }
    assert (row["f1"], row["em"], row["hits_at_1"], row["status"], row["decider"]) == (
        0.0,
        0.0,
        0.0,
        "ok",
        "fake:dict",
    )


def test_summary_groups_by_hops_with_exact_values(tmp_path: Path) -> None:
    run = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path)
    skipped = run_eval(toy_dataset(6), SkippedSystem("iter-rag", "no LLM"), out_dir=tmp_path)
    summary = summary_table([results_table(run.results), results_table(skipped.results)]).to_pylist()
    assert [(r["hops"], r["system"], r["n"]) for r in summary] == [
        (1, "dict", 2),
        (1, "iter-rag", 2),
        (2, "dict", 2),
        (2, "iter-rag", 2),
        (3, "dict", 2),
        (3, "iter-rag", 2),
    ]
    hop1 = summary[0]  # q000 (right, 0.1 s, no cost) and q003 (wrong, 0.4 s, cost 0.0001)
    assert (hop1["f1"], hop1["em"], hop1["hits_at_1"]) == (0.5, 0.5, 0.5)
    assert (hop1["f1_ci_low"], hop1["f1_ci_high"]) == (0.0, 1.0)
    assert hop1["latency_p50_s"] == pytest.approx(0.25)
    assert hop1["latency_p95_s"] == pytest.approx(0.385)
    assert hop1["cost_per_1k_usd"] == pytest.approx(0.1)  # one reported cost of $0.0001
    assert (hop1["decision_calls_per_q"], hop1["llm_calls_per_q"], hop1["input_tokens_per_q"]) == (
        1.0,
        0.0,
        10.0,
    )
    assert hop1["linking_acc"] == 1.0
    skip = summary[1]
    assert (skip["n_skipped"], skip["skip_reason"], skip["f1"], skip["latency_p50_s"]) == (
        2,
        "no LLM",
        None,
        None,
    )


def test_errors_score_zero_and_are_counted(tmp_path: Path) -> None:
    run = run_eval(toy_dataset(3), DictSystem(), out_dir=tmp_path)
    failed = {"status": "error", "f1": None, "em": None, "hits_at_1": None, "error": "boom"}
    rows = [r.model_copy(update=failed) if r.question_id == "q000" else r for r in run.results]
    summary = summary_table([results_table(rows)]).to_pylist()
    hop1 = summary[0]
    assert (hop1["n"], hop1["n_error"], hop1["f1"], hop1["first_error"]) == (1, 1, 0.0, "boom")
    md = summary_markdown(summary_table([results_table(rows)])).splitlines()
    assert md[4:6] == [
        "| 1 | dict | 1 | 0.000: none answered | 0.000 | 0.000 | 0.10 | 0.10 | — | 1.00 | 0.00 | 1.000 "
        "| — | — | — | — |",
        "|  | ↳ 1 of 1 errors, none answered (scored 0), first: boom |" + " |" * 14,
    ]


def test_a_system_whose_every_question_failed_is_flagged_beside_its_f1(tmp_path: Path) -> None:
    """A system that never answered (its backend down) showed F1 0.000 [0.00, 0.00] like one that answered
    every question wrong, with only "↳ 2 errors (scored 0)" under it: its F1 cell now says none was
    answered, and the line under it the first error (every table that prints summary.md: the eval
    command's output, summary.md, Dagster's eval_summary); the partition's status says failed."""
    results = results_table(run_eval(toy_dataset(6), FailingAnswerer(), out_dir=tmp_path).results)
    summary = summary_table([results])
    assert [(r["n_error"], r["f1"], r["first_error"]) for r in summary.to_pylist()] == [
        (2, 0.0, "RuntimeError: backend down")
    ] * 3
    rows = [r for r in summary_markdown(summary).splitlines() if "| 1 |" in r or r.startswith("|  |")]
    assert rows[:2] == [
        "| 1 | dict | 2 | 0.000: none answered | 0.000 | 0.000 | 0.00 | 0.00 | — | 0.00 | 0.00 | — "
        "| — | — | — | — |",
        "|  | ↳ 2 of 2 errors, none answered (scored 0), first: RuntimeError: backend down |" + " |" * 14,
    ]
    stats = partition_stats(results)
    assert {k: stats[k] for k in ("status", "n", "n_ok", "n_error", "first_error", "f1")} == {
        "status": "failed",
        "n": 6,
        "n_ok": 0,
        "n_error": 6,
        "first_error": "RuntimeError: backend down",
        "f1": 0.0,
    }
    assert [partition_status(4, 1, 3), partition_status(4, 0, 3), partition_status(4, 1, 2)] == [
        "failed",
        "ok",
        "partial",
    ]


def test_some_errors_are_counted_with_the_first_one_on_one_line(tmp_path: Path) -> None:
    run = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path)
    failed = {
        "status": "error",
        "f1": None,
        "em": None,
        "hits_at_1": None,
        "error": "bad | reply\n" + "x" * 120,
    }
    rows = [r.model_copy(update=failed) if r.question_id == "q000" else r for r in run.results]
    md = summary_markdown(summary_table([results_table(rows)])).splitlines()
    assert md[4:6] == [
        "| 1 | dict | 2 | 0.000 [0.00, 0.00] | 0.000 | 0.000 | 0.25 | 0.39 | 0.1000 | 1.00 | 0.00 | 1.000 "
        "| — | — | — | — |",
        "|  | ↳ 1 of 2 errors (scored 0), first: bad \\| reply " + "x" * 87 + "… |" + " |" * 14,
    ]


def test_an_error_leaves_a_system_that_answers_nothing_unscored(tmp_path: Path) -> None:
    """A passage ranker's questions carry no F1 (it retrieves, it does not answer): one failed question
    among them made its F1, EM and hits@1 0.000 instead of "—"."""
    run = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path)
    unscored = {"f1": None, "em": None, "hits_at_1": None, "answer_scored": False}
    failed = {**unscored, "status": "error", "error": "boom"}
    rows = [r.model_copy(update=failed if r.question_id == "q000" else unscored) for r in run.results]
    hop1 = summary_table([results_table(rows)]).to_pylist()[0]
    assert (hop1["n"], hop1["n_ok"], hop1["n_error"]) == (2, 1, 1)
    assert (hop1["f1"], hop1["em"], hop1["hits_at_1"], hop1["f1_ci_low"]) == (None, None, None, None)


class FailingRanker:
    """A passage ranker whose index is gone: every question fails."""

    profile = "failing/v1"

    def rank(self, text: str, k: int) -> None:
        raise RuntimeError("index gone")


class FailingAnswerer(DictSystem):
    """A system that answers questions, failing every one."""

    async def answer(self, question: Question) -> SystemAnswer:
        raise RuntimeError("backend down")


def test_a_passage_ranker_whose_every_question_failed_is_unscored(tmp_path: Path) -> None:
    """With every question failed, nothing said the system only retrieves: its errors scored 0, so the
    summary, summary.md and the plots gave a passage ranker F1, EM and hits@1 0.000 ("↳ 2 errors
    (scored 0)") as though it had answered everything wrong. Its rows now say their answer is not scored."""
    ranker = RankerSystem("dense", FailingRanker(), ids={})
    results = run_eval(toy_dataset(6), ranker, out_dir=tmp_path).results
    assert {(r.status, r.answer_scored) for r in results} == {("error", False)}
    summary = summary_table([results_table(results)])
    hop1 = summary.to_pylist()[0]
    assert (hop1["n"], hop1["n_error"]) == (2, 2)
    assert (hop1["f1"], hop1["em"], hop1["hits_at_1"], hop1["f1_ci_low"]) == (None, None, None, None)
    md = summary_markdown(summary)
    assert "| 1 | dense | 2 | — | — | — |" in md
    assert "|  | ↳ 2 of 2 errors, none answered, first: RuntimeError: index gone |" in md
    assert f1_by_hops_series(summary) == {}
    answering = run_eval(toy_dataset(6), FailingAnswerer(), out_dir=tmp_path).results
    assert {(r.status, r.answer_scored) for r in answering} == {("error", True)}
    assert summary_table([results_table(answering)]).to_pylist()[0]["f1"] == 0.0


def test_results_without_answer_scored_keep_scoring_errors_as_before(tmp_path: Path) -> None:
    """Rows written before ``answer_scored`` (null) still read: their errors score 0 unless the system's
    other answers carry no score."""
    run = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path)
    failed = {"status": "error", "f1": None, "em": None, "hits_at_1": None, "answer_scored": None}
    rows = [r.model_copy(update=failed) for r in run.results]
    assert summary_table([results_table(rows)]).to_pylist()[0]["f1"] == 0.0
    unscored = {"f1": None, "em": None, "hits_at_1": None, "answer_scored": None}
    rows = [r.model_copy(update=failed if r.question_id == "q000" else unscored) for r in run.results]
    assert summary_table([results_table(rows)]).to_pylist()[0]["f1"] is None


def test_a_report_rebuilt_from_a_checkpoint_with_or_without_answer_scored(tmp_path: Path) -> None:
    """``eval report`` over the failed ranker's run leaves it unscored; over the same checkpoint written
    before ``answer_scored`` existed (no such key), it still reads, the errors scored as before."""
    import json

    ranker = RankerSystem("dense", FailingRanker(), ids={})
    checkpoint = run_eval(toy_dataset(3), ranker, out_dir=tmp_path).path / CHECKPOINT
    summary = pq.read_table(report_from_runs(tmp_path, plots=False)["summary"]).to_pylist()
    assert [(r["n_error"], r["f1"]) for r in summary] == [(1, None)] * 3
    lines = [json.loads(line) for line in checkpoint.read_text(encoding="utf-8").splitlines()]
    assert [line.pop("answer_scored") for line in lines] == [False] * 3
    checkpoint.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    summary = pq.read_table(report_from_runs(tmp_path, plots=False)["summary"]).to_pylist()
    assert [(r["n_error"], r["f1"]) for r in summary] == [(1, 0.0)] * 3


def test_write_report_writes_parquet_markdown_and_pngs(tmp_path: Path) -> None:
    run = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path)
    paths = write_report(
        tmp_path, [results_table(run.results)], run_metadata=[run.metadata.model_dump(mode="json")]
    )
    assert pq.read_table(paths["results"]).num_rows == 6
    assert pq.read_table(paths["summary"]).num_rows == 3
    md = paths["summary_md"].read_text()
    assert "### toy (dev)" in md
    assert (
        "| 1 | dict | 2 | 0.500 [0.00, 1.00] | 0.500 | 0.500 | 0.25 | 0.39 | 0.1000 | 1.00 | 0.00 | 1.000 |"
        in md
    )
    for key in ("f1_by_hops", "cost_vs_f1"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_f1_by_hops_draws_one_line_per_split(tmp_path: Path) -> None:
    """A folder holding a dev and a test run of MetaQA drew one line through both splits' points."""
    dev = run_eval(toy_dataset(6), DictSystem(), out_dir=tmp_path).results
    test = [r.model_copy(update={"split": "test", "f1": 1.0}) for r in dev]
    summary = summary_table([results_table(dev), results_table(test)])
    assert f1_by_hops_series(summary) == {
        "toy (dev) · dict": [(1, 0.5), (2, 0.5), (3, 0.5)],
        "toy (test) · dict": [(1, 1.0), (2, 1.0), (3, 1.0)],
    }


def test_a_report_refuses_to_pool_two_runs_of_one_dataset_split_and_system(tmp_path: Path) -> None:
    """A --n 5 run and a --n 10 run into one folder were pooled into one summary row: n 15, the five
    shared questions counted twice, with nothing saying so."""
    five = run_eval(toy_dataset(5), DictSystem(), out_dir=tmp_path).path
    ten = run_eval(toy_dataset(10), DictSystem(), out_dir=tmp_path).path
    first, second = sorted([five, ten])
    with pytest.raises(InputError) as caught:
        report_from_runs(tmp_path, plots=False)
    assert str(caught.value) == (
        f"{first} and {second} are two runs of toy (dev) with dict: a summary would pool their answers; "
        f"move one out of {tmp_path / 'runs'} (or give each eval its own --out)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # nothing written
    (tmp_path / "runs" / five.name).rename(tmp_path / five.name)
    summary = pq.read_table(report_from_runs(tmp_path, plots=False)["summary"]).to_pylist()
    assert [(r["hops"], r["n"]) for r in summary] == [(1, 4), (2, 3), (3, 3)]


def test_a_report_finds_a_hub_run_nested_by_the_earlier_layout(tmp_path: Path) -> None:
    """Before run folders were percent-encoded, a hub run was nested in an ``hf:owner`` folder, which the
    report's one-level glob never found: its rows were missing with no word."""
    dataset = toy_dataset(2).model_copy(update={"name": "hf:owner/name"})
    run = run_eval(dataset, DictSystem(), out_dir=tmp_path)
    (tmp_path / "runs" / "hf:owner").mkdir()
    run.path.rename(tmp_path / "runs" / run.metadata.run_id)
    results = pq.read_table(report_from_runs(tmp_path, plots=False)["results"]).to_pylist()
    assert [(r["dataset"], r["question_id"]) for r in results] == [
        ("hf:owner/name", "q000"),
        ("hf:owner/name", "q001"),
    ]
