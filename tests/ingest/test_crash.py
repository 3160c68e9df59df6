"""Crash safety: SIGKILL the ingest command at seeded random points; the final graph equals a clean run."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import typer

from graphwalk_core.cli.ingest import ingest as cli_ingest
from graphwalk_core.stores import node_parts
from graphwalk_core.stores.sql import SQLGraphStore

from .conftest import graph_tables, write_hotpotqa_paragraphs

PEOPLE = ["Alice Moreau", "Bruno Keller", "Chiara Russo", "Dmitri Volkov", "Elena Sanz", "Farid Haddad"]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Quito", "Accra"]
KILLS = 20


def sentence(rng: random.Random) -> str:
    a, b = rng.sample(PEOPLE, 2)
    return f"{a} met {b} in {rng.choice(PLACES)} in {rng.randint(1950, 2020)}."


def mutate(root: Path, rng: random.Random, step: int) -> None:
    """Step 0 writes 12 documents; later steps change 5, delete 1 and add 1 (every run has work)."""
    docs = sorted(root.glob("*.txt"))
    if step == 0:
        for i in range(12):
            (root / f"doc{i:03d}.txt").write_text(" ".join(sentence(rng) for _ in range(2)), encoding="utf-8")
        return
    for path in rng.sample(docs, 5):
        path.write_text(" ".join(sentence(rng) for _ in range(2)), encoding="utf-8")
    rng.choice([d for d in docs if d.exists()]).unlink()
    (root / f"doc{100 + step:03d}.txt").write_text(sentence(rng), encoding="utf-8")


def command(corpus: Path, graph: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "graphwalk_core.cli.ingest",
        str(corpus),
        "--graph",
        graph,
        "--source-id",
        "crash",
        "--routing",
        "exact",
        "--quiet",
    ]


#: What the command imports lazily: loaded once in the parent so forked children start at once.
PRELOAD = (
    "rich.progress",
    "rich.table",
    "graphwalk_core.ingest.pipeline",
    "graphwalk_core.ingest.sources.specs",
    "graphwalk_core.ingest.extraction.cache",
    "graphwalk_core.stores.open",
    "graphwalk_core.settings",
)


def fork_ingest(corpus: Path, graph: str | Path, **options: Any) -> int:
    """Run the ``graphwalk ingest`` command function in a forked child (no interpreter start-up); its pid.
    ``options``: the command's options (default: source id ``crash``, exact routing)."""
    options = {"source_id": "crash", "routing": "exact", **options}
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            cli_ingest(str(corpus), graph=str(graph), quiet=True, **options)
        except typer.Exit as exc:
            code = exc.exit_code
        finally:
            os._exit(code)
    return pid


def wait(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


async def tables(graph: str) -> dict:
    store = SQLGraphStore(graph)
    try:
        return await graph_tables(store, "crash")
    finally:
        await store.close()


def test_sigkill_at_random_points_loses_and_duplicates_nothing(
    sql_graph_url: Callable[[str], str], tmp_path: Path
) -> None:
    graph = sql_graph_url

    for module in PRELOAD:
        importlib.import_module(module)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rng = random.Random(20261130)
    mutate(corpus, rng, 0)
    crashed = graph("crashed")
    started = time.perf_counter()
    assert wait(fork_ingest(corpus, graph("probe"))) == 0
    duration = time.perf_counter() - started
    kills = step = 0
    while kills < KILLS:
        step += 1
        assert step <= 3 * KILLS, f"only {kills} kills landed in {step} runs"
        pid = fork_ingest(corpus, crashed)
        delay = rng.uniform(0.0, 0.8 * duration)
        time.sleep(delay)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            # a child that finished just before the signal exits normally: not a kill
            kills += wait(pid) == -signal.SIGKILL
        else:  # done sooner than the first, full run (a rerun has less to do): aim the next kills earlier
            duration = max(delay, 0.05)
        mutate(corpus, rng, step)
    # finish with the real command line in a fresh interpreter, then compare with a clean run
    subprocess.run(command(corpus, crashed), check=True, timeout=300)
    fresh = graph("fresh")
    assert wait(fork_ingest(corpus, fresh)) == 0
    after_kills, clean = asyncio.run(tables(crashed)), asyncio.run(tables(fresh))
    assert len(clean["ledger"]) == len(list(corpus.glob("*.txt")))
    assert after_kills == clean


#: Documents per routing window in the default-routing crash test (10 windows over 200 paragraphs).
WINDOW = 20
ROUTED_PRELOAD = (
    *PRELOAD,
    "graphwalk_core.decisions.factory",
    "graphwalk_core.decisions.local",
    "graphwalk_core.embeddings.factory",
    "graphwalk_core.embeddings.fastembed",
)


def fork_routed_ingest(corpus: Path, graph: Path) -> int:
    """``graphwalk ingest CORPUS --graph GRAPH --window 20`` with the default (decider) routing, forked."""
    return fork_ingest(corpus, graph, source_id="hp", routing="jev", window=WINDOW)


def sorted_tables(graph: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table of a SQLite graph as sorted rows (nodes, edges, names, provenance, ledger); ledger
    entries without their ingestion time; a large node as the node its head and parts give (how its
    records are split into parts, and the count of write transactions, depend on where runs stopped)."""
    with closing(sqlite3.connect(graph)) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {name: sorted(conn.execute(f"SELECT * FROM {name}")) for name in names}
    assert tables.pop("generation")[0][1] > 0
    parts: dict[str, list[str]] = {}
    for node_id, _, data in tables.pop("node_parts"):  # sorted: in part order
        parts.setdefault(node_id, []).append(data)
    tables["large"] = [(i,) for i, _, _, d in tables["nodes"] if d.startswith(node_parts.HEAD)]
    tables["nodes"] = [
        (
            i,
            t,
            n,
            node_parts.assemble(d, parts.pop(i)).model_dump_json() if d.startswith(node_parts.HEAD) else d,
        )
        for i, t, n, d in tables["nodes"]
    ]
    assert not parts  # no part without its head
    tables["metadata"] = sorted(
        (key, json.dumps({**json.loads(value), "ingested_at": None}, sort_keys=True))
        for key, value in tables["metadata"]
    )
    return tables


@pytest.mark.slow
def test_sigkilled_default_routing_ingest_resumes_to_the_uninterrupted_graph(tmp_path: Path) -> None:
    """>= 20 SIGKILLs at random points of an ingest of 200 HotpotQA paragraphs (default routing, the
    offline decider), each followed by a rerun: every kill chain ends with the graph, provenance and
    ledger tables of an uninterrupted run."""
    for module in ROUTED_PRELOAD:
        importlib.import_module(module)
    corpus = tmp_path / "corpus"
    write_hotpotqa_paragraphs(corpus, 200)
    started = time.perf_counter()
    assert wait(fork_routed_ingest(corpus, tmp_path / "clean.sqlite")) == 0
    duration = time.perf_counter() - started
    clean = sorted_tables(tmp_path / "clean.sqlite")
    assert sorted(clean) == ["edges", "large", "metadata", "node_names", "nodes", "provenance"]
    assert len(clean["large"]) > 3  # hubs kept as head and parts, resumed mid-way
    assert len(clean["metadata"]) == 201  # a ledger entry per paragraph, and the source's origin
    assert len(clean["nodes"]) > 1000 and len(clean["provenance"]) > 5000
    rng = random.Random(20261205)
    kills = chains = runs = 0
    graph = tmp_path / "chain0.sqlite"
    while kills < KILLS:
        runs += 1
        assert runs <= 4 * KILLS, f"only {kills} kills landed in {runs} runs"
        pid = fork_routed_ingest(corpus, graph)
        time.sleep(rng.uniform(0.02, 0.35) * duration)
        reaped, status = os.waitpid(pid, os.WNOHANG)
        if reaped == 0:
            os.kill(pid, signal.SIGKILL)
            code = wait(pid)
            kills += code == -signal.SIGKILL
            if code == -signal.SIGKILL:
                continue  # the rerun follows
        else:
            code = os.waitstatus_to_exitcode(status)
        assert code == 0
        # the chain finished: it must equal the uninterrupted run; the next kills start a new chain
        assert sorted_tables(graph) == clean, f"chain {chains} differs after {kills} kills"
        chains += 1
        graph = tmp_path / f"chain{chains}.sqlite"
    assert wait(fork_routed_ingest(corpus, graph)) == 0  # the last chain's rerun, uninterrupted
    assert sorted_tables(graph) == clean
