"""Several sources ingesting into one graph at the same time, in separate processes, on SQLite and on
PostgreSQL: nothing fails, no update is lost, and the graph equals a sequential run's."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import forked_jobs
import typer

from graphwalk_core.cli.ingest import ingest as cli_ingest
from graphwalk_core.stores.sql import SQLGraphStore

from .conftest import graph_tables

PEOPLE = ["Alice Moreau", "Bruno Keller", "Chiara Russo", "Dmitri Volkov", "Elena Sanz", "Farid Haddad"]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Quito", "Accra"]
SOURCES = 4


def write_sources(root: Path) -> list[Path]:
    """Four folders of 12 documents each about the same people and places (every source merges into
    the same nodes, so concurrent writers contend for them)."""
    rng = random.Random(20261205)
    folders = []
    for s in range(SOURCES):
        folder = root / f"source{s}"
        folder.mkdir(parents=True)
        for d in range(12):
            a, b = rng.sample(PEOPLE, 2)
            text = f"{a} met {b} in {rng.choice(PLACES)} in {rng.randint(1950, 2020)}."
            (folder / f"doc{d:02d}.txt").write_text(text, encoding="utf-8")
        folders.append(folder)
    return folders


def run_ingest(folder: Path, graph: str, source_id: str) -> None:
    """``graphwalk ingest FOLDER --graph GRAPH --source-id ID --routing exact``; fails unless it succeeds."""
    try:
        cli_ingest(str(folder), graph=graph, source_id=source_id, routing="exact", quiet=True)
    except typer.Exit as exc:
        assert exc.exit_code == 0


async def tables(graph: str) -> dict:
    store = SQLGraphStore(graph)
    try:
        out = await graph_tables(store)
        for s in range(SOURCES):
            out[f"ledger{s}"] = (await graph_tables(store, f"s{s}"))["ledger"]
        return out
    finally:
        await store.close()


def test_concurrent_sources_equal_a_sequential_run(
    sql_graph_url: Callable[[str], str], tmp_path: Path
) -> None:
    graph = sql_graph_url

    folders = write_sources(tmp_path / "corpus")
    concurrent, sequential, reversed_order = graph("concurrent"), graph("sequential"), graph("reversed")
    codes = forked_jobs.at_once(lambda s: run_ingest(folders[s], concurrent, f"s{s}"), SOURCES)
    assert codes == [0] * SOURCES
    for s, folder in enumerate(folders):
        run_ingest(folder, sequential, f"s{s}")
    for s, folder in reversed(list(enumerate(folders))):
        run_ingest(folder, reversed_order, f"s{s}")
    at_once = asyncio.run(tables(concurrent))
    assert [len(at_once[f"ledger{s}"]) for s in range(SOURCES)] == [12] * SOURCES
    assert len(at_once["nodes"]) == 44  # 6 people, 5 places, 33 years
    assert at_once == asyncio.run(tables(sequential)) == asyncio.run(tables(reversed_order))
