"""Warehouse files (Parquet tables, plots, text exports) get the same mode as ``warehouse.duckdb``."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphwalk_core.eval.report import results_table
from graphwalk_core.eval.tables import summarize, write_results
from graphwalk_core.files import write_text_atomic
from graphwalk_core.warehouse import Warehouse


@pytest.fixture(params=[0o022, 0o027, 0o002], ids=["umask022", "umask027", "umask002"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_follow_the_umask_like_the_database(tmp_path: Path, umask: int) -> None:
    wh = Warehouse(tmp_path / "wh")
    write_results(wh, "custom", "relation-greedy", results_table([]))
    summary = summarize(wh)
    text = write_text_atomic("x\n", wh.root / "notes.txt")
    expected = 0o666 & ~umask
    files = {
        "warehouse.duckdb": wh.db_path,
        "results": wh.root / "eval_results/dataset=custom/system=relation-greedy/part-0.parquet",
        "summary": wh.root / "eval_summary/part-0.parquet",
        **summary.plots,
        "text": text,
    }
    assert {name: oct(_mode(path)) for name, path in files.items()} == {name: oct(expected) for name in files}
    # no temporary file is left behind
    assert not [p for p in wh.root.rglob(".*.tmp")]
