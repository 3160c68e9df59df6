# ruff: noqa: E402  (thread limits must be set before numpy loads)
"""Reading a SQLite graph's large nodes (hubs): seconds and the memory the nodes hold.

Run: ``.venv/bin/python benchmarks/bench_hub_reads.py [--sizes 3000 6119]``. Needs
``../shared/data/2wiki/corpus.json``. Each size: the first N passages ingested into a SQLite graph as
``bench_bulk_apply.py`` does (offline defaults), the store closed; then a fresh store reads every node that
is stored as a head and parts, in one ``get_nodes`` call, twice: once timed (wall seconds), once under
``tracemalloc`` (MB the returned nodes hold, and the read's peak). refs: the record references the nodes
hold (provenance, attributes, names, summaries); objects: the distinct record objects behind them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from bench_bulk_apply import CORPUS, apply_windows, plan_for, write_passages
from sqlalchemy import create_engine, select

from graphwalk_core.model import Node
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.stores.sql_tables import node_parts_table


def record_refs(nodes: list[Node]) -> tuple[int, int]:
    """(record references the nodes hold, distinct record objects among them)."""
    refs = 0
    objects: set[int] = set()
    for node in nodes:
        groups = (node.provenance, *node.attribute_provenance.values(), *node.name_sources.values())
        for group in (*groups, *node.summary_sources.values()):
            refs += len(group)
            objects.update(map(id, group))
    return refs, len(objects)


async def read_hubs(url: str, ids: list[str]) -> tuple[float, float, float, int, int]:
    """Seconds to read ``ids`` with a fresh store; MB the nodes hold and the read's peak; refs, objects."""
    store = SQLGraphStore(url)
    try:
        started = time.perf_counter()
        await store.get_nodes(ids)
        seconds = time.perf_counter() - started
    finally:
        await store.close()
    store = SQLGraphStore(url)
    try:
        tracemalloc.start()
        nodes = await store.get_nodes(ids)
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        await store.close()
    refs, objects = record_refs(list(nodes.values()))
    return seconds, held / 1e6, peak / 1e6, refs, objects


async def build(url: str, folder: Path) -> list[str]:
    """Ingest ``folder`` into the SQLite graph at ``url``; the ids of its nodes stored as head and parts."""
    diff, plan, _ = await plan_for(folder)
    store = SQLGraphStore(url)
    try:
        await apply_windows(store, diff, plan)
    finally:
        await store.close()
    engine = create_engine(url)
    with engine.connect() as conn:
        column = node_parts_table.c.node_id
        ids = list(conn.scalars(select(column).distinct().order_by(column)))
    engine.dispose()
    return ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 6119])
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is absent (see ../shared/README.md)")
        return 0
    print("| passages | large nodes | refs | objects | read s | held MB | peak MB |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            folder = Path(tmp) / f"corpus{size}"
            write_passages(folder, size)
            url = f"sqlite:///{Path(tmp) / f'graph{size}.sqlite'}"
            ids = asyncio.run(build(url, folder))
            seconds, held, peak, refs, objects = asyncio.run(read_hubs(url, ids))
            cells = (f"{size:,}", f"{len(ids):,}", f"{refs:,}", f"{objects:,}", f"{seconds:.2f}")
            print(f"| {' | '.join(cells)} | {held:.1f} | {peak:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
