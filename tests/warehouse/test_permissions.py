"""Warehouse files (Parquet tables, plots, text exports) get the same mode as ``warehouse.duckdb``."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphwalk_core.embeddings.disk_cache import DiskVectorCache
from graphwalk_core.eval.checkpoint import CheckpointWriter
from graphwalk_core.eval.report import results_table
from graphwalk_core.eval.tables import summarize, write_results
from graphwalk_core.files import write_text_atomic
from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.stores.open import sqlite_url
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.warehouse import Warehouse


@pytest.fixture(params=[0o022, 0o027, 0o002], ids=["umask022", "umask027", "umask002"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_follow_the_umask_like_the_database(tmp_path: Path, umask: int) -> None:
    wh = Warehouse(tmp_path / "wh")
    write_results(wh, "custom", "relation-greedy", results_table([]))
    summary = summarize(wh)
    text = write_text_atomic("x\n", wh.root / "notes.txt")
    expected = 0o666 & ~umask
    files = {
        "warehouse.duckdb": wh.db_path,
        "results": wh.root / "eval_results/dataset=custom/system=relation-greedy/part-0.parquet",
        "summary": wh.root / "eval_summary/part-0.parquet",
        **summary.plots,
        "text": text,
    }
    assert {name: oct(_mode(path)) for name, path in files.items()} == {name: oct(expected) for name in files}
    # no temporary file is left behind
    assert not [p for p in wh.root.rglob(".*.tmp")]


def test_sqlite_files_and_eval_checkpoints_follow_the_umask(tmp_path: Path, umask: int) -> None:
    """The graph, the extraction and embedding caches (with their -wal and -shm files) and an eval run's
    checkpoint: SQLite alone makes its files 0644 & ~umask, and the checkpoint was 0644 & ~umask too, so
    under umask 002 the group sharing the warehouse could not write them."""
    root = tmp_path / "wh"
    root.mkdir()
    store = SQLGraphStore(sqlite_url(root / "graph.sqlite"))
    extractions = ExtractionCache(root / "extraction_cache.sqlite")
    vectors = DiskVectorCache(root / "vectors.sqlite")
    vectors.put("m", ["a"], np.zeros((1, 4), dtype=np.float32))
    with CheckpointWriter(root / "eval_runs" / "run" / "results.jsonl"):
        pass
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert names == [
        "eval_runs/run/results.jsonl",
        "extraction_cache.sqlite",
        "extraction_cache.sqlite-shm",
        "extraction_cache.sqlite-wal",
        "graph.sqlite",
        "graph.sqlite-shm",
        "graph.sqlite-wal",
        "vectors.sqlite",
        "vectors.sqlite-shm",
        "vectors.sqlite-wal",
    ]
    assert {name: oct(_mode(root / name)) for name in names} == {name: oct(0o666 & ~umask) for name in names}
    asyncio.run(store.close())
    extractions.close()
