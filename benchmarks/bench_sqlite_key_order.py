# ruff: noqa: E402  (thread limits must be set before numpy loads)
"""SQLite's own time for an apply, with the graph's hash ids and with keys in insertion order.

Run: ``.venv/bin/python benchmarks/bench_sqlite_key_order.py [--sizes 6119] [--repeats 2]``. Needs
``../shared/data/2wiki/corpus.json``. Each size: the first N passages' routed plan (as in
``bench_bulk_apply.py``) is applied to a new SQLite graph with its statements recorded; the statements are
then replayed without graphwalk (``sqlite_replay.py``) as recorded, and with every hash id replaced by a
key of the same length that sorts in first-use order: what a schema keyed by insertion order would cost
SQLite. Printed per replay: seconds; microseconds per statement row over the replay, and in the first and
the last four windows (one commit each), with the growth between them. A linear apply shows the same
microseconds per row at every size and no growth.
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
from sqlite_replay import fingerprint, insertion_ordered, per_row, replay_commits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[6119])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is absent (see ../shared/README.md)")
        return 0
    print("| passages | keys | replay s | µs/row | µs/row, first windows | µs/row, last windows | growth |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            folder = Path(tmp) / f"corpus{size}"
            write_passages(folder, size)
            log = asyncio.run(recorded(folder))
            expected = fingerprint(str(folder / "recorded.sqlite"))
            for keys, entries in (
                ("hash ids", log.entries),
                ("insertion order", insertion_ordered(log.entries)),
            ):
                for repeat in range(args.repeats):
                    path = folder / f"replay-{keys.replace(' ', '-')}-{repeat}.sqlite"
                    seconds, commits = asyncio.run(
                        replay_commits(entries, log.connections, f"sqlite:///{path}")
                    )
                    if fingerprint(str(path)) != expected:
                        raise RuntimeError(f"the {keys} replay differs from the recorded database")
                    overall, first, last, growth = per_row(commits)
                    cells = (f"{size:,}", keys, f"{seconds:.2f}", f"{overall:.1f}", first, last, growth)
                    print(f"| {' | '.join(cells)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
