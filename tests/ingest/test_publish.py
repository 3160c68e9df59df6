"""Publishing a graph into the warehouse: one publish at a time, each a whole graph."""

from __future__ import annotations

import asyncio
import threading
from itertools import pairwise
from pathlib import Path

import pytest

from graphwalk_core.ingest import publish
from graphwalk_core.model import Edge, Node, Provenance
from graphwalk_core.stores import MemoryGraphStore
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.warehouse import Warehouse, query, refresh_views

P = Provenance(source_id="doc/1")


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
