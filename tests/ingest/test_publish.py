"""Publishing a graph into the warehouse: one publish at a time, each a whole graph."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import threading
from contextlib import nullcontext
from itertools import pairwise
from pathlib import Path

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.ingest import publish
from graphwalk_core.model import Edge, Node, Provenance
from graphwalk_core.stores import MemoryGraphStore
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.warehouse import Warehouse, query, refresh_views
from graphwalk_core.warehouse.layout import PART_FILE
from tests.warehouse.sessions import duckdb_session

P = Provenance(source_id="doc/1")
#: Another process running one query, not waiting for the warehouse's lock: its rows, or its error's type.
READER = """
import sys
from graphwalk_core.warehouse import query, views
views.LOCK_TIMEOUT_S = 0.1
try:
    print(query(sys.argv[1], sys.argv[2]).rows)
except Exception as exc:
    print(type(exc).__name__)
"""


class Killed(BaseException):
    """The process killed (no ``except Exception`` catches it)."""


#: The edges whose source is no node.
DANGLING = "SELECT count(*) FROM edges WHERE source NOT IN (SELECT id FROM nodes)"


async def graph(*names: str) -> MemoryGraphStore:
    """A chain of nodes named ``names``."""
    store = MemoryGraphStore()
    for name in names:
        await store.upsert_node(Node(id=name, name=name, provenance=(P,)))
    for source, target in pairwise(names):
        await store.upsert_edge(Edge(source=source, type="next", target=target, provenance=(P,)))
    return store


def test_a_second_publish_waits_for_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs publishing at once wrote their tables interleaved (one's nodes beside the other's edges):
    the second now waits until the first has written every table."""
    warehouse = Warehouse(tmp_path)
    first, second = asyncio.run(graph("a", "b")), asyncio.run(graph("x", "y", "z"))
    exporting = publish.export_parquet
    done_during_first: list[bool] = []

    async def export_then_publish_the_second(store: GraphStore, directory: str | Path) -> Path:
        if store is first:  # the second run publishes while the first is exporting
            other = threading.Thread(target=lambda: asyncio.run(publish.publish_graph(second, warehouse)))
            other.start()
            other.join(timeout=1.0)
            done_during_first.append(not other.is_alive())
            monkeypatch.setattr(publish, "joined", other, raising=False)
        return await exporting(store, directory)

    monkeypatch.setattr(publish, "export_parquet", export_then_publish_the_second)
    asyncio.run(publish.publish_graph(first, warehouse))
    publish.joined.join()  # type: ignore[attr-defined]
    assert done_during_first == [False]
    rows = query(
        tmp_path, "SELECT (SELECT list(id ORDER BY id) FROM nodes), (SELECT count(*) FROM edges)"
    ).rows
    assert rows == [(["x", "y", "z"], 2)]  # the second publish, whole
    assert (tmp_path / publish.PUBLISH_LOCK).is_file() and "publish" not in Warehouse(tmp_path).tables()


def test_the_export_folder_is_never_a_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store was exported into a ``tmp…`` folder of the warehouse: a view refresh meanwhile (another
    run's write) made it a table, and a publish killed meanwhile left it a table for good. Now the folder
    is hidden, and the next publish removes one a killed run left."""
    warehouse = Warehouse(tmp_path)
    killed = tmp_path / f"{publish.EXPORT_PREFIX}killed"
    killed.mkdir()
    (killed / "nodes.parquet").write_bytes(b"half")
    exporting = publish.export_parquet
    seen: list[list[str]] = []

    async def export_then_refresh(store: GraphStore, directory: str | Path) -> Path:
        path = await exporting(store, directory)
        seen.append(refresh_views(tmp_path))  # another run's write refreshes the views meanwhile
        return path

    monkeypatch.setattr(publish, "export_parquet", export_then_refresh)
    asyncio.run(publish.publish_graph(asyncio.run(graph("a", "b")), warehouse))
    assert seen == [[]]
    assert warehouse.tables() == ["conflicts", "edges", "ledger", "metadata", "nodes", "provenance"]
    assert not killed.exists()


def test_a_query_during_a_publish_sees_one_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each table's file was replaced on its own, so a query run meanwhile joined the new nodes with the
    old edges (an edge to no node). The tables now move in while warehouse.duckdb's write lock is held:
    no query runs in between (one that tries waits; this one is told not to wait)."""
    warehouse = Warehouse(tmp_path)
    asyncio.run(publish.publish_graph(asyncio.run(graph("a", "b")), warehouse))
    replace = os.replace
    seen: list[str] = []

    def replace_then_query(src: str | Path, dst: str | Path) -> None:
        replace(src, dst)
        if Path(dst) == tmp_path / "nodes" / PART_FILE:
            reader = [sys.executable, "-c", READER, str(tmp_path), DANGLING]
            seen.append(subprocess.run(reader, capture_output=True, text=True, check=True).stdout.strip())

    monkeypatch.setattr(os, "replace", replace_then_query)
    asyncio.run(publish.publish_graph(asyncio.run(graph("x", "y", "z")), warehouse))
    assert seen == ["BackendError"]
    assert query(tmp_path, f"SELECT (SELECT list(id ORDER BY id) FROM nodes), ({DANGLING})").rows == [
        (["x", "y", "z"], 0)
    ]


def test_a_publish_killed_while_moving_its_tables_in_is_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publish killed between two tables left new nodes beside old edges for good, and queries ran on
    them. Queries now refuse, naming the folder, and the next publish first moves the rest in (here that
    publish then fails: the warehouse holds the killed one's graph, whole)."""
    warehouse = Warehouse(tmp_path)
    asyncio.run(publish.publish_graph(asyncio.run(graph("a", "b")), warehouse))
    killed = tmp_path / f"{publish.EXPORT_PREFIX}killed"
    replace = os.replace

    def left_behind(_: Path) -> nullcontext[Path]:  # a killed run's is not removed
        killed.mkdir()
        return nullcontext(killed)

    def replace_then_die(src: str | Path, dst: str | Path) -> None:
        replace(src, dst)
        if Path(dst) == tmp_path / "nodes" / PART_FILE:
            raise Killed

    monkeypatch.setattr(publish, "export_folder", left_behind)
    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(Killed):
        asyncio.run(publish.publish_graph(asyncio.run(graph("x", "y", "z")), warehouse))
    monkeypatch.undo()
    with pytest.raises(InputError) as error:
        query(tmp_path, DANGLING)
    assert str(error.value) == (
        f"the warehouse tables under {tmp_path} are part old, part new: a publish was killed while moving "
        f"its tables in (they wait in {killed}); the next publish finishes it (materialize knowledge_graph)"
    )

    async def unreachable(*_: object) -> Path:
        raise InputError("graph store unreachable")

    monkeypatch.setattr(publish, "export_parquet", unreachable)
    with pytest.raises(InputError, match="unreachable"):
        asyncio.run(publish.publish_graph(asyncio.run(graph("p", "q")), warehouse))
    assert query(tmp_path, f"SELECT (SELECT list(id ORDER BY id) FROM nodes), ({DANGLING})").rows == [
        (["x", "y", "z"], 0)
    ]
    assert not killed.exists()


def test_the_export_folder_is_shared_like_the_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The export folder was made 0700 (``mkdtemp``): one a killed run left could not be removed, nor its
    tables moved in, by the others sharing the warehouse (umask 002). It now gets 0777 & ~umask."""
    exporting = publish.export_parquet
    modes: list[str] = []

    async def export_noting_the_mode(store: GraphStore, directory: str | Path) -> Path:
        modes.append(oct(stat.S_IMODE(Path(directory).parent.stat().st_mode)))
        return await exporting(store, directory)

    monkeypatch.setattr(publish, "export_parquet", export_noting_the_mode)
    old = os.umask(0o002)
    try:
        asyncio.run(publish.publish_graph(asyncio.run(graph("a", "b")), Warehouse(tmp_path)))
    finally:
        os.umask(old)
    assert modes == ["0o775"]
    assert not list(tmp_path.glob(f"{publish.EXPORT_PREFIX}*"))


def test_a_publish_outwaits_a_query_longer_than_a_query_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publish needs every DuckDB session on the warehouse closed; a query open for longer than a query's
    own wait for the lock must delay the publish, not fail it (the run would fail for a reader's sake)."""
    from graphwalk_core.warehouse import swap, views

    warehouse = Warehouse(tmp_path)
    asyncio.run(publish.publish_graph(asyncio.run(graph("a", "b")), warehouse))
    monkeypatch.setattr(views, "LOCK_TIMEOUT_S", 0.2)
    monkeypatch.setattr(swap, "SWAP_TIMEOUT_S", 30.0)
    with duckdb_session(warehouse.db_path, read_only=True, hold_s=1.5):
        asyncio.run(publish.publish_graph(asyncio.run(graph("x", "y")), warehouse))
    assert query(tmp_path, "SELECT list(id ORDER BY id) FROM nodes").rows == [(["x", "y"],)]


def test_export_triples_reads_the_graph_a_batch_at_a_time(tmp_path: Path) -> None:
    """The triples file was written from every triple held in memory at once (3 GB for 10M edges)."""
    import tracemalloc

    n = 100_000
    wh = Warehouse(tmp_path)
    wh.write("nodes", [{"id": f"n{i}", "name": f"node number {i:06d}"} for i in range(n + 1)])
    wh.write("edges", [{"source": f"n{i}", "type": "next", "target": f"n{i + 1}"} for i in range(n)])
    tracemalloc.start()
    try:
        path = publish.export_triples(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert (len(lines), lines[0], lines[-1]) == (
        n,
        "node number 000000|next|node number 000001",
        "node number 099999|next|node number 100000",
    )
    assert peak < 8_000_000  # 10,000 rows at a time; all 100,000 took ~30 MB
