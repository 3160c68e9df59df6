"""Warehouse integrity checks, eval-result checks and source fingerprints."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from graphwalk_core.eval.report import RESULTS_SCHEMA
from graphwalk_core.eval.tables import result_problems
from graphwalk_core.ingest.graph_checks import (
    CheckOutcome,
    edge_endpoints_exist,
    elements_have_provenance,
    ledger_has_documents,
)
from graphwalk_core.ingest.sources.fingerprints import missing_paths, source_fingerprint
from graphwalk_core.ingest.sources.specs import SourceSpec, load_sources
from graphwalk_core.warehouse import Warehouse


def _graph(root: Path) -> None:
    wh = Warehouse(root)
    wh.write("nodes", [{"id": "a"}, {"id": "b"}])
    wh.write(
        "edges", [{"id": "e1", "source": "a", "target": "b"}, {"id": "e2", "source": "a", "target": "zz"}]
    )
    prov = [
        ("node", "a", "element", "s/d1"),
        ("node", "b", "element", None),
        ("edge", "e1", "element", "s/d1"),
    ]
    wh.write(
        "provenance",
        [{"element_kind": k, "element_id": i, "scope": sc, "source_id": s} for k, i, sc, s in prov],
    )
    ledger = [("s", "d1"), ("s", "gone"), ("cli", "x")]  # cli: ingested by `graphwalk ingest`, never listed
    wh.write("ledger", [{"source": source, "document_id": doc} for source, doc in ledger])
    wh.write(
        "documents",
        [{"document_id": "d1", "status": "new"}, {"document_id": "gone", "status": "deleted"}],
        {"source": "s"},
    )


def test_graph_checks_find_the_broken_rows(tmp_path: Path) -> None:
    _graph(tmp_path)
    endpoints = edge_endpoints_exist(tmp_path)
    assert (endpoints.passed, endpoints.failures, endpoints.examples) == (False, 1, ["e2|a|zz"])
    provenance = elements_have_provenance(tmp_path)
    assert (provenance.failures, provenance.examples) == (2, ["edge|e2", "node|b"])
    ledger = ledger_has_documents(tmp_path)
    assert (ledger.failures, ledger.examples) == (1, ["s|gone"])


def test_the_ledger_check_runs_before_any_documents_table(tmp_path: Path) -> None:
    """A graph published before any source's documents were listed (an imported graph, no source run
    yet) made the check fail with DuckDB's 'Table with name documents does not exist', then failed on
    every entry of such a source (a graph `graphwalk ingest` also writes failed every publish)."""
    wh = Warehouse(tmp_path)
    wh.write("ledger", [], schema=pa.schema([("source", pa.string()), ("document_id", pa.string())]))
    assert ledger_has_documents(tmp_path) == CheckOutcome("ledger entries have documents", 0, [])
    wh.write("ledger", [{"source": "s", "document_id": "d2"}, {"source": "s", "document_id": "d1"}])
    assert ledger_has_documents(tmp_path) == CheckOutcome("ledger entries have documents", 0, [])


def test_a_check_counts_its_failures_without_holding_them(tmp_path: Path) -> None:
    """A check held every failing row in memory to count them and show five (a graph without its nodes:
    every edge)."""
    import tracemalloc

    n = 100_000
    wh = Warehouse(tmp_path)
    wh.write("nodes", [{"id": "a"}])
    wh.write("edges", [{"id": f"e{i:06d}", "source": "a", "target": f"missing {i}"} for i in range(n)])
    tracemalloc.start()
    try:
        outcome = edge_endpoints_exist(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (outcome.failures, outcome.examples) == (n, [f"e{i:06d}|a|missing {i}" for i in range(5)])
    assert peak < 5_000_000  # 10,000 rows at a time; all 100,000 took ~20 MB


def _results(ids: list[str], f1s: list[float | None]) -> pa.Table:
    rows = [
        {"question_id": i, "f1": f, "em": 0.0, "hits_at_1": 1.0, "status": "ok"}
        for i, f in zip(ids, f1s, strict=True)
    ]
    return pa.Table.from_pylist(rows, schema=pa.schema([RESULTS_SCHEMA.field(n) for n in rows[0]]))


def test_result_problems() -> None:
    assert result_problems(_results(["q1", "q2"], [0.5, None])) == []
    assert result_problems(_results(["q1", "q1", "q2"], [1.5, 0.0, -0.1])) == [
        "repeated question ids: ['q1']",
        "f1 outside [0, 1]: [1.5, -0.1]",
    ]


def one_file_source(root: Path) -> tuple[Path, SourceSpec]:
    """A files source ``docs`` of one file under ``root``: (the file, the source's spec)."""
    (root / "docs").mkdir()
    doc = root / "docs" / "a.txt"
    doc.write_text("Inception is a film.", encoding="utf-8")
    (root / "sources.yaml").write_text("- id: docs\n  kind: files\n  path_or_url: docs\n", encoding="utf-8")
    (spec,) = load_sources(root / "sources.yaml")
    return doc, spec


def test_fingerprint_follows_content_not_mtime(tmp_path: Path) -> None:
    doc, spec = one_file_source(tmp_path)
    before = source_fingerprint(spec)
    os.utime(doc, ns=(10**9, 10**9))
    assert source_fingerprint(spec) == before
    doc.write_text("Inception is a 2010 film.", encoding="utf-8")
    assert source_fingerprint(spec) != before


def test_fingerprint_sees_a_same_size_edit_whose_mtime_was_put_back(tmp_path: Path) -> None:
    """The sensor memoized a file's hash on its size and mtime: an edit keeping the size, with the mtime
    restored (``cp -p``, ``rsync -t``), kept the old fingerprint, so no run started until the daily one."""
    doc, spec = one_file_source(tmp_path)
    before = source_fingerprint(spec)
    stat = doc.stat()
    doc.write_text("Inception is a flim.", encoding="utf-8")
    os.utime(doc, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert doc.stat().st_size == stat.st_size and doc.stat().st_mtime_ns == stat.st_mtime_ns
    assert source_fingerprint(spec) != before


def test_fingerprint_sees_what_the_source_cannot_read(tmp_path: Path) -> None:
    """The sensor's fingerprint lists the source as the ingest does: a link to a folder (a skip that keeps
    documents) appearing, or turning into the folder itself, is a change that starts a run."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Inception is a film.", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.txt").write_text("Heat is a film.", encoding="utf-8")
    (tmp_path / "sources.yaml").write_text(
        "- id: docs\n  kind: files\n  path_or_url: docs\n", encoding="utf-8"
    )
    (spec,) = load_sources(tmp_path / "sources.yaml")
    plain = source_fingerprint(spec)
    (tmp_path / "docs" / "more").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    linked = source_fingerprint(spec)
    (tmp_path / "docs" / "more").unlink()
    (tmp_path / "elsewhere").rename(tmp_path / "docs" / "more")
    moved = source_fingerprint(spec)
    assert len({plain, linked, moved}) == 3


def test_missing_paths_name_each_missing_path_as_written(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "sources.yaml").write_text(
        "- id: docs\n  kind: files\n  path_or_url: docs\n  mapping: maps/docs.yaml\n"
        "- id: db\n  kind: sql\n  path_or_url: sqlite:///nowhere/x.db\n"
        "- id: remote\n  kind: sql\n  path_or_url: postgresql://h/db\n",
        encoding="utf-8",
    )
    docs, db, remote = load_sources(tmp_path / "sources.yaml")
    assert missing_paths(docs) == [("maps/docs.yaml", tmp_path / "maps" / "docs.yaml")]
    assert missing_paths(db) == [("sqlite:///nowhere/x.db", Path("nowhere/x.db"))]
    assert missing_paths(remote) == []


def test_allow_empty_changes_the_fingerprint_only_when_set(tmp_path: Path) -> None:
    """A source without ``allow_empty`` hashes as before the field existed (the value below, from the code
    before it), so an upgrade requests no run of every source; setting it is a change (its run retracts)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Inception is a film.", encoding="utf-8")
    (tmp_path / "sources.yaml").write_text(
        "- id: docs\n  kind: files\n  path_or_url: docs\n", encoding="utf-8"
    )
    (spec,) = load_sources(tmp_path / "sources.yaml")
    assert source_fingerprint(spec) == "36710bfb07e40a868f567a9768e81e4fe6dc3f5e6d50b784962fa6baf6c33bcf"
    allowed = spec.model_copy(update={"allow_empty": True})
    assert source_fingerprint(allowed) != source_fingerprint(spec)


def test_a_sqlite_source_holding_its_graph_is_fingerprinted_by_its_documents(tmp_path: Path) -> None:
    """One SQLite file for the data and the graph: every ingest rewrote the file, so a fingerprint of its
    bytes changed after each run and the sensor requested the source again and again."""
    import asyncio
    import shutil
    import sqlite3

    from graphwalk_core.ingest.pipeline import ingest
    from graphwalk_core.ingest.sources.specs import open_source
    from graphwalk_core.stores.sql import SQLGraphStore

    shutil.copy(Path(__file__).resolve().parents[2] / "data" / "sample.sqlite", tmp_path / "both.sqlite")
    (tmp_path / "sources.yaml").write_text(
        "- id: db\n  kind: sql\n  path_or_url: both.sqlite\n", encoding="utf-8"
    )
    (spec,) = load_sources(tmp_path / "sources.yaml")

    async def run() -> None:
        store = SQLGraphStore(f"sqlite:///{tmp_path / 'both.sqlite'}")
        await ingest(open_source(spec), store, routing="exact")
        await store.close()

    asyncio.run(run())
    after_first = source_fingerprint(spec)
    asyncio.run(run())  # nothing changed in the data; the graph's tables were written again
    assert source_fingerprint(spec) == after_first
    with sqlite3.connect(tmp_path / "both.sqlite") as db:
        db.execute("UPDATE films SET title = title || ' (restored)' WHERE rowid = 1")
    assert source_fingerprint(spec) != after_first


def test_a_sqlite_source_in_wal_mode_is_fingerprinted_with_its_log(tmp_path: Path) -> None:
    """In WAL mode a commit lands in ``<file>-wal`` until a checkpoint: a fingerprint of the main file's
    bytes missed it, so the sensor saw no change while an application kept the database open."""
    import shutil
    import sqlite3

    shutil.copy(Path(__file__).resolve().parents[2] / "data" / "sample.sqlite", tmp_path / "app.sqlite")
    (tmp_path / "sources.yaml").write_text(
        "- id: db\n  kind: sql\n  path_or_url: app.sqlite\n", encoding="utf-8"
    )
    (spec,) = load_sources(tmp_path / "sources.yaml")
    app = sqlite3.connect(tmp_path / "app.sqlite")
    try:
        app.execute("PRAGMA journal_mode = WAL")
        app.execute("PRAGMA wal_autocheckpoint = 0")
        before = source_fingerprint(spec)
        with app:
            app.execute("UPDATE films SET title = title || ' (restored)' WHERE rowid = 1")
        assert (tmp_path / "app.sqlite-wal").stat().st_size > 0
        assert source_fingerprint(spec) != before
    finally:
        app.close()


@pytest.mark.parametrize("where", ["postgresql", "sqlite-url", "sqlite-path"])
def test_a_sql_sources_mapping_file_is_part_of_its_fingerprint(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A database reached by URL was fingerprinted by its documents' hashes alone: its mapping file was
    left out, so editing the mapping (a type, which no row's hash holds) started no run. A remote
    database's mapping file is hashed as a local database's is, and a missing one is named."""
    import sqlalchemy as sa

    if where == "postgresql":
        url = request.getfixturevalue("postgres_url")
    else:
        url = f"sqlite:///{tmp_path / 'films.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT)"))
        conn.execute(sa.text("INSERT INTO films VALUES (1, 'Heat')"))
    engine.dispose()
    mapping = tmp_path / "films.yaml"
    mapping.write_text("films: {name: title, type: film}\n", encoding="utf-8")
    path = "films.sqlite" if where == "sqlite-path" else url
    spec = SourceSpec(id="db", kind="sql", path_or_url=path, mapping="films.yaml", base_dir=str(tmp_path))
    before = source_fingerprint(spec)
    assert source_fingerprint(spec) == before
    mapping.write_text("films: {name: title, type: movie}\n", encoding="utf-8")
    assert source_fingerprint(spec) != before
    mapping.unlink()
    assert missing_paths(spec) == [("films.yaml", mapping)]
