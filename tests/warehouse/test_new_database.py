"""Processes opening one new warehouse database at once (Dagster partitions starting together on a fresh
warehouse): DuckDB creates ``warehouse.duckdb`` in place, so another process found it empty ("not a valid
DuckDB database file"), or locked it before its creator and left it empty for good; the file is now made
whole beside it and linked into place."""

from __future__ import annotations

import os
from pathlib import Path

from graphwalk_core.warehouse import views

PROCESSES = 6
#: Rounds of processes starting together; before the fix a third to a half of them had one fail.
ROUNDS = 12


def connect_at_once(db: Path) -> list[int]:
    """Exit codes of forked children that open ``db`` for writing together (0: it opened)."""
    start = os.pipe()
    pids = []
    for _ in range(PROCESSES):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 3
            try:
                os.close(start[1])
                os.read(start[0], 1)  # every child waits here until the parent closes its end
                views.connect(db, read_only=False).close()
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(start[0])
    os.close(start[1])
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]


def test_processes_opening_one_new_warehouse_database_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        db = tmp_path / str(round_) / "warehouse.duckdb"
        db.parent.mkdir()
        assert connect_at_once(db) == [0] * PROCESSES
        views.connect(db, read_only=True).close()
        assert os.listdir(db.parent) == ["warehouse.duckdb"]
