# ruff: noqa: E402  (thread limits must be set before numpy loads)
"""SQLite's own time per row as the graph grows past the corpus: one apply's statements replayed into one
database again and again, each time as another corpus of the same shape.

Run: ``.venv/bin/python benchmarks/bench_sqlite_growth.py [--size 6119] [--copies 4]``. Needs
``../shared/data/2wiki/corpus.json``. The first SIZE passages' routed plan (as in ``bench_bulk_apply.py``)
is applied to a new SQLite graph with its statements recorded. The record is then replayed without
graphwalk (``sqlite_replay.py``) COPIES times into one database, each copy with keys of its own
(``sqlite_replay.copied``: new hash ids, ledger keys, name keys and source ids), made before its replay
is timed. Each copy's replay opens the database with the store's settings and closes it (its last
checkpoint). Printed per copy: its seconds, microseconds per statement row over the whole copy and over
its first and last four windows, and the database's size after it. A linear apply shows the same
microseconds per row in every copy. The run fails unless every table ends with COPIES times the
recorded rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from bench_bulk_apply import CORPUS, recorded, write_passages
from sqlite_replay import copied, fingerprint, per_row, replay_commits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=6119)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is absent (see ../shared/README.md)")
        return 0
    head = "copy | corpus so far | seconds | µs/row | µs/row, first / last windows | database MiB"
    print(f"| {head} |\n|" + "---|" * (head.count("|") + 1))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        write_passages(folder, args.size)
        log = asyncio.run(recorded(folder))
        recorded_rows = {table: rows for table, rows, _ in fingerprint(str(folder / "recorded.sqlite"))}
        path = folder / "replayed.sqlite"
        for copy in range(args.copies):
            entries = copied(log.entries, copy)  # made before the replay times anything
            seconds, commits = asyncio.run(replay_commits(entries, log.connections, f"sqlite:///{path}"))
            del entries
            overall, first, last, _ = per_row(commits)
            cells = (
                f"{copy + 1}",
                f"{(copy + 1) * args.size:,} passages",
                f"{seconds:.2f}",
                f"{overall:.1f}",
                f"{first} / {last}",
                f"{path.stat().st_size / 2**20:,.0f}",
            )
            print(f"| {' | '.join(cells)} |", flush=True)
        for table, rows, _ in fingerprint(str(path)):
            expected = recorded_rows[table] * (args.copies if table != "generation" else 1)
            if rows != expected:
                raise RuntimeError(f"{table}: {rows:,} rows after the replay, expected {expected:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
