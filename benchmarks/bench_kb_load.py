"""Load the MetaQA KB: MemoryGraphStore vs networkx.from_pandas_edgelist, each in a fresh process.

Each loader runs ``--repeat`` times in its own subprocess; load time covers reading kb.txt and
building the graph, peak RSS is that process's maximum resident set right after the load
(interpreter and imports included). Also measured in
the MemoryGraphStore process: ``adjacent()`` on the biggest hub, and a Parquet save/load round trip.
Goal: MemoryGraphStore load ≤ 1.5× networkx's time and ≤ 500 MB peak RSS.

    .venv/bin/python benchmarks/bench_kb_load.py [--kb ../shared/data/metaqa/kb.txt] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_KB = REPO.parent / "shared" / "data" / "metaqa" / "kb.txt"
LOADERS = ("memory", "networkx")


def peak_rss_mb() -> float:
    """This process's peak resident set so far, in MB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_memory(kb: Path) -> dict[str, float]:
    """Build the store, then time adjacent() on the biggest hub and a Parquet save/load."""
    import asyncio

    from graphwalk_core.stores.memory import MemoryGraphStore
    from graphwalk_core.stores.triples import read_triples

    start = time.perf_counter()
    store = MemoryGraphStore.from_triples(read_triples(kb), source_id="metaqa/kb")
    seconds = time.perf_counter() - start
    rss = peak_rss_mb()
    nodes, edges = asyncio.run(store.counts())
    degrees: dict[str, int] = {}
    for source, _, target in store.triples():
        degrees[source] = degrees.get(source, 0) + 1
        degrees[target] = degrees.get(target, 0) + 1
    hub = max(degrees, key=lambda n: degrees[n])

    async def adjacent_times() -> list[float]:
        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            await store.adjacent(hub)
            times.append(time.perf_counter() - t0)
        return times

    times = asyncio.run(adjacent_times())
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        store.save(folder)
        save_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        MemoryGraphStore.load(folder)
        load_s = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "peak_rss_mb": rss,
        "nodes": nodes,
        "edges": edges,
        "hub_degree": degrees[hub],
        "adjacent_p50_ms": statistics.median(times) * 1000,
        "save_s": save_s,
        "parquet_load_s": load_s,
    }


def load_networkx(kb: Path) -> dict[str, float]:
    import csv

    import networkx as nx
    import pandas as pd

    start = time.perf_counter()
    frame = pd.read_csv(
        kb,
        sep="|",
        header=None,
        names=["source", "relation", "target"],
        dtype=str,
        keep_default_na=False,
        quoting=csv.QUOTE_NONE,
        engine="c",
    )
    graph = nx.from_pandas_edgelist(
        frame, "source", "target", edge_attr="relation", create_using=nx.MultiDiGraph
    )
    seconds = time.perf_counter() - start
    nodes, edges = graph.number_of_nodes(), graph.number_of_edges()
    return {"seconds": seconds, "peak_rss_mb": peak_rss_mb(), "nodes": nodes, "edges": edges}


def child(loader: str, kb: Path) -> None:
    result = load_memory(kb) if loader == "memory" else load_networkx(kb)
    print(json.dumps(result))


def run_child(loader: str, kb: Path) -> dict[str, float]:
    """Run one loader in a fresh interpreter (peak RSS is measured right after its load)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", loader, "--kb", str(kb.resolve())],  # it runs in REPO
        capture_output=True,
        cwd=REPO,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{loader} loader failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=Path, default=DEFAULT_KB)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=LOADERS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.kb)
        return 0
    if not args.kb.is_file():
        print(f"skipped: {args.kb} is absent (this benchmark needs ../shared)")
        return 0
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in LOADERS}
    for _ in range(args.repeat):
        for name in LOADERS:  # interleaved, so machine load hits both alike
            runs[name].append(run_child(name, args.kb))
    summary = {
        name: {
            "seconds": statistics.median(r["seconds"] for r in results),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
            "nodes": results[0]["nodes"],
            "edges": results[0]["edges"],
        }
        for name, results in runs.items()
    }
    base = summary["networkx"]["seconds"]
    print(f"MetaQA KB load ({args.kb.name}), median of {args.repeat} fresh processes each")
    print(f"{'loader':<34} {'load s':>8} {'vs nx':>6} {'peak RSS MB':>12} {'nodes':>8} {'edges':>8}")
    labels = {"memory": "MemoryGraphStore.from_triples", "networkx": "nx.from_pandas_edgelist (Multi)"}
    for name, s in summary.items():
        print(
            f"{labels[name]:<34} {s['seconds']:>8.2f} {s['seconds'] / base:>5.2f}x {s['peak_rss_mb']:>12.0f} "
            f"{s['nodes']:>8,} {s['edges']:>8,}"
        )
    memory = runs["memory"]
    print(
        f"\nMemoryGraphStore on the {memory[0]['hub_degree']:,.0f}-edge hub: adjacent() p50 "
        f"{statistics.median(r['adjacent_p50_ms'] for r in memory):.3f} ms; Parquet save "
        f"{statistics.median(r['save_s'] for r in memory):.2f} s, load "
        f"{statistics.median(r['parquet_load_s'] for r in memory):.2f} s"
    )
    ratio = summary["memory"]["seconds"] / base
    ok = ratio <= 1.5 and summary["memory"]["peak_rss_mb"] <= 500
    print(f"goal (≤ 1.5× networkx time, ≤ 500 MB): {'met' if ok else 'NOT met'} (ratio {ratio:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
