"""Four source partitions ingesting into one PostgreSQL graph at once through Dagster's multiprocess
executor: ``python -m graphwalk_dagster.scale_out`` starts one ``ingest_parallel`` run per partition, each
in a process of its own, every step in a process of the multiprocess executor, the instance on the test
server. All runs succeed, their graph-writing steps overlap in time in distinct processes, and the graph
and every ledger equal a sequential ``graphwalk ingest --routing exact`` of the same sources. Without
the store's writer lock (``pg_advisory_xact_lock``) a run fails here (checked by hand).

The driver runs in a subprocess so its processes (and the fork server the steps start from) see the
environment set here, whatever this test process imported or started before.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
from datetime import datetime
from itertools import combinations
from pathlib import Path

import dagster as dg
import pytest
import typer
from dagster_fixtures import REPO
from servers.postgres_server import PostgresServer

from graphwalk_core.cli.ingest import ingest as cli_ingest
from graphwalk_core.stores.sql import SQLGraphStore

PEOPLE = ["Alice Moreau", "Bruno Keller", "Chiara Russo", "Dmitri Volkov", "Elena Sanz", "Farid Haddad"]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Quito", "Accra"]
SOURCES = [f"s{n}" for n in range(4)]
DOCUMENTS = 40


def write_sources(root: Path) -> Path:
    """Four folders of short documents about the same people and places (every source merges into the
    same nodes, so concurrent writers contend for them) and a sources.yaml declaring them with exact
    routing (names only: a concurrent run must then equal a sequential one exactly)."""
    rng = random.Random(20261205)
    entries = []
    for source in SOURCES:
        folder = root / source
        folder.mkdir(parents=True)
        for d in range(DOCUMENTS):
            a, b = rng.sample(PEOPLE, 2)
            text = f"{a} met {b} in {rng.choice(PLACES)} in {rng.randint(1950, 2020)}."
            (folder / f"doc{d:02d}.txt").write_text(text, encoding="utf-8")
        entries.append(f"- id: {source}\n  kind: files\n  path_or_url: {source}\n  extractor: nlp\n")
        entries.append("  routing: exact\n")
    sources = root / "sources.yaml"
    sources.write_text("".join(entries), encoding="utf-8")
    return sources


async def snapshot(url: str) -> dict[str, object]:
    """Nodes, edges and each source's ledger (without times): equal graphs give equal snapshots."""
    from graphwalk_core.ingest.ledger import read_ledger

    store = SQLGraphStore(url)
    try:
        out: dict[str, object] = {
            "nodes": sorted([n.model_dump(mode="json") async for n in store.iter_nodes()], key=str),
            "edges": sorted([e.model_dump(mode="json") async for e in store.iter_edges()], key=str),
        }
        for source in SOURCES:
            ledger = await read_ledger(store, source)
            out[source] = sorted((e.document_id, e.content_hash, e.status) for e in ledger.values())
        return out
    finally:
        await store.close()


def step_spans(instance: dg.DagsterInstance, run_id: str, step: str) -> tuple[datetime, datetime, str]:
    """When ``step`` of the run started and succeeded, and the pid of the process that ran it."""
    events = instance.all_logs(run_id)
    by_type = {
        e.dagster_event.event_type_value: e
        for e in events
        if e.dagster_event is not None and e.step_key == step
    }
    pid = by_type["STEP_WORKER_STARTED"].dagster_event.event_specific_data.metadata["pid"].value
    start, end = by_type["STEP_START"].timestamp, by_type["STEP_SUCCESS"].timestamp
    return datetime.fromtimestamp(start), datetime.fromtimestamp(end), pid


def test_four_partitions_at_once_equal_a_sequential_run(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance_db = postgres_server.create_database("dagster")
    at_once, one_by_one = postgres_server.create_database("at_once"), postgres_server.create_database("seq")
    sources = write_sources(tmp_path / "corpus")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.postgres.yaml", home / "dagster.yaml")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GRAPHWALK_JEV_API_KEY", "GRAPHWALK_LLM_MODEL", "GRAPHWALK_DECIDER")
    }
    env |= {
        "DAGSTER_HOME": str(home),
        "GRAPHWALK_DAGSTER_PG_URL": postgres_server.url(instance_db, driver="postgresql+psycopg2"),
        "GRAPHWALK_GRAPH_URL": postgres_server.url(at_once),
        "GRAPHWALK_WAREHOUSE": str(tmp_path / "warehouse"),
        "GRAPHWALK_SOURCES": str(sources),
    }
    command = [sys.executable, "-m", "graphwalk_dagster.scale_out", *SOURCES, "--max-runs", str(len(SOURCES))]
    log = tmp_path / "scale_out.log"
    with log.open("w") as out:
        done = subprocess.run(
            command, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, timeout=300
        )
    assert done.returncode == 0, log.read_text()[-3000:]

    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", env["GRAPHWALK_DAGSTER_PG_URL"])
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert sorted((r.job_name, r.tags["dagster/partition"], r.status.value) for r in runs) == [
            ("ingest_parallel", source, "SUCCESS") for source in SOURCES
        ]
        spans = [step_spans(instance, r.run_id, "graph_updates") for r in runs]
    # every run wrote from a process of its own, and writes of different runs overlapped in time
    assert len({pid for _, _, pid in spans}) == len(SOURCES)
    assert any(a[0] < b[1] and b[0] < a[1] for a, b in combinations(spans, 2)), spans

    # the same sources one after another with `graphwalk ingest --routing exact`, into another database
    for source in SOURCES:
        try:
            cli_ingest(
                str(sources.parent / source),
                graph=postgres_server.url(one_by_one),
                source_id=source,
                routing="exact",
                quiet=True,
            )
        except typer.Exit as exc:
            assert exc.exit_code == 0
    concurrent, sequential = (asyncio.run(snapshot(postgres_server.url(db))) for db in (at_once, one_by_one))
    assert [len(concurrent[s]) for s in SOURCES] == [DOCUMENTS] * len(SOURCES)
    assert len(concurrent["nodes"]) == 67  # 6 people, 5 places, 56 years
    assert concurrent == sequential
