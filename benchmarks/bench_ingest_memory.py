"""Speed and peak memory of a first ingest: the 2Wiki passages (``../shared/data/2wiki/corpus.json``) as
one ``.txt`` file each (title, blank line, text), ingested from the folder as ``graphwalk ingest`` does,
offline defaults (NLP extractor, the shared MiniLM), default window. Files are numbered in passage-id
order, so the windows hold the passages an in-memory source of the same corpus would give them.

Run: ``.venv/bin/python benchmarks/bench_ingest_memory.py [--sizes 1000 3000 6119] [--store memory sqlite]
[--routing jev exact]``. ``jev`` is the CLI's default routing (embedding candidates + the local decider);
``exact`` is what ``graphwalk eval 2wiki-retrieval`` ingests with (names only, no model). Each (store,
routing, size) runs in its own process, so its peak RSS (``ru_maxrss``) is its own. Printed per row: wall
and CPU seconds (user + system, all threads: the number to trust on a shared machine), the phase split
(extract / route / apply, CPU seconds), peak RSS, and the load average before the row. Goals: issue 12,
the 6,119-passage ingest <= 75 s; issue 13, peak RSS <= 800 MB at 6,119 passages, flat from 3,000 on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "2wiki" / "corpus.json"
PHASES = ("extract", "route", "apply")


async def one(size: int, store_kind: str, routing: str) -> dict[str, object]:
    from graphwalk_core.decisions.factory import make_decider
    from graphwalk_core.embeddings.factory import make_embedder
    from graphwalk_core.eval.datasets.twowiki import load_corpus
    from graphwalk_core.eval.ingestion import PassageSource
    from graphwalk_core.ingest.pipeline import ingest
    from graphwalk_core.ingest.sources import FileSource
    from graphwalk_core.settings import get_settings
    from graphwalk_core.stores.memory import MemoryGraphStore
    from graphwalk_core.stores.sql import SQLGraphStore

    settings = get_settings()
    embedder = make_embedder(settings) if routing == "jev" else None
    decider = make_decider(settings, embedder=embedder, name="local") if routing == "jev" else None
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        passages = sorted(load_corpus(CORPUS)[:size], key=lambda p: p.id)
        for rank, passage in enumerate(passages):
            (corpus / f"{rank:05d}.txt").write_text(PassageSource.text_of(passage), encoding="utf-8")
        count = len(passages)
        del passages  # the run reads the files, as the CLI does
        store = MemoryGraphStore() if store_kind == "memory" else SQLGraphStore(f"sqlite:///{tmp}/g.sqlite")
        start, cpu = time.perf_counter(), time.process_time()
        report = await ingest(
            FileSource(corpus, source_id="twowiki"),
            store,
            decider=decider,
            embedder=embedder,
            routing=routing,
        )
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        nodes, edges = await store.counts()
        await store.close()
    return {
        "passages": count,
        "nodes": nodes,
        "edges": edges,
        "seconds": round(seconds, 1),
        "cpu_s": round(cpu_seconds, 1),
        "phases_cpu": {p: round(report.cpu_seconds[p], 1) for p in PHASES},
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 6119])
    parser.add_argument("--store", nargs="+", default=["memory"], choices=["memory", "sqlite"])
    parser.add_argument("--routing", nargs="+", default=["jev"], choices=["jev", "exact"])
    parser.add_argument("--one", nargs=3, metavar=("SIZE", "STORE", "ROUTING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(one(int(args.one[0]), args.one[1], args.one[2]))))
        return 0
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} not found (see ../shared/README.md)")
        return 0
    split = " / ".join(PHASES)
    head = f"store | routing | passages | nodes | edges | wall s | CPU s | CPU {split} | peak RSS MB | load"
    print(f"| {head} |\n|" + "---|" * (head.count("|") + 1))
    for store in args.store:
        for routing in args.routing:
            for size in args.sizes:
                load = os.getloadavg()[0]
                out = subprocess.run(
                    [sys.executable, __file__, "--one", str(size), store, routing],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                row = json.loads(out.stdout.strip().splitlines()[-1])
                phases = " / ".join(str(row["phases_cpu"][p]) for p in PHASES)
                print(
                    f"| {store} | {routing} | {row['passages']:,} | {row['nodes']:,} | {row['edges']:,} "
                    f"| {row['seconds']} | {row['cpu_s']} | {phases} | {row['peak_mb']:,} | {load:.1f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
