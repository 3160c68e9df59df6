"""SQL store in a shared database: the URL's connection options, connections the server drops, other
applications' tables."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import create_engine, inspect
from sqlalchemy.exc import OperationalError

from graphwalk_core.errors import InputError
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


async def test_the_urls_options_can_turn_synchronous_commit_back_on(postgres_url: str) -> None:
    """The store commits asynchronously unless the URL's options say otherwise."""
    default = SQLGraphStore(postgres_url)
    durable = SQLGraphStore(postgres_url + "?options=-csynchronous_commit%3Don")
    for store, setting in ((default, "off"), (durable, "on")):
        with store._engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == setting
        await store.close()


async def test_libpqs_pgoptions_apply_when_the_url_gives_none(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PGOPTIONS is libpq's default for a URL without ``options``: it used to be replaced too."""
    _admin(postgres_url, "CREATE SCHEMA team_a")
    monkeypatch.setenv("PGOPTIONS", "-c search_path=team_a")
    store = SQLGraphStore(postgres_url)
    await store.upsert_node(Node(id="a", name="Alice"))
    with store._engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "off"
    await store.close()
    assert _tables(postgres_url) == [("team_a", 7)]


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
