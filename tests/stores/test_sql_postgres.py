"""SQL store in a shared database: the URL's connection options, connections the server drops, other
applications' tables."""

from __future__ import annotations

import psycopg
import pytest
from servers.pgbouncer_server import PgBouncer
from sqlalchemy import create_engine, inspect
from sqlalchemy.exc import OperationalError

from graphwalk_core.errors import BackendError, InputError
from graphwalk_core.model import Node
from graphwalk_core.stores import SQLGraphStore


def _admin(url: str, *statements: str) -> list[tuple[object, ...]]:
    """Run ``statements`` on ``url``'s database as the server's superuser; the last one's rows."""
    rows: list[tuple[object, ...]] = []
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        for statement in statements:
            cursor = conn.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
    return rows


def _tables(url: str) -> list[tuple[object, ...]]:
    return _admin(
        url,
        "SELECT table_schema, count(*) FROM information_schema.tables "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') GROUP BY 1 ORDER BY 1",
    )


async def test_the_urls_options_set_the_schema_of_the_graph(postgres_url: str) -> None:
    """``?options=-csearch_path=...`` puts each team's graph in its schema of one database: the store's
    own session setting (asynchronous commit) used to replace the URL's options, so every graph went to
    ``public``, one over the other."""
    _admin(postgres_url, "CREATE SCHEMA team_a", "CREATE SCHEMA team_b")
    one = SQLGraphStore(postgres_url + "?options=-csearch_path%3Dteam_a")
    two = SQLGraphStore(postgres_url + "?options=-csearch_path%3Dteam_b")
    await one.upsert_node(Node(id="a", name="Alice"))
    await two.upsert_many([Node(id="b", name="Bob"), Node(id="c", name="Carla")])
    assert (await one.counts(), await two.counts()) == ((1, 0), (2, 0))
    assert _tables(postgres_url) == [("team_a", 7), ("team_b", 7)]
    await one.close()
    await two.close()


async def _write_commits(store: SQLGraphStore) -> tuple[str, str]:
    """The ``synchronous_commit`` a write transaction of ``store`` runs with, and who set it (``session``:
    the store, for the transaction)."""
    async with store.transaction():
        assert store._conn is not None
        query = "SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'"
        setting, source = store._conn.exec_driver_sql(query).one()
        return setting, source


async def test_writes_commit_asynchronously_unless_the_session_is_set_otherwise(postgres_url: str) -> None:
    """The store's writes commit asynchronously, unless the URL's options, PGOPTIONS or the role's or
    database's settings choose for the session."""
    default = SQLGraphStore(postgres_url)
    assert await _write_commits(default) == ("off", "session")
    durable = SQLGraphStore(postgres_url + "?options=-csynchronous_commit%3Don")
    assert await _write_commits(durable) == ("on", "client")
    database = postgres_url.rsplit("/", 1)[1]
    _admin(postgres_url, f'ALTER DATABASE "{database}" SET synchronous_commit = remote_write')
    again = SQLGraphStore(postgres_url)
    assert await _write_commits(again) == ("remote_write", "database")
    for store in (default, durable, again):
        await store.close()


async def test_libpqs_pgoptions_apply(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PGOPTIONS applies to a URL without ``options``: it used to be replaced too."""
    _admin(postgres_url, "CREATE SCHEMA team_a")
    monkeypatch.setenv("PGOPTIONS", "-c search_path=team_a")
    store = SQLGraphStore(postgres_url)
    await store.upsert_node(Node(id="a", name="Alice"))
    assert await _write_commits(store) == ("off", "session")
    await store.close()
    assert _tables(postgres_url) == [("team_a", 7)]


async def _read_by_turns(url: str) -> str | None:
    """The first error (its type and first line) of two stores reading the graph at ``url`` by turns, each
    read a transaction of its own; None when they read it all."""
    stores = [SQLGraphStore(url, create=False) for _ in range(2)]
    try:
        for _ in range(10):
            for store in stores:
                await store.adjacent("a")
                await store.get_nodes(["a"])
    except Exception as exc:  # collected for the assertion
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        for store in stores:
            await store.close()
    return None


async def test_a_graph_behind_pgbouncer_in_transaction_mode(postgres_url: str, pgbouncer: PgBouncer) -> None:
    """Shared servers are often reached through PgBouncer, whose transaction pooling runs each transaction
    on any server session and refuses startup parameters it does not know. The store used to send one
    (``options``, for asynchronous commit), so it could not connect at all; psycopg's prepared statements
    need ``?prepare_threshold=none`` there (PgBouncer before 1.21), which used to fail with a TypeError."""
    url = pgbouncer.url(postgres_url.rsplit("/", 1)[1])
    store = SQLGraphStore(url)
    await store.upsert_many([Node(id="a", name="Alice"), Node(id="b", name="Bob")])
    assert await _write_commits(store) == ("off", "session")
    await store.close()
    assert await _read_by_turns(url + "?prepare_threshold=none") is None
    assert await _read_by_turns(postgres_url + "?prepare_threshold=0") is None  # every statement prepared
    # a ProgrammingError naming a statement psycopg prepared on another server session before
    assert await _read_by_turns(url) == (
        f"ConfigError: the graph store {url} lost a prepared statement between transactions (PgBouncer in "
        "transaction mode?): add prepare_threshold=none to its URL"
    )
    with pytest.raises(InputError) as refused:
        SQLGraphStore(url + "?prepare_threshold=never")
    assert str(refused.value) == (
        f"invalid graph store URL {url}?prepare_threshold=never: prepare_threshold must be a whole number "
        "or none (none: no prepared statements, as PgBouncer in transaction mode needs)"
    )


def _drop_connections(url: str) -> int:
    """End every other session on ``url``'s database (a restarted server, an idle timeout, a firewall)."""
    database = url.rsplit("/", 1)[1].split("?")[0]
    rows = _admin(
        url,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()",
    )
    return int(rows[0][0])  # type: ignore[call-overload]


async def test_a_connection_the_server_dropped_while_idle_is_replaced(postgres_url: str) -> None:
    """A store keeps its connections between calls (a long extraction between two windows, a query
    service): one the server ended meanwhile used to fail the next read or write; it is now checked when
    taken from the pool and replaced."""
    store = SQLGraphStore(postgres_url)
    await store.upsert_node(Node(id="a", name="Alice"))
    assert _drop_connections(postgres_url) == 1
    assert await store.counts() == (1, 0)
    assert _drop_connections(postgres_url) == 1
    async with store.transaction():
        await store.upsert_node(Node(id="b", name="Bob"))
    assert await store.counts() == (2, 0)
    await store.close()


async def test_another_applications_table_of_a_graph_tables_name_is_left_as_it_was(sql_url: str) -> None:
    """A database whose ``metadata`` table is another application's: the store used to create its other
    six tables beside it and then fail on its first read with a traceback (column "key" does not exist)."""
    engine = create_engine(sql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE metadata (id INTEGER PRIMARY KEY, note TEXT)")
        conn.exec_driver_sql("INSERT INTO metadata VALUES (1, 'keep me')")
    with pytest.raises(InputError) as refused:
        SQLGraphStore(sql_url)
    assert str(refused.value) == (
        f"cannot keep a graph in {sql_url} (left as it was): its table 'metadata' (columns id, note) is not "
        "a graphwalk graph's (columns key, value); use another database, or another schema "
        "(?options=-csearch_path%3DSCHEMA)"
    )
    with engine.connect() as conn:
        assert inspect(conn).get_table_names() == ["metadata"]
        assert conn.exec_driver_sql("SELECT * FROM metadata").all() == [(1, "keep me")]
    engine.dispose()


async def test_graphs_in_two_schemas_do_not_wait_for_each_others_writers(postgres_url: str) -> None:
    """The writer lock is the graph's: it used to be one per database, so a window applied to one schema's
    graph held up every write to the others'. Writers of one graph still wait for each other."""
    _admin(postgres_url, "CREATE SCHEMA team_a", "CREATE SCHEMA team_b")
    impatient = "%20-clock_timeout%3D1s"  # a writer waiting longer fails
    one = SQLGraphStore(postgres_url + "?options=-csearch_path%3Dteam_a")
    two = SQLGraphStore(postgres_url + "?options=-csearch_path%3Dteam_b" + impatient)
    same = SQLGraphStore(postgres_url + "?options=-csearch_path%3Dteam_a" + impatient)
    async with one.transaction():
        await one.upsert_node(Node(id="a", name="Alice"))
        await two.upsert_node(Node(id="b", name="Bob"))
        with pytest.raises(OperationalError, match="canceling statement due to lock timeout"):
            await same.upsert_node(Node(id="c", name="Carla"))
    assert (await one.counts(), await two.counts()) == ((1, 0), (1, 0))
    for store in (one, two, same):
        await store.close()


def test_a_role_that_cannot_create_the_tables_is_told_in_one_line(postgres_url: str) -> None:
    """Since PostgreSQL 15 a role that does not own the database cannot create tables in ``public``: the
    error used to go on with the server's pointer into the CREATE TABLE statement."""
    _admin(postgres_url, "DROP ROLE IF EXISTS team_user", "CREATE ROLE team_user LOGIN")
    url = postgres_url.replace("://postgres@", "://team_user@")
    with pytest.raises(BackendError) as refused:
        SQLGraphStore(url)
    assert str(refused.value) == f"cannot open graph store {url}: permission denied for schema public"
    assert _tables(postgres_url) == []
