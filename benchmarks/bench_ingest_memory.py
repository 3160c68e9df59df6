"""Peak memory of a first ingest: the 2Wiki passages (``../shared/data/2wiki/corpus.json``), one text
document each, offline defaults (NLP extractor, decider routing with the local decider), default window.

Run: ``.venv/bin/python benchmarks/bench_ingest_memory.py [--sizes 1000 3000 6119] [--store memory sqlite]``.
Each (store, size) runs in its own process, so its peak RSS (``ru_maxrss``) is its own. Goal (issue 13):
<= 800 MB at 6,119 passages, flat from 3,000 on: the pipeline holds one routing window's extractions and
plans, not the corpus'.
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

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "2wiki" / "corpus.json"


async def one(size: int, store_kind: str) -> dict[str, float]:
    from graphwalk_core.decisions.factory import make_decider
    from graphwalk_core.embeddings.factory import make_embedder
    from graphwalk_core.eval.datasets.twowiki import load_corpus
    from graphwalk_core.eval.ingestion import PassageSource
    from graphwalk_core.ingest.pipeline import ingest
    from graphwalk_core.settings import get_settings
    from graphwalk_core.stores.memory import MemoryGraphStore
    from graphwalk_core.stores.sql import SQLGraphStore

    passages = load_corpus(CORPUS)[:size]
    settings = get_settings()
    embedder = make_embedder(settings)
    decider = make_decider(settings, embedder=embedder, name="local")
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryGraphStore() if store_kind == "memory" else SQLGraphStore(f"sqlite:///{tmp}/g.sqlite")
        start = time.perf_counter()
        report = await ingest(PassageSource("twowiki", passages), store, decider=decider, embedder=embedder)
        seconds = time.perf_counter() - start
        nodes, edges = await store.counts()
        await store.close()
    return {
        "passages": len(passages),
        "nodes": nodes,
        "edges": edges,
        "seconds": round(seconds, 1),
        "apply_s": report.seconds["apply"],
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 6119])
    parser.add_argument("--store", nargs="+", default=["memory"], choices=["memory", "sqlite"])
    parser.add_argument("--one", nargs=2, metavar=("SIZE", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(one(int(args.one[0]), args.one[1]))))
        return 0
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} not found (see ../shared/README.md)")
        return 0
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print(
        f"{'store':<8}{'passages':>9}{'nodes':>8}{'edges':>8}{'seconds':>9}{'apply s':>9}{'peak RSS MB':>13}"
    )
    for store in args.store:
        for size in args.sizes:
            out = subprocess.run(
                [sys.executable, __file__, "--one", str(size), store],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{store:<8}{row['passages']:>9}{row['nodes']:>8}{row['edges']:>8}"
                f"{row['seconds']:>9}{row['apply_s']:>9}{row['peak_mb']:>13}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
