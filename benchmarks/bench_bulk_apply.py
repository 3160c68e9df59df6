# ruff: noqa: E402  (thread limits must be set before numpy loads)
"""Apply-phase throughput of the durable stores: the 2Wiki passages' routed plan written to SQLite and
to PostgreSQL.

Run: ``.venv/bin/python benchmarks/bench_bulk_apply.py [--sizes 1000 3000 6119] [--stores memory sqlite]``.
Needs ``../shared/data/2wiki/corpus.json``; PostgreSQL is a throwaway server started on 127.0.0.1 from
Debian's binaries with its durable defaults (``tests/servers/postgres_server.py``), or
``--postgres-url`` (an empty database).
Each size: the first N passages as one ``.txt`` file each, diffed, chunked, extracted (offline NLP) and routed
(local decider, the shared MiniLM embedder: the offline defaults) once against an empty store; then the same
plan is applied to a fresh database of each store and only ``apply_plan`` and closing the store (SQLite's last
checkpoint) are timed, in wall seconds and in this process's CPU seconds (user + system: the number to compare
on a shared machine; PostgreSQL's own server processes are not in it). Rows: nodes and edges added plus
merges; ms/pass.: apply milliseconds per passage (flat when the apply is linear); KB/pass.: what this process
wrote to disk per passage during the apply and close (SQLite's log and checkpoints; "-" where the writes are
another process's, or unknown: the memory store, PostgreSQL, no ``/proc``); merge %: the share of those rows
that merged into an element already there (a merge reads, merges and rewrites; later windows merge more).
The memory store (``--stores memory``, listed first) is the reference without any database; x memory: a
store's apply CPU seconds over the memory store's for the same plan, flat across sizes when the database
adds a constant cost per unit of the work (the merges included). SQLite s: the seconds SQLite itself takes
for the same apply (its statements recorded in a second apply, then replayed without graphwalk:
``sqlite_replay.py``). Goal at 6,119 passages: apply <= 20 s on SQLite, <= 40 s on PostgreSQL, linear in
the corpus size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from sqlite_replay import StatementLog, fingerprint, replay_seconds

from graphwalk_core.decisions.factory import make_decider
from graphwalk_core.embeddings.factory import make_embedder
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.ingest.outputs import DocumentDiff, RoutingPlan, UpdateReport
from graphwalk_core.ingest.pipeline import DEFAULT_WINDOW
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.ingest.stages import (
    apply_plan,
    chunk_documents,
    diff_documents,
    extract_chunks,
    route_extractions,
)
from graphwalk_core.settings import get_settings
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.sql import SQLGraphStore

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "2wiki" / "corpus.json"
sys.path.insert(0, str(REPO / "tests"))
WIDTHS = (8, 10, 7, 8, 7, 9, 8, 8, 8, 8, 8, 8, 7, 7)


def written_bytes() -> int | None:
    """Bytes this process has caused to be written to storage (Linux ``/proc/self/io``), else None."""
    try:
        lines = Path("/proc/self/io").read_text().splitlines()
    except OSError:
        return None
    return int(dict(line.split(": ") for line in lines)["write_bytes"])


def write_passages(folder: Path, limit: int) -> None:
    """The first ``limit`` passages, one ``.txt`` file each: the title line, a blank line, the text."""
    passages = json.loads(CORPUS.read_text(encoding="utf-8"))[:limit]
    folder.mkdir(parents=True)
    for i, passage in enumerate(passages):
        (folder / f"p{i:05d}.txt").write_text(f"{passage['title']}\n\n{passage['text']}\n", encoding="utf-8")


async def plan_for(folder: Path) -> tuple[DocumentDiff, RoutingPlan, float]:
    """The diff and routed plan of a first ingest of ``folder`` (offline defaults); seconds it took."""
    started = time.perf_counter()
    empty = MemoryGraphStore()
    extractor = NLPExtractor()
    diff = await diff_documents(FileSource(folder, source_id="2wiki"), empty, extractor=extractor)
    extractions = await extract_chunks(chunk_documents(diff), extractor)
    embedder = make_embedder(get_settings())
    decider = make_decider(get_settings(), embedder=embedder)
    plan = await route_extractions(extractions, empty, decider, embedder, None)
    return diff, plan, time.perf_counter() - started


async def apply_windows(store: GraphStore, diff: DocumentDiff, plan: RoutingPlan) -> UpdateReport:
    """Apply ``plan`` to ``store`` window by window, as an ingest does."""
    report = UpdateReport(source_id=diff.source_id)
    for start in range(0, len(plan.documents), DEFAULT_WINDOW):
        window = plan.model_copy(update={"documents": plan.documents[start : start + DEFAULT_WINDOW]})
        await apply_plan(store, diff, window, report=report)
    return report


async def timed_apply(
    url: str | None, diff: DocumentDiff, plan: RoutingPlan
) -> tuple[float, float, int, int, tuple[int, int], int | None]:
    """Wall and CPU seconds to apply ``plan`` to the empty store at ``url`` (None: a memory store) and
    close it, rows written, merges among them, final (nodes, edges), bytes this process wrote to storage
    (None: unknown).

    Closing is timed: SQLite copies its log into the database file then (the last checkpoint), and a
    small run's whole log is copied only then, so timing the windows alone would leave the smallest
    runs' file writes out."""
    store = MemoryGraphStore() if url is None else SQLGraphStore(url)
    closed = False
    try:
        written = written_bytes()
        started, cpu = time.perf_counter(), time.process_time()
        report = await apply_windows(store, diff, plan)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        counts = await store.counts()
        started, closing = time.perf_counter(), time.process_time()
        closed = True
        await store.close()
        seconds, cpu = seconds + time.perf_counter() - started, cpu + time.process_time() - closing
        after = written_bytes()
        merges = report.nodes_merged + report.edges_merged
        rows = report.nodes_added + report.edges_added + merges
        wrote = after - written if after is not None and written is not None else None
        return seconds, cpu, rows, merges, counts, wrote
    finally:
        if not closed:
            await store.close()


async def recorded_apply(path: Path, diff: DocumentDiff, plan: RoutingPlan) -> StatementLog:
    """The statements SQLite receives while ``plan`` is applied to a new graph database at ``path``."""
    url = f"sqlite:///{path}"
    store = SQLGraphStore(url)
    try:
        with StatementLog(url) as log:
            await apply_windows(store, diff, plan)
    finally:
        await store.close()
    return log


async def recorded(folder: Path) -> StatementLog:
    """The statements of applying ``folder``'s routed plan to a new SQLite graph in ``folder``."""
    diff, plan, _ = await plan_for(folder)
    return await recorded_apply(folder / "recorded.sqlite", diff, plan)


async def sqlite_seconds(folder: Path, diff: DocumentDiff, plan: RoutingPlan) -> float:
    """SQLite's own seconds for the apply: ``plan`` applied once more to a new database in ``folder`` with
    its statements recorded, then replayed without graphwalk on another (see ``sqlite_replay``)."""
    folder.mkdir()
    log = await recorded_apply(folder / "recorded.sqlite", diff, plan)
    seconds = await replay_seconds(log, f"sqlite:///{folder / 'replayed.sqlite'}")
    if fingerprint(str(folder / "recorded.sqlite")) != fingerprint(str(folder / "replayed.sqlite")):
        raise RuntimeError("the replayed SQLite database differs from the recorded one")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 6119])
    parser.add_argument(
        "--stores", nargs="+", choices=["memory", "sqlite", "postgresql"], default=["sqlite", "postgresql"]
    )
    parser.add_argument("--postgres-url", help="an empty PostgreSQL database (default: a throwaway server)")
    args = parser.parse_args()
    if args.postgres_url and "postgresql" in args.stores and len(args.sizes) > 1:
        parser.error("--postgres-url is one empty database, which the first size fills: give one --sizes")
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is absent (see ../shared/README.md)")
        return 0
    server = None
    if "postgresql" in args.stores and not args.postgres_url:
        from servers.postgres_server import PostgresServer

        server = PostgresServer(fast=False).start()  # durable defaults, like SQLite
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    columns = ("passages", "store", "plan s", "apply s", "cpu s", "SQLite s", "rows", "rows/s", "ms/pass.")
    columns += ("KB/pass.", "merge %", "x memory", "nodes", "edges")
    stores = sorted(args.stores, key=lambda kind: kind != "memory")  # the reference first
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, WIDTHS, strict=True)))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for size in args.sizes:
                folder = Path(tmp) / f"corpus{size}"
                write_passages(folder, size)
                diff, plan, plan_seconds = asyncio.run(plan_for(folder))
                reference: float | None = None
                for kind in stores:
                    url: str | None = None
                    if kind == "sqlite":
                        url = f"sqlite:///{Path(tmp) / f'graph{size}.sqlite'}"
                    elif kind == "memory":
                        url = None
                    elif args.postgres_url:
                        url = args.postgres_url
                    else:
                        assert server is not None
                        url = server.url(server.create_database(f"bench{size}"))
                    timed = asyncio.run(timed_apply(url, diff, plan))
                    seconds, cpu, rows, merges, (nodes, edges), wrote = timed
                    reference = cpu if kind == "memory" else reference
                    ratio = f"{cpu / reference:.2f}" if reference else "-"
                    per = f"{wrote / 1000 / size:.0f}" if wrote is not None and kind == "sqlite" else "-"
                    ms = 1000 * seconds / size
                    own = "-"
                    if kind == "sqlite":
                        own = f"{asyncio.run(sqlite_seconds(Path(tmp) / f'replay{size}', diff, plan)):.2f}"
                    print(
                        f"{size:>8} {kind:>10} {plan_seconds:>7.1f} {seconds:>8.1f} {cpu:>7.1f} {own:>9} "
                        f"{rows:>8} {rows / seconds:>8.0f} {ms:>8.2f} {per:>8} {100 * merges / rows:>8.1f} "
                        f"{ratio:>8} {nodes:>7} {edges:>7}",
                        flush=True,
                    )
    finally:
        if server is not None:
            server.stop()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
