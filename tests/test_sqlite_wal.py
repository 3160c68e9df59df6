"""Processes opening one new SQLite file at once (Dagster partitions starting together): the first switches
it to WAL while another holds a write lock on it still in rollback mode. SQLite answers the switch's
upgrade from read to write with "database is locked" at once, whatever the busy timeout (waiting there
could deadlock), so the open failed; the switch now retries until the timeout and succeeds once the
other writer is done."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from graphwalk_core.embeddings.disk_cache import _SCHEMA, DiskVectorCache
from graphwalk_core.ingest.extraction.base import Extraction
from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.model import Node
from graphwalk_core.stores.sql import SQLGraphStore


def graph_store(path: Path) -> object:
    store = SQLGraphStore(f"sqlite:///{path}")
    asyncio.run(store.upsert_node(Node(id="a", name="A")))
    counts = asyncio.run(store.counts())
    asyncio.run(store.close())
    return counts


def extraction_cache(path: Path) -> object:
    cache = ExtractionCache(path)
    cache.put("h", "offline", "-", Extraction())
    found = (len(cache), cache.get("h", "offline", "-"))
    cache.close()
    return found


def embedding_cache(path: Path) -> object:
    cache = DiskVectorCache(path)
    cache.put("m", ["a"], np.array([[0.5, 1.0]], dtype=np.float32))
    found = (cache.stored, cache._broken)
    cache.close()
    return found


OPENERS: dict[str, tuple[Callable[[Path], object], object]] = {
    "graph store": (graph_store, (1, 0)),
    "extraction cache": (extraction_cache, (1, Extraction())),
    "embedding cache": (embedding_cache, (1, False)),
}


@pytest.mark.parametrize("opener", sorted(OPENERS))
def test_a_file_opens_while_another_process_writes_it_before_it_is_wal(opener: str, tmp_path: Path) -> None:
    path = tmp_path / "file.sqlite"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for statement in _SCHEMA:  # a rollback-mode file every opener accepts
        writer.execute(statement)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO vectors VALUES ('other', 'x', x'00')")
    commit = threading.Timer(0.3, lambda: writer.execute("COMMIT"))
    commit.start()
    try:
        use, expected = OPENERS[opener]
        assert use(path) == expected
    finally:
        commit.join()
        writer.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert check.execute("SELECT text FROM vectors WHERE model = 'other'").fetchall() == [("x",)]
    check.close()
