"""SQL store on SQLite and PostgreSQL: atomic transactions that survive SIGKILL, byte-wise key order,
clear errors for bad URLs."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy
from servers.postgres_server import PostgresServer

from graphwalk_core.errors import BackendError, InputError
from graphwalk_core.model import Edge, Node, Provenance, edge_id
from graphwalk_core.stores import SQLGraphStore, sql_engine

KILLED_WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from graphwalk_core.model import Node
    from graphwalk_core.stores import SQLGraphStore
    from graphwalk_core.stores.sql_engine import SQLITE_CACHE_KIB

    async def main() -> None:
        store = SQLGraphStore(sys.argv[1])
        async with store.transaction():
            await store.upsert_node(Node(id="a", name="changed"))
            # more than SQLite's page cache holds: the uncommitted pages must spill into the WAL file
            summary = "x" * (SQLITE_CACHE_KIB * 1024 // 6000 + 1000)
            nodes = [Node(id=f"n{i}", name=f"n{i}", summary=summary) for i in range(6000)]
            await store.upsert_many(nodes)
            assert await store.counts() == (6001, 0)  # a read writes the held upserts into the tables
            await store.set_metadata("ledger", "new")
            print("inside", flush=True)
            time.sleep(60)

    asyncio.run(main())
    """
)


def open_transactions(url: str, begun_before: datetime | None = None) -> int:
    """PostgreSQL connections to ``url``'s database idle inside an open transaction (one begun before
    ``begun_before``)."""
    database = url.rsplit("/", 1)[1]
    with psycopg.connect(url.replace("+psycopg", "").rsplit("/", 1)[0] + "/postgres") as conn:
        query = (
            "select count(*) from pg_stat_activity where datname = %s and state = 'idle in transaction' "
            "and xact_start < coalesce(%s::timestamptz, 'infinity')"
        )
        return conn.execute(query, (database, begun_before)).fetchone()[0]  # type: ignore[index]


async def test_sigkill_mid_transaction_keeps_previous_state(sql_url: str, tmp_path: Path) -> None:
    url = sql_url
    db = tmp_path / "graph.sqlite"
    store = SQLGraphStore(url)
    before = Node(id="a", name="A", provenance=(Provenance(source_id="s"),))
    await store.upsert_node(before)
    await store.set_metadata("ledger", "old")
    await store.close()
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, url], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "inside"
        if url.startswith("sqlite"):
            # WAL mode: the uncommitted pages really reached the write-ahead log file
            assert Path(f"{db}-wal").stat().st_size > 2_000_000
        else:
            assert open_transactions(url) == 1  # the rows are on the server, uncommitted
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    reopened = SQLGraphStore(url)
    assert await reopened.counts() == (1, 0)
    assert await reopened.get_node("a") == before
    assert await reopened.get_metadata("ledger") == "old"
    assert [n.id for n in await reopened.find_nodes(name="changed")] == []
    await reopened.close()


async def test_upsert_many_and_rollback_leave_nothing(sql_url: str) -> None:
    store = SQLGraphStore(sql_url)
    assert await store.upsert_many([Node(id="a", name="A"), Node(id="a", name="A2")]) == (1, 0)
    assert (await store.get_node("a")) == Node(id="a", name="A2")
    with pytest.raises(InputError, match="unknown node"):
        async with store.transaction():
            await store.upsert_node(Node(id="b", name="B"))
            await store.upsert_edge(Edge(source="b", target="ghost", type="r"))
    assert await store.counts() == (1, 0)
    await store.close()


def test_bad_urls_name_the_url_without_password(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        SQLGraphStore("postgresql+pg8000://bob:s3cret@127.0.0.1:1/graph")
    message = str(caught.value)
    assert message == (
        "no database driver for graph store URL postgresql+pg8000://bob:***@127.0.0.1:1/graph: "
        "No module named 'pg8000'"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    for scheme in ("nosuchdb", "postgres"):  # postgres://: libpq's spelling, not a SQLAlchemy dialect
        with pytest.raises(InputError) as caught:
            SQLGraphStore(f"{scheme}://bob:s3cret@h/x")
        assert str(caught.value) == (
            f"invalid graph store URL {scheme}://bob:***@h/x: SQLAlchemy has no dialect '{scheme}' "
            "(PostgreSQL: postgresql+psycopg://USER:PASSWORD@HOST:5432/DB, SQLite: sqlite:///PATH)"
        )
    unparsable = (
        "invalid graph store URL postgresql+psycopg://bob:***@h:port/x: not a SQLAlchemy URL "
        "(dialect+driver://user:password@host:port/database, the port a number)"
    )
    with pytest.raises(InputError) as caught:  # the port is not a number: a ValueError before
        SQLGraphStore("postgresql+psycopg://bob:s3cret@h:port/x")
    assert str(caught.value) == unparsable
    with pytest.raises(BackendError) as unreachable:
        SQLGraphStore(f"sqlite:///{tmp_path}/no/such/dir/g.db")
    assert str(unreachable.value) == (
        f"cannot open graph store sqlite:///{tmp_path}/no/such/dir/g.db: unable to open database file "
        f"(no folder {tmp_path}/no/such/dir: create it first)"
    )
    assert "s3cret" not in repr(SQLGraphStore(f"sqlite:///{tmp_path / 'ok.db'}"))


def test_unreachable_postgresql_names_the_url_without_password(postgres_server: PostgresServer) -> None:
    wrong = postgres_server.url("graph").replace("postgres@", "bob:s3cret@")
    with pytest.raises(BackendError) as caught:
        SQLGraphStore(wrong)
    message = str(caught.value)
    shown = wrong.replace("s3cret", "***")
    assert message.startswith(f"cannot open graph store {shown}: connection failed: ")
    assert 'role "bob" does not exist' in message and "s3cret" not in message


async def test_postgresql_orders_keys_bytewise_whatever_the_locale(postgres_server: PostgresServer) -> None:
    """A database whose locale sorts "a" before "B" still lists ids and edges as SQLite does."""
    with psycopg.connect(postgres_server.url(driver="postgresql"), autocommit=True) as conn:
        conn.execute(
            "CREATE DATABASE icu_en TEMPLATE template0 "
            "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
        )
        assert conn.execute("select 'a' < 'B' collate \"en-US-x-icu\"").fetchone() == (True,)
    store = SQLGraphStore(postgres_server.url("icu_en"))
    nodes = [Node(id=i, name=i) for i in ("a", "B", "_c")]
    edges = [Edge(source=s, target=t, type="r") for s in ("a", "B") for t in ("a", "B")]
    await store.upsert_many(nodes, edges)
    assert [n.id async for n in store.iter_nodes(batch_size=2)] == ["B", "_c", "a"]
    assert [(e.source, e.target) async for e in store.iter_edges(batch_size=3)] == [
        ("B", "B"),
        ("B", "a"),
        ("a", "B"),
        ("a", "a"),
    ]
    assert await store.metadata_keys() == []
    await store.close()


async def test_schema_is_queryable_sql(tmp_path: Path) -> None:
    import sqlite3

    store = SQLGraphStore(f"sqlite:///{tmp_path / 'g.db'}")
    p = Provenance(source_id="doc/1")
    await store.upsert_many(
        [Node(id="a", name="A", aliases=("Alpha",), provenance=(p,)), Node(id="b", name="B")],
        [Edge(source="a", target="b", type="r", provenance=(p,))],
    )
    await store.close()
    db = sqlite3.connect(tmp_path / "g.db")
    tables = {r[0] for r in db.execute("select name from sqlite_master where type = 'table'")}
    assert tables == {"nodes", "node_names", "node_parts", "edges", "provenance", "metadata", "generation"}
    indexed = {r[0] for r in db.execute("select name from pragma_index_list('edges')")}
    # the (source, type, target) index serves lookups by source: no second index repeats its prefix
    assert indexed == {"ix_edges_order", "ix_edges_target", "sqlite_autoindex_edges_1"}
    for end in ("source", "target"):
        query = f"explain query plan select data from edges where {end} = 'a'"
        plan = " ".join(r[3] for r in db.execute(query))
        assert "USING INDEX ix_edges_" in plan, plan
    for table in ("provenance", "node_names"):  # index rows are deleted by their whole key
        assert [r[1] for r in db.execute(f"pragma index_list('{table}')")] == [f"sqlite_autoindex_{table}_1"]
    # key-only tables are their primary key's B-tree (one write per row, not a table and an index)
    clustered = {r[1]: r[4] for r in db.execute("pragma table_list") if r[0] == "main"}
    assert {t: clustered[t] for t in ("nodes", "edges", "provenance", "node_names")} == {
        "nodes": 0,
        "edges": 0,
        "provenance": 1,
        "node_names": 1,
    }
    assert db.execute("select source_id, element_kind, element_id from provenance order by 2").fetchall() == [
        ("doc/1", "edge", edge_id("a", "r", "b")),
        ("doc/1", "node", "a"),
    ]
    assert db.execute("select name_key, node_id from node_names order by 1").fetchall() == [
        ("a", "a"),
        ("alpha", "a"),
        ("b", "b"),
    ]
    assert db.execute("select json_extract(data, '$.name') from nodes where id = 'a'").fetchone() == ("A",)
    db.close()


async def test_sqlite_connections_run_wal_with_the_larger_page_cache_and_log(tmp_path: Path) -> None:
    store = SQLGraphStore(f"sqlite:///{tmp_path / 'g.db'}")
    try:
        with store._engine.connect() as conn:
            settings = [conn.exec_driver_sql(f"PRAGMA {p}").scalar() for p in ("journal_mode", "synchronous")]
            assert settings == ["wal", 1]  # 1: NORMAL
            assert conn.exec_driver_sql("PRAGMA cache_size").scalar() == -16_384
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 16_384
    finally:
        await store.close()


def test_opening_a_graph_to_read_never_waits_for_a_writer(
    sql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's write transaction holds the graph's writer lock: a store opened meanwhile reads
    at once (it used to take the writer lock to check the tables, and waited, on SQLite until it failed
    with "database is locked")."""
    store = SQLGraphStore(sql_url)
    asyncio.run(store.upsert_node(Node(id="a", name="A")))
    asyncio.run(store.close())
    monkeypatch.setattr(sql_engine, "SQLITE_BUSY_TIMEOUT_S", 2)
    if sql_url.startswith("sqlite"):
        writer: Any = sqlite3.connect(sql_url.removeprefix("sqlite:///"), isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
    else:
        writer = psycopg.connect(sql_url.replace("+psycopg", ""))
        writer.execute(f"SELECT pg_advisory_xact_lock({sql_engine.WRITER_LOCK})")
    read: list[object] = []

    def reader() -> None:
        async def main() -> None:
            opened = SQLGraphStore(sql_url)
            read.append(await opened.counts())
            await opened.close()

        try:
            asyncio.run(main())
        except BackendError as exc:
            read.append(str(exc))

    thread = threading.Thread(target=reader)
    started = time.monotonic()
    thread.start()
    try:
        thread.join(timeout=10)
        waited = time.monotonic() - started
    finally:
        writer.rollback()  # releases the lock: a reader still waiting for it ends
        writer.close()
        thread.join()
    assert read == [(1, 0)]
    assert waited < 1.5


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://bob:p@ss@h:5432/x", "postgresql+psycopg://bob:***@h:5432/x"),
        ("postgresql+psycopg://bob:p@ss@h:port/x", "postgresql+psycopg://bob:***@h:port/x"),
        (
            "postgresql+psycopg://bob:a/b@c@h/x?sslmode=require",
            "postgresql+psycopg://bob:***@h/x?sslmode=require",
        ),
        ("postgresql+psycopg://bob:p%40ss@h:5432/x", "postgresql+psycopg://bob:***@h:5432/x"),
        ("postgresql+psycopg://bob:pw@h/x?opt=a@b", "postgresql+psycopg://bob:***@h/x?opt=a%40b"),
        ("sqlite:///g.db", "sqlite:///g.db"),
    ],
)
def test_a_password_holding_an_at_sign_is_hidden_whole(url: str, shown: str) -> None:
    """A password pasted with a raw '@' (not %40): SQLAlchemy reads the text up to the first '@' as the
    password and the rest as the host, so messages showed the password's tail ('bob:***@ss@h')."""
    from sqlalchemy.engine import make_url

    from graphwalk_core.stores.sql_engine import redact_url

    assert redact_url(url) == shown
    if "port" not in url:  # the URL as SQLAlchemy read it (a SQL source keeps that)
        assert redact_url(make_url(url)) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://bob@h/x?password=s3cret", "postgresql+psycopg://bob@h/x?password=***"),
        (
            "postgresql+psycopg:///x?host=/run/pg&sslpassword=s3cret&user=bob&password=s3cret",
            "postgresql+psycopg:///x?host=%2Frun%2Fpg&password=***&sslpassword=***&user=bob",
        ),
        (
            "mysql+pymysql://bob@h/x?passwd=s3cret&charset=utf8",
            "mysql+pymysql://bob@h/x?charset=utf8&passwd=***",
        ),
        (
            "postgresql+psycopg://bob@h:port/x?password=s3cret",
            "postgresql+psycopg://bob@h:port/x?password=***",
        ),
        (
            "postgresql+psycopg://bob@h/x?passfile=/p&sslmode=require",
            "postgresql+psycopg://bob@h/x?passfile=%2Fp&sslmode=require",
        ),
    ],
)
def test_a_password_given_as_a_query_parameter_is_hidden(url: str, shown: str) -> None:
    """libpq and MySQL drivers take the password as a query parameter too (SQLAlchemy passes them to the
    driver): every message naming the URL showed it (graph stats, a SQL source's origin)."""
    assert sql_engine.redact_url(url) == shown
    assert sql_engine.has_password(url) == ("s3cret" in url)
    if "s3cret" in url and "port" not in url:
        with pytest.raises((InputError, BackendError)) as caught:
            SQLGraphStore(url.replace("@h/", "@127.0.0.1:1/"))
        assert "s3cret" not in str(caught.value)


def test_a_password_holding_an_at_sign_is_refused_saying_how_to_write_it() -> None:
    """The driver would connect to the password's tail as the host, and name it in its errors."""
    with pytest.raises(InputError) as caught:
        SQLGraphStore("postgresql+psycopg://bob:p@ss@h:5432/x")
    assert str(caught.value) == (
        "invalid graph store URL postgresql+psycopg://bob:***@h:5432/x: its password holds an '@': "
        "write it as %40"
    )


GRAPHWALK = str(Path(sys.executable).with_name("graphwalk"))


def graph_import(triples: Path, graph: Path | str) -> subprocess.Popen[str]:
    """``graphwalk graph import TRIPLES --out GRAPH --replace`` started (Ctrl-C reaches it)."""
    return subprocess.Popen(
        [GRAPHWALK, "graph", "import", str(triples), "--out", str(graph), "--replace"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not ignored when in background
    )


def interrupted_import(
    tmp_path: Path, graph: Path | str, hold: Callable[[], Any]
) -> tuple[int, str, str, float]:
    """A graph of ``a -r-> b`` imported into ``graph``, then another imported while ``hold()``'s session
    holds the writer lock (as another process's writer), interrupted (SIGINT) once it said something or
    after 60 s: its (exit code, stdout, stderr, seconds it took to stop after the signal)."""
    (tmp_path / "old.txt").write_text("a|r|b\n")
    (tmp_path / "new.txt").write_text("c|r|d\n")
    first = graph_import(tmp_path / "old.txt", graph)
    assert first.communicate(timeout=60) == (f"wrote 2 nodes and 1 edges to {graph}\n", "")
    holder = hold()
    proc = graph_import(tmp_path / "new.txt", graph)
    try:
        assert proc.stderr is not None
        said = select.select([proc.stderr], [], [], 60)[0]  # the old wait said nothing
        waiting = proc.stderr.readline() if said else ""
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=5)
        stopped_after = time.monotonic() - sent
    finally:
        proc.kill()
        proc.communicate()
        holder.rollback()
        holder.close()
    return proc.returncode, out, waiting + err, stopped_after


def test_ctrl_c_ends_a_sqlite_writer_waiting_for_another_process(tmp_path: Path) -> None:
    """A writer waiting for another process's write transaction waited inside SQLite's busy handler (C)
    with the event loop held: Ctrl-C went unheard until the other process committed, up to 600 s. It
    waits in awaited pauses now: Ctrl-C ends it at once (exit 130), having said what it waited for, and
    the graph is left as it was."""
    graph = tmp_path / "g.db"

    def hold() -> sqlite3.Connection:
        holder = sqlite3.connect(graph, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writes
        return holder

    ended = interrupted_import(tmp_path, graph, hold)
    url = f"sqlite:///{graph}"
    assert ended[:3] == (
        130,
        "",
        f"{url}: another process is writing this graph; waiting up to 600 s for it to commit\n"
        f"{url}: cancelled while waiting for another process's write; this write was not made\n",
    )
    assert ended[3] < 1.5
    with sqlite3.connect(graph) as check:
        assert check.execute("SELECT id FROM nodes ORDER BY id").fetchall() == [("a",), ("b",)]


async def refused_write(store: SQLGraphStore, holder: Any, error: str) -> float:
    """The seconds a write of node ``a`` on ``store`` waited for the writer lock ``holder`` (a connection
    of another session) holds, before it failed with the database's ``error``; the holder is let go."""
    started = time.monotonic()
    try:
        with pytest.raises(sqlalchemy.exc.OperationalError, match=error):
            await store.upsert_node(Node(id="a", name="A"))
        return time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()


async def cancelled_write(store: SQLGraphStore) -> tuple[bool, float]:
    """A write of node ``b`` started on ``store`` while another session holds its writer lock, cancelled
    after five 20 ms sleeps of the event loop: (whether those ran within 0.5 s, i.e. the wait left the loop
    free; the seconds the write took to stop once cancelled)."""
    task = asyncio.create_task(store.upsert_node(Node(id="b", name="B")))
    started = time.monotonic()
    for _ in range(5):
        await asyncio.sleep(0.02)
    ticked = time.monotonic() - started < 0.5
    task.cancel()
    cancelled = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    return ticked, time.monotonic() - cancelled


async def test_a_cancelled_task_stops_waiting_for_another_sqlite_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for another process's writer held the event loop (no other task ran) and could not be
    cancelled; it ran to SQLite's timeout. Now the loop goes on while it waits, a cancellation ends it at
    once, and the store writes again once the other writer is done."""
    monkeypatch.setattr(sql_engine, "SQLITE_BUSY_TIMEOUT_S", 3)
    graph = tmp_path / "g.db"
    store = SQLGraphStore(f"sqlite:///{graph}")
    await store.upsert_node(Node(id="a", name="A"))
    holder = sqlite3.connect(graph, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        ticked, stopped_after = await cancelled_write(store)
    finally:
        holder.rollback()
        holder.close()
    assert (ticked, stopped_after < 0.5) == (True, True)
    await store.upsert_node(Node(id="c", name="C"))
    assert [n.id async for n in store.iter_nodes()] == ["a", "c"]
    await store.close()


async def test_a_sqlite_writer_still_waiting_at_the_busy_timeout_fails_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting in awaited pauses keeps SQLite's timeout: past ``SQLITE_BUSY_TIMEOUT_S`` the write fails
    with "database is locked", nothing written."""
    monkeypatch.setattr(sql_engine, "SQLITE_BUSY_TIMEOUT_S", 0.3)
    graph = tmp_path / "g.db"
    store = SQLGraphStore(f"sqlite:///{graph}")
    holder = sqlite3.connect(graph, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waited = await refused_write(store, holder, "database is locked")
    assert 0.3 <= waited < 1.5
    assert await store.counts() == (0, 0)
    await store.close()


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite+pysqlite://",
        "sqlite:///file:g?mode=memory&cache=shared&uri=true",
        "sqlite:///file::memory:?uri=true",
    ],
)
def test_a_sqlite_database_in_memory_is_refused_at_open(url: str, tmp_path: Path) -> None:
    """``sqlite://`` opened: SQLAlchemy lends every task its one connection, so two walks' snapshots
    overlapping (an eval's concurrent walks), or a write during one, failed with "cannot start a
    transaction within a transaction", and the graph was gone when closed. SQLite gives a snapshot beside
    a writer only in a file's write-ahead log: the URL is refused at open, saying what to use instead."""
    with pytest.raises(InputError) as caught:
        SQLGraphStore(url)
    assert str(caught.value) == (
        f"graph store URL {url} is a SQLite database in memory: the SQL store needs a file (each walk reads "
        "its own snapshot while a write goes on, which SQLite gives only with a file's write-ahead log) and "
        "would lose the graph when closed; use a file (sqlite:///PATH.db) or, in Python, MemoryGraphStore"
    )
    file_uri = f"sqlite:///file:{tmp_path / 'g.db'}?uri=true"  # a file named by a URI opens
    asyncio.run(SQLGraphStore(file_uri).close())
    assert (tmp_path / "g.db").is_file()


def test_graph_import_into_a_sqlite_database_in_memory_is_an_error_naming_the_url(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("a|r|b\n")
    done = subprocess.run(
        [GRAPHWALK, "graph", "import", str(tmp_path / "t.txt"), "--out", "sqlite://"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: graph store URL sqlite:// is a SQLite database in memory: ")


def pg_writer_lock(url: str) -> psycopg.Connection[Any]:
    """A session of ``url``'s database holding the graph's writer lock, as another process's writer does."""
    holder = psycopg.connect(url.replace("+psycopg", ""))
    holder.execute(f"SELECT pg_advisory_xact_lock({sql_engine.WRITER_LOCK})")
    return holder


async def test_a_cancelled_task_stops_waiting_for_another_postgresql_writer(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The PostgreSQL writer lock (``pg_advisory_xact_lock``) was waited for inside the driver with the
    event loop held, for as long as another process's writer held it: no other task ran and the write could
    not be cancelled. It is tried in awaited pauses now, like SQLite's: the loop goes on, a cancellation ends
    the wait at once with nothing written, and the store writes again once the other writer is done."""
    store = SQLGraphStore(postgres_url)
    await store.upsert_node(Node(id="a", name="A"))
    holder = pg_writer_lock(postgres_url)
    release = threading.Timer(5, holder.rollback)  # the old wait ended only then
    release.start()
    try:
        ticked, stopped_after = await cancelled_write(store)
    finally:
        release.cancel()
        release.join()
        holder.rollback()
        holder.close()
    assert (ticked, stopped_after < 0.5) == (True, True)
    assert [n.id async for n in store.iter_nodes()] == ["a"]
    await store.upsert_node(Node(id="c", name="C"))
    assert [n.id async for n in store.iter_nodes()] == ["a", "c"]
    await store.close()
    assert [r.getMessage() for r in caplog.records if r.name == "graphwalk_core.stores.sql"] == [
        f"{postgres_url}: another process is writing this graph; waiting for it to commit",
        f"{postgres_url}: cancelled while waiting for another process's write; this write was not made",
    ]


async def test_a_postgresql_writer_waiting_for_another_writes_once_it_commits(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another store's write transaction holds the lock: the waiting write let the loop run (the old wait
    held it, so the holder could not even commit and the waiter failed at its lock_timeout) and writes as
    soon as the holder commits, on top of what it wrote."""
    first = SQLGraphStore(postgres_url)
    waiter_url = postgres_url + "?options=-clock_timeout%3D5s"
    second = SQLGraphStore(waiter_url)
    async with first.transaction():
        await first.upsert_node(Node(id="a", name="A"))
        waiting = asyncio.create_task(second.upsert_node(Node(id="b", name="B")))
        await asyncio.sleep(0.3)
        held_up = not waiting.done()
        await first.upsert_node(Node(id="a2", name="A2"))
    committed = time.monotonic()
    await asyncio.wait_for(waiting, 5)
    waited_after_commit = time.monotonic() - committed
    assert (held_up, waited_after_commit < 0.5) == (True, True)
    assert [n.id async for n in second.iter_nodes()] == ["a", "a2", "b"]
    for store in (first, second):
        await store.close()
    assert [r.getMessage() for r in caplog.records if r.name == "graphwalk_core.stores.sql"] == [
        f"{waiter_url}: another process is writing this graph; waiting up to 5 s for it to commit",
    ]


@pytest.mark.parametrize(
    ("setting", "cause"),
    [("lock_timeout", "lock timeout"), ("statement_timeout", "statement timeout")],
)
async def test_a_postgresql_writer_still_waiting_at_the_sessions_timeout_fails_as_before(
    postgres_url: str, setting: str, cause: str
) -> None:
    """Waiting in awaited pauses keeps the session's bound on the wait (``lock_timeout``, or
    ``statement_timeout``): past it the write fails with the server's own error, nothing written."""
    store = SQLGraphStore(f"{postgres_url}?options=-c{setting}%3D600ms")
    holder = pg_writer_lock(postgres_url)
    waited = await refused_write(store, holder, f"canceling statement due to {cause}")
    assert 0.6 <= waited < 1.5
    assert await store.counts() == (0, 0)
    await store.close()


def test_ctrl_c_ends_a_postgresql_writer_waiting_for_another_process(
    postgres_url: str, tmp_path: Path
) -> None:
    """Ctrl-C cancels the CLI's main task, which the old wait for the writer lock (in the driver) never
    noticed: the command went on waiting for the other writer. Now it exits 130 at once, having said what it
    waited for, and the graph is left as it was."""
    ended = interrupted_import(tmp_path, postgres_url, lambda: pg_writer_lock(postgres_url))
    assert ended[:3] == (
        130,
        "",
        f"{postgres_url}: another process is writing this graph; waiting for it to commit\n"
        f"{postgres_url}: cancelled while waiting for another process's write; this write was not made\n",
    )
    assert ended[3] < 1.5
    with psycopg.connect(postgres_url.replace("+psycopg", "")) as check:
        assert check.execute("SELECT id FROM nodes ORDER BY id").fetchall() == [("a",), ("b",)]
