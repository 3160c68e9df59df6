"""Another process holding a DuckDB session on a warehouse database, as the DuckDB CLI would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def duckdb_session(db: Path, *, read_only: bool, hold_s: float = 60) -> Iterator[int]:
    """A process with ``db`` open (read-only or read-write) while the block runs, for ``hold_s`` seconds
    at most; the block gets its process id."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(db)!r}, read_only={read_only}); "
            f"print(1, flush=True); time.sleep({hold_s})",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()
