"""Scale-out: the 2Wiki passages split into source partitions, ingested into PostgreSQL by Dagster in
one process, then by ``ingest_parallel`` runs on the multiprocess executor, N at once.

Run: ``.venv/bin/python benchmarks/bench_scale_out.py [--n-passages 6119] [--partitions 8] [--runs 8]``.
Needs ``../shared/data/2wiki/corpus.json``. PostgreSQL is a throwaway server on 127.0.0.1 with its
durable defaults (``tests/servers/postgres_server.py``); the Dagster instance is on it too
(``dagster.postgres.yaml``, which lets 8 graph_store steps run at once).
The first N passages, one ``.txt`` file each, go round-robin into P folders declared as P sources
(offline NLP extraction, ``routing: exact``: names only, so a concurrent ingest must equal a
sequential one). One process: the P partitions one after another, in process (Dagster's in-process
executor). N processes: ``python -m graphwalk_dagster.scale_out`` (one run per partition, ``--runs``
at once, each in its own process, every step in a process of the multiprocess executor).
Both graphs are dumped canonically (nodes, edges and every source's ledger, sorted JSON) and compared.
The machine has 2 cores: expect at most ~2x, less while other work shares them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "2wiki" / "corpus.json"
sys.path.insert(0, str(REPO / "tests"))


def write_partitions(root: Path, limit: int, partitions: int) -> tuple[Path, list[str]]:
    """The first ``limit`` passages round-robin into ``partitions`` folders; their sources.yaml."""
    passages = json.loads(CORPUS.read_text(encoding="utf-8"))[:limit]
    ids = [f"wiki{p}" for p in range(partitions)]
    for source in ids:
        (root / source).mkdir(parents=True)
    for i, passage in enumerate(passages):
        path = root / ids[i % partitions] / f"p{i:05d}.txt"
        path.write_text(f"{passage['title']}\n\n{passage['text']}\n", encoding="utf-8")
    entries = [
        f"- id: {s}\n  kind: files\n  path_or_url: {s}\n  extractor: nlp\n  routing: exact\n" for s in ids
    ]
    sources = root / "sources.yaml"
    sources.write_text("".join(entries), encoding="utf-8")
    return sources, ids


async def canonical_dump(url: str, source_ids: list[str]) -> tuple[str, int, int]:
    """SHA-256 of the graph's nodes, edges and ledgers as sorted JSON lines; node and edge counts."""
    from graphwalk_core.ingest.ledger import read_ledger
    from graphwalk_core.stores.sql import SQLGraphStore

    store = SQLGraphStore(url)
    try:
        nodes = sorted(
            [json.dumps(n.model_dump(mode="json"), sort_keys=True) async for n in store.iter_nodes()]
        )
        edges = sorted(
            [json.dumps(e.model_dump(mode="json"), sort_keys=True) async for e in store.iter_edges()]
        )
        digest = hashlib.sha256()
        for line in (*nodes, *edges):
            digest.update(line.encode() + b"\n")
        for source in source_ids:
            ledger = await read_ledger(store, source)
            for entry in sorted((e.document_id, e.content_hash, e.status) for e in ledger.values()):
                digest.update(json.dumps(entry).encode() + b"\n")
        return digest.hexdigest(), len(nodes), len(edges)
    finally:
        await store.close()


def one_process(sources: Path, ids: list[str], graph_url: str, work: Path) -> float:
    """Seconds to ingest every partition one after another in this process (in-process executor)."""
    import dagster as dg

    from graphwalk_core.settings import get_settings
    from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION
    from graphwalk_dagster.demo import INGEST_CHAIN, QUIET_LOGS, offline_resources

    os.environ["GRAPHWALK_GRAPH_URL"] = graph_url
    get_settings.cache_clear()
    resources = offline_resources(work / "warehouse1", sources_file=sources)
    started = time.perf_counter()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(SOURCES_PARTITION, ids)
        for source in ids:
            result = dg.materialize(
                INGEST_CHAIN,
                partition_key=source,
                resources=resources,
                instance=instance,
                run_config=QUIET_LOGS,
            )
            if not result.success:
                raise RuntimeError(f"ingesting {source} in one process failed")
    return time.perf_counter() - started


def many_processes(
    sources: Path, ids: list[str], graph_url: str, instance_url: str, runs: int, work: Path
) -> float:
    """Seconds for ``python -m graphwalk_dagster.scale_out`` to ingest every partition, ``runs`` at once."""
    home = work / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.postgres.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "GRAPHWALK_DAGSTER_PG_URL": instance_url,
        "GRAPHWALK_GRAPH_URL": graph_url,
        "GRAPHWALK_WAREHOUSE": str(work / "warehouseN"),
        "GRAPHWALK_SOURCES": str(sources),
    }
    for name in ("GRAPHWALK_JEV_API_KEY", "GRAPHWALK_LLM_MODEL", "GRAPHWALK_DECIDER"):
        env.pop(name, None)
    command = [sys.executable, "-m", "graphwalk_dagster.scale_out", *ids, "--max-runs", str(runs)]
    log = work / "scale_out.log"
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(command, env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"scale_out failed:\n{log.read_text()[-3000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-passages", type=int, default=6119, help="first N 2Wiki passages (all: 6119)")
    parser.add_argument("--partitions", type=int, default=8, help="source partitions (default 8)")
    parser.add_argument("--runs", type=int, default=8, help="runs at once in the scale-out (default 8)")
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is absent (see ../shared/README.md)")
        return 0
    from servers.postgres_server import PostgresServer

    server = PostgresServer(fast=False).start()  # durable defaults
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            sources, ids = write_partitions(work / "corpus", args.n_passages, args.partitions)
            graph_1, graph_n = (server.url(server.create_database(n)) for n in ("one", "many"))
            instance_url = server.url(server.create_database("dagster"), driver="postgresql+psycopg2")
            print(
                f"{args.n_passages} passages in {args.partitions} partitions; "
                f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)",
                flush=True,
            )
            seconds_1 = one_process(sources, ids, graph_1, work)
            load_mid = os.getloadavg()[0]
            print(f"1 process: {seconds_1:.1f} s (load average {load_mid:.2f})", flush=True)
            seconds_n = many_processes(sources, ids, graph_n, instance_url, args.runs, work)
            load_end = os.getloadavg()[0]
            dump_1, dump_n = (asyncio.run(canonical_dump(url, ids)) for url in (graph_1, graph_n))
    finally:
        server.stop()
    rows = [
        ("1 process (in-process executor)", seconds_1, dump_1),
        (f"{args.runs} runs at once (multiprocess)", seconds_n, dump_n),
    ]
    print(f"{'mode':<34} {'wall s':>8} {'speed-up':>9} {'nodes':>7} {'edges':>7}  graph sha256")
    for label, seconds, (digest, nodes, edges) in rows:
        print(f"{label:<34} {seconds:>8.1f} {seconds_1 / seconds:>9.2f} {nodes:>7} {edges:>7}  {digest[:16]}")
    print(f"graphs equal: {dump_1 == dump_n}; load after 1 process {load_mid:.2f}, at end {load_end:.2f}")
    return 0 if dump_1 == dump_n else 1


if __name__ == "__main__":
    raise SystemExit(main())
