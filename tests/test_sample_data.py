"""The demo's sample database script (data/build_sample_db.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "data" / "build_sample_db.py"


def dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def test_it_rebuilds_the_shipped_sample(tmp_path: Path) -> None:
    out = tmp_path / "sample.sqlite"
    subprocess.run([sys.executable, str(SCRIPT), str(out)], check=True, cwd=tmp_path)
    assert dump(out) == dump(REPO / "data" / "sample.sqlite")


def test_help_prints_usage_and_writes_nothing(tmp_path: Path) -> None:
    """``--help`` was taken for the output path: it wrote a database named ``--help``."""
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert (run.returncode, run.stdout.splitlines()[0]) == (0, "usage: build_sample_db.py [-h] [out]")
    assert list(tmp_path.iterdir()) == []
