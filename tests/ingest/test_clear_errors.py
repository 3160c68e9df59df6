"""Broken or read-only storage gets an error naming the file and the cause (exit 2, no traceback), before
the work where it can, and a failed first run leaves no empty graph behind."""

from __future__ import annotations

import ctypes
import functools
import os
import random
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from sqlalchemy import exc as sa_exc

from graphwalk_core.cli.ingest import _graph_failure
from graphwalk_core.cli.ingest import ingest as cli_ingest
from graphwalk_core.stores import open as stores_open
from graphwalk_core.stores import sql_engine
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.warehouse.refresh import refresh_views
from graphwalk_core.warehouse.views import DB_NAME

#: Linux capabilities that let root write through file modes (linux/capability.h), and prctl's
#: PR_CAPBSET_DROP: a root command without them meets read-only files as any user does.
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, PR_CAPBSET_DROP = 1, 2, 24
#: SQLAlchemy's pool gave no connection in time (its TimeoutError holds no driver error).
POOL_TIMEOUT = "QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00"


def obey_file_modes() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def graphwalk(*args: str, cwd: Path, unprivileged: bool = False) -> tuple[int, str]:
    """Run the ``graphwalk`` command; ``unprivileged``: read-only files stay read-only even for root."""
    try:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("graphwalk")), *args],
            cwd=cwd,
            env={**os.environ, "COLUMNS": "1000"},
            preexec_fn=obey_file_modes if unprivileged and os.geteuid() == 0 else None,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.SubprocessError as exc:  # prctl refused: root without CAP_SETPCAP
        pytest.skip(f"cannot make files read-only for root here (dropping CAP_DAC_OVERRIDE failed: {exc})")
    return result.returncode, result.stdout + result.stderr


def corpus(root: Path) -> Path:
    folder = root / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("Ada Lovelace met Charles Babbage in London.", encoding="utf-8")
    return folder


def test_a_read_only_sqlite_graph_is_refused_before_the_work(tmp_path: Path) -> None:
    docs, graph = corpus(tmp_path), tmp_path / "graph.sqlite"
    code, out = graphwalk("ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path)
    assert code == 0, out
    (docs / "b.txt").write_text("Grace Hopper met Alan Turing.", encoding="utf-8")
    graph.chmod(0o444)
    before = graph.read_bytes()
    code, out = graphwalk(
        "ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path, unprivileged=True
    )
    assert (code, out.strip()) == (
        2,
        f"error: cannot write the graph {graph}: attempt to write a readonly database",
    )
    assert graph.read_bytes() == before


def test_a_parquet_graph_in_a_read_only_folder_is_refused_before_the_work(tmp_path: Path) -> None:
    docs, graph = corpus(tmp_path), tmp_path / "graph"
    code, out = graphwalk("ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path)
    assert code == 0 and (graph / "nodes.parquet").is_file(), out
    graph.chmod(0o555)
    code, out = graphwalk(
        "ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path, unprivileged=True
    )
    assert (code, out.strip()) == (2, f"error: cannot write the graph folder {graph}: Permission denied")
    assert "documents" not in out  # no summary: nothing was extracted or routed


def test_a_sql_source_that_cannot_connect_leaves_no_graph_file(tmp_path: Path) -> None:
    graph = tmp_path / "new" / "graph.sqlite"
    code, out = graphwalk("ingest", "postgresql://bob:pw@127.0.0.1:1/x", "--graph", str(graph), cwd=tmp_path)
    # the message depends on whether a PostgreSQL driver is installed; the URL's password never shows
    # (a warning that the shared embedding model is absent may come first)
    assert code == 2 and out.strip().splitlines()[-1].startswith("error: cannot "), out
    assert "SQL source postgresql://bob:***@127.0.0.1:1/x: " in out
    assert not graph.exists()


def warehouse(root: Path) -> Path:
    table = root / "runs" / "dataset=demo"
    table.mkdir(parents=True)
    pq.write_table(
        pa.table({"n": list(range(500)), "name": [f"run {i}" for i in range(500)]}), table / "part.parquet"
    )
    refresh_views(root)
    return table / "part.parquet"


def test_a_truncated_warehouse_database_is_named(tmp_path: Path) -> None:
    warehouse(tmp_path)
    db = tmp_path / DB_NAME
    db.write_bytes(db.read_bytes()[:5000])
    code, out = graphwalk("sql", "select count(*) from runs", "--warehouse", str(tmp_path), cwd=tmp_path)
    assert code == 2 and "Traceback" not in out, out
    assert out.startswith(f"error: cannot open the warehouse database {db} (")
    assert out.rstrip().endswith("removing it is safe (the next materialization rebuilds it)")


def test_a_scrambled_parquet_file_is_named(tmp_path: Path) -> None:
    part = warehouse(tmp_path)
    data = bytearray(part.read_bytes())
    rng = random.Random(3)
    for i in range(4, len(data) - 8):
        data[i] = rng.randrange(256)
    part.write_bytes(bytes(data))
    code, out = graphwalk("sql", "select count(*) from runs", "--warehouse", str(tmp_path), cwd=tmp_path)
    assert code == 2 and "Traceback" not in out, out
    assert out.startswith("error: query failed: ")
    assert f"(unreadable Parquet file {part}: " in out


def test_a_graph_that_fails_mid_run_is_named_and_a_rerun_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The graph's database fails after the run started (here another process holds its write lock past
    the busy timeout; a restarted PostgreSQL server ends the same way): an error naming the graph and the
    cause, exit 2, not a traceback; nothing was written, and the next run ingests the documents."""
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alice Moreau met Bruno Keller in Lisbon.", encoding="utf-8")
    graph = tmp_path / "graph.sqlite"
    run = functools.partial(cli_ingest, str(corpus), graph=str(graph), routing="exact", quiet=True)
    with pytest.raises(typer.Exit) as first:
        run()
    assert first.value.exit_code == 0
    (corpus / "b.txt").write_text("Chiara Russo met Alice Moreau in Oslo.", encoding="utf-8")
    blocker = sqlite3.connect(graph, isolation_level=None)
    writable = stores_open.check_writable

    async def then_locked(store: GraphStore, spec: str | Path) -> None:
        await writable(store, spec)
        blocker.execute("BEGIN IMMEDIATE")  # once the run has checked the graph

    monkeypatch.setattr(stores_open, "check_writable", then_locked)
    monkeypatch.setattr(sql_engine, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    with pytest.raises(typer.Exit) as failed:
        run()
    blocker.execute("ROLLBACK")
    blocker.close()
    assert failed.value.exit_code == 2
    assert capsys.readouterr().err == (
        f"error: the graph {graph} failed during the run: database is locked. What was committed stays "
        "(every window before this one); run the command again to go on\n"
    )
    monkeypatch.undo()
    with pytest.raises(typer.Exit) as rerun:
        run()
    assert rerun.value.exit_code == 0
    with closing(sqlite3.connect(graph)) as conn:
        ledger = conn.execute("SELECT key FROM metadata WHERE key LIKE 'ingest/ledger/%' ORDER BY key")
        assert [key for (key,) in ledger] == ["ingest/ledger/notes/a.txt", "ingest/ledger/notes/b.txt"]


def test_a_read_only_postgresql_graph_is_named_without_its_password(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database that takes no writes (a standby, a read-only default): refused before any work, and the
    URL in the error has its password starred out (the test server trusts 127.0.0.1, so any opens)."""
    SQLGraphStore(postgres_url)  # the tables, before the database turns read-only
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    graph = postgres_url.replace("://postgres@", "://postgres:s3cret@")
    with pytest.raises(typer.Exit) as failed:
        cli_ingest(str(corpus(tmp_path)), graph=graph, routing="exact", quiet=True)
    assert failed.value.exit_code == 2
    shown = postgres_url.replace("://postgres@", "://postgres:***@")
    assert capsys.readouterr().err == (
        f"error: cannot write the graph {shown}: cannot execute DELETE in a read-only transaction\n"
    )


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            sa_exc.OperationalError("COMMIT", {}, sqlite3.OperationalError("database is locked")),
            "database is locked",
        ),
        (sa_exc.TimeoutError(POOL_TIMEOUT), POOL_TIMEOUT),  # no driver error inside: SQLAlchemy's own words
        (
            sa_exc.PendingRollbackError("Can't reconnect until invalid transaction is rolled back."),
            "Can't reconnect until invalid transaction is rolled back.",
        ),
        (sa_exc.OperationalError("COMMIT", {}, sqlite3.OperationalError("")), "OperationalError"),  # no text
    ],
)
def test_a_graph_failure_names_its_cause(error: Exception, reason: str) -> None:
    """The message says what the database (or SQLAlchemy's pool) said: it used to name only the type of an
    error without a driver error inside (a pool timeout, a pending rollback), and to fail with IndexError
    on a driver error without text."""
    assert str(_graph_failure(error, "postgresql+psycopg://gw:s3cret@db/graph")) == (
        f"the graph postgresql+psycopg://gw:***@db/graph failed during the run: {reason}. What was committed "
        "stays (every window before this one); run the command again to go on"
    )


def test_a_new_graph_whose_database_fails_twice_keeps_the_first_error_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first run into a new graph that fails mid-run, whose database then also fails the check of
    whether the file is empty enough to remove: the run's own error is the one shown, and the file,
    which could not be checked, stays."""
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alice Moreau met Bruno Keller in Lisbon.", encoding="utf-8")
    graph = tmp_path / "graph.sqlite"
    blocker: list[sqlite3.Connection] = []
    writable = stores_open.check_writable

    async def then_locked(store: GraphStore, spec: str | Path) -> None:
        await writable(store, spec)
        blocker.append(sqlite3.connect(graph, isolation_level=None))
        blocker[0].execute("BEGIN IMMEDIATE")  # once the run has checked the graph

    async def unreadable(self: SQLGraphStore) -> tuple[int, int]:
        raise sa_exc.OperationalError(
            "SELECT count(*) FROM nodes", {}, sqlite3.OperationalError("disk I/O error")
        )

    monkeypatch.setattr(stores_open, "check_writable", then_locked)
    monkeypatch.setattr(sql_engine, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    monkeypatch.setattr(SQLGraphStore, "counts", unreadable)
    with pytest.raises(typer.Exit) as failed:
        cli_ingest(str(corpus), graph=str(graph), routing="exact", quiet=True)
    blocker[0].execute("ROLLBACK")
    blocker[0].close()
    assert failed.value.exit_code == 2
    assert capsys.readouterr().err == (
        f"error: the graph {graph} failed during the run: database is locked. What was committed stays "
        "(every window before this one); run the command again to go on\n"
    )
    assert graph.is_file()
