"""Processes opening one new warehouse database at once (Dagster partitions starting together on a fresh
warehouse): DuckDB creates ``warehouse.duckdb`` in place, so another process found it empty ("not a valid
DuckDB database file"), or locked it before its creator and left it empty for good; the file is now made
whole beside it and linked into place."""

from __future__ import annotations

import os
from pathlib import Path

import forked_jobs

from graphwalk_core.warehouse import views

PROCESSES = 6
#: Rounds of processes starting together; before the fix a third to a half of them had one fail.
ROUNDS = 12


def connect_at_once(db: Path) -> list[int]:
    """Exit codes of forked children that open ``db`` for writing together (0: it opened)."""
    return forked_jobs.at_once(lambda _: views.connect(db, read_only=False).close(), PROCESSES)


def test_processes_opening_one_new_warehouse_database_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        db = tmp_path / str(round_) / "warehouse.duckdb"
        db.parent.mkdir()
        assert connect_at_once(db) == [0] * PROCESSES
        views.connect(db, read_only=True).close()
        assert os.listdir(db.parent) == ["warehouse.duckdb"]
