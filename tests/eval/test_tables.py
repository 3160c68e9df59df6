"""The warehouse's evaluation tables (``graphwalk_core.eval.tables``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from graphwalk_core.eval.report import RESULTS_SCHEMA
from graphwalk_core.eval.tables import read_results, summarize, write_results
from graphwalk_core.warehouse import Warehouse

#: Columns the results gained after their first version (a warehouse may hold only older partitions).
LATER = (
    "passages",
    "recall_at_2",
    "recall_at_5",
    "recall_at_10",
    "all_supporting_at_10",
    "reused",
    "answer_scored",
)


def test_results_written_before_later_columns_read_with_them_null(tmp_path: Path) -> None:
    """Every partition written by an older graphwalk (no recall columns yet) made read_results, and so
    summarize, fail with DuckDB's 'Referenced column "passages" not found'."""
    wh = Warehouse(tmp_path / "wh")
    old = pa.schema([field for field in RESULTS_SCHEMA if field.name not in LATER])
    row = {"dataset": "metaqa", "system": "s", "question_id": "q1", "f1": 0.5, "status": "ok"}
    write_results(wh, "metaqa", "s", pa.Table.from_pylist([row], schema=old))
    (read,) = read_results(wh.root).to_pylist()
    assert {name: read[name] for name in ("dataset", "system", "question_id", "f1", "status", *LATER)} == {
        **row,
        **dict.fromkeys(LATER),
    }
    assert read_results(wh.root).schema == RESULTS_SCHEMA


def test_eval_summary_leaves_a_ranker_whose_every_question_failed_unscored(tmp_path: Path) -> None:
    """The warehouse's eval_summary gave a passage ranker whose every question failed F1 0.000; a
    partition written before ``answer_scored`` existed still reads, its errors scored as before."""
    wh = Warehouse(tmp_path / "wh")
    failed = {"dataset": "hotpotqa", "question_id": "q1", "status": "error", "latency_s": 0.1}
    before = pa.schema([field for field in RESULTS_SCHEMA if field.name != "answer_scored"])
    for name, scored in (("dense", False), ("vector-rag", True), ("old", None)):
        row = {**failed, "system": name, "answer_scored": scored}
        schema = before if scored is None else RESULTS_SCHEMA
        write_results(wh, "hotpotqa", name, pa.Table.from_pylist([row], schema=schema))
    rows = summarize(wh, plots=False).table.to_pylist()
    assert [(r["system"], r["n_error"], r["f1"], r["em"]) for r in rows] == [
        ("dense", 1, None, None),
        ("old", 1, 0.0, 0.0),
        ("vector-rag", 1, 0.0, 0.0),
    ]
