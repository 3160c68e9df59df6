"""The ``graph_store`` pool on a PostgreSQL instance (``dagster.postgres.yaml``): an explicit limit
written by ``graphwalk_dagster.pools``, so Dagster's first claim of a pool from ``default_limit`` — which
fails one of several runs claiming a new pool at once on PostgreSQL (dagster-io/dagster#33552; it made
``test_dagster_parallel_sources`` flaky) — never runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster_fixtures import REPO
from dagster_postgres import PostgresEventLogStorage
from servers.postgres_server import PostgresServer

from graphwalk_dagster.pools import GRAPH_POOL, main, set_pool_limits


@pytest.fixture
def pg_instance(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dg.DagsterInstance]:
    """An instance of the shipped ``dagster.postgres.yaml`` on a fresh database of the test server."""
    url = postgres_server.url(postgres_server.create_database("dagster"), driver="postgresql+psycopg2")
    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", url)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    shutil.copy(REPO / "dagster.postgres.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.get() as instance:
        yield instance


def test_pool_limits_are_explicit_and_a_users_limit_is_kept(
    pg_instance: dg.DagsterInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pg_instance.global_op_concurrency_default_limit is None
    assert set_pool_limits(pg_instance) == {GRAPH_POOL: 8}
    assert [(p.name, p.limit, p.from_default) for p in pg_instance.event_log_storage.get_pool_limits()] == [
        (GRAPH_POOL, 8, False)
    ]
    pg_instance.event_log_storage.set_concurrency_slots(GRAPH_POOL, 3)  # as the UI or the CLI would
    assert set_pool_limits(pg_instance) == {GRAPH_POOL: 3}
    assert main([]) == 0
    assert main(["--graph-store", "5"]) == 0
    assert capsys.readouterr().out == "pool graph_store: 3 at once\npool graph_store: 5 at once\n"
    assert set_pool_limits(pg_instance, {GRAPH_POOL: 2}, overwrite=True) == {GRAPH_POOL: 2}


def dagster_default_initialization(*_: object) -> bool:
    raise AssertionError("a run took Dagster's default-limit initialization (racy on PostgreSQL)")


def test_runs_claim_the_pool_without_dagsters_default_initialization(
    pg_instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        PostgresEventLogStorage, "initialize_concurrency_limit_to_default", dagster_default_initialization
    )

    @dg.asset(pool=GRAPH_POOL)
    def writes_the_graph() -> int:
        return 1

    # before the limit is written (unbounded pool) and after it (a slot claimed and freed)
    assert dg.materialize([writes_the_graph], instance=pg_instance).success
    set_pool_limits(pg_instance)
    assert dg.materialize([writes_the_graph], instance=pg_instance).success
    info = pg_instance.event_log_storage.get_concurrency_info(GRAPH_POOL)
    assert (info.slot_count, info.claimed_slots, info.pending_steps, info.using_default_limit) == (
        8,
        [],
        [],
        False,
    )


def test_a_sqlite_instance_keeps_its_default_limit_of_one(tmp_path: Path) -> None:
    """``dagster.yaml`` (one machine, SQLite) runs one graph_store step at a time: pools and scale_out
    wrote 8 over it, so eight steps contended for the SQLite graph."""
    shutil.copy(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.global_op_concurrency_default_limit == 1
        assert set_pool_limits(instance) == {GRAPH_POOL: 1}
        assert set_pool_limits(instance, {GRAPH_POOL: 4}, overwrite=True) == {GRAPH_POOL: 4}


@pytest.mark.parametrize("limit", ["0", "-3", "²"])
def test_pools_refuses_a_graph_store_limit_below_one(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--graph-store 0`` was written (every graph_store step then waits forever); ``-3`` failed with
    Dagster's traceback after opening the instance; "²" (a digit to str.isdigit, not to int) said "invalid
    parse value"."""
    with pytest.raises(SystemExit) as stopped:
        main(["--graph-store", limit])
    assert stopped.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(f"error: argument --graph-store: {limit} is not a number of steps (1 or more)")
    )
