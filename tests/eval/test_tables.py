"""The warehouse's evaluation tables (``graphwalk_core.eval.tables``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from graphwalk_core.eval.report import RESULTS_SCHEMA
from graphwalk_core.eval.tables import read_results, write_results
from graphwalk_core.warehouse import Warehouse

#: Columns the results gained after their first version (a warehouse may hold only older partitions).
LATER = ("passages", "recall_at_2", "recall_at_5", "recall_at_10", "all_supporting_at_10", "reused")


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
