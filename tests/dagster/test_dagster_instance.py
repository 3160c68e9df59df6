"""A PostgreSQL Dagster instance whose URL is unset or out of reach: ``graphwalk demo``,
``python -m graphwalk_dagster.pools`` and ``python -m graphwalk_dagster.scale_out`` stop with one line
naming what to fix (the variable, the URL without its password, the server's answer), not a traceback,
and the demo's ``--fresh`` deletes nothing before the instance opens."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster_postgres.utils
import psycopg
import pytest
from dagster._utils.error import SerializableErrorInfo
from dagster_fixtures import REPO
from port_for import get_port
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_dagster import pools, scale_out

UNSET = (
    "error: {home}/dagster.yaml reads GRAPHWALK_DAGSTER_PG_URL from the environment, which is not set: "
    "export GRAPHWALK_DAGSTER_PG_URL=postgresql+psycopg2://USER:PASSWORD@HOST:5432/DATABASE "
    "(docs/deploy.md, 'The Dagster instance on PostgreSQL')\n"
)


@pytest.fixture
def pg_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DAGSTER_HOME holding the shipped dagster.postgres.yaml; GRAPHWALK_DAGSTER_PG_URL unset."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "dagster.postgres.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv("GRAPHWALK_DAGSTER_PG_URL", raising=False)
    return home


def test_an_unset_url_names_the_variable(pg_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert pools.main([]) == 2
    assert scale_out.main(["films"]) == 2
    assert capsys.readouterr().err == UNSET.format(home=pg_home) * 2


def test_a_server_out_of_reach_is_named_without_the_password(
    pg_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = get_port(None)  # nothing listens there
    url = f"postgresql+psycopg2://dagster:s3cret@127.0.0.1:{port}/dagster"
    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", url)
    monkeypatch.setattr(dagster_postgres.utils.time, "sleep", lambda _s: None)  # Dagster's retries
    assert pools.main([]) == 2
    assert capsys.readouterr().err == (  # one line while Dagster retries (3 lines a retry before)
        "the Dagster instance's PostgreSQL storage does not answer; retrying ...\n"
        f"error: cannot open the Dagster instance in {pg_home}: its PostgreSQL storage "
        f"(GRAPHWALK_DAGSTER_PG_URL=postgresql+psycopg2://dagster:***@127.0.0.1:{port}/dagster) could not "
        f'be reached: connection to server at "127.0.0.1", port {port} failed: Connection refused\n'
    )


def test_a_storage_the_role_cannot_create_tables_in_is_named_with_the_servers_answer(
    pg_home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Since PostgreSQL 15, a role that does not own the database cannot create tables in ``public``:
    opening the instance (whose first use creates Dagster's tables) used to end in a ProgrammingError
    traceback."""
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS dagster_user")
        conn.execute("CREATE ROLE dagster_user LOGIN")
    url = postgres_url.replace("+psycopg://postgres@", "+psycopg2://dagster_user:s3cret@")
    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", url)
    assert pools.main([]) == 2
    shown = url.replace("s3cret", "***")
    assert capsys.readouterr().err == (
        f"error: cannot open the Dagster instance in {pg_home}: its storage "
        f"(GRAPHWALK_DAGSTER_PG_URL={shown}) failed: permission denied for schema public\n"
    )


def test_a_url_that_does_not_parse_is_named_without_the_password(
    pg_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", "postgresql://alice:s3cret@h:port/dagster")
    assert pools.main([]) == 2  # SQLAlchemy's ValueError traceback before
    assert capsys.readouterr().err == (
        f"error: {pg_home}/dagster.yaml reads GRAPHWALK_DAGSTER_PG_URL: invalid storage URL "
        "postgresql://alice:***@h:port/dagster: not a SQLAlchemy URL (dialect+driver://user:password@host:port/"
        "database, the port a number) (docs/deploy.md, 'The Dagster instance on PostgreSQL')\n"
    )


def test_the_demo_stops_before_fresh_deletes_the_warehouse(pg_home: Path, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    (warehouse / "kept.parquet").write_bytes(b"PAR1")
    result = CliRunner().invoke(
        app, ["demo", "--fresh", "--warehouse", str(warehouse), "--dagster-home", str(pg_home)]
    )
    assert result.exit_code == 2
    assert result.output == UNSET.format(home=pg_home)
    assert (warehouse / "kept.parquet").read_bytes() == b"PAR1"


def test_a_failed_step_is_reported_by_its_cause() -> None:
    """Dagster wraps a step's exception in "Error occurred while executing op"; the cause is the news."""
    cause = SerializableErrorInfo(
        "graphwalk_core.errors.BackendError: cannot open graph store postgresql+psycopg://g:***@db/graph: "
        'connection failed: FATAL:  password authentication failed for user "g"\n',
        [],
        "BackendError",
    )
    wrapper = SerializableErrorInfo(
        'dagster._core.errors.DagsterExecutionStepExecutionError: Error occurred while executing op "x":\n',
        [],
        "DagsterExecutionStepExecutionError",
        cause=cause,
    )
    assert scale_out.step_error(wrapper) == (
        "BackendError: cannot open graph store postgresql+psycopg://g:***@db/graph: connection failed: "
        'FATAL:  password authentication failed for user "g"'
    )
    assert scale_out.step_error(SerializableErrorInfo("KeyError: 'x'\n", [], "KeyError")) == "KeyError: 'x'"
    assert scale_out.step_error(None) == "?"


POSTGRES_DB = """\
storage:
  postgres:
    postgres_db:
      username: dagster
      password:
        env: DAGSTER_PG_PASSWORD
      hostname: 127.0.0.1
      db_name: dagster
      port: {port}
"""


def test_a_password_in_a_variable_of_its_own_is_not_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The instance config Dagster's Helm chart renders reads the password alone (``postgres_db``'s
    ``password: {env: DAGSTER_PG_PASSWORD}``): it is not a URL whose password can be starred out, so its
    value is not shown at all; unset, it is named without a URL to export."""
    home = tmp_path / "home"
    home.mkdir()
    port = get_port(None)  # nothing listens there
    (home / "dagster.yaml").write_text(POSTGRES_DB.format(port=port), encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv("DAGSTER_PG_PASSWORD", raising=False)
    assert pools.main([]) == 2
    assert capsys.readouterr().err == (
        f"error: {home}/dagster.yaml reads DAGSTER_PG_PASSWORD (as `password`) from the environment, which "
        "is not set (docs/deploy.md, 'The Dagster instance on PostgreSQL')\n"
    )
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "s3cret")
    monkeypatch.setattr(dagster_postgres.utils.time, "sleep", lambda _s: None)  # Dagster's retries
    assert pools.main([]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err
    assert err.splitlines()[-1] == (
        f"error: cannot open the Dagster instance in {home}: its PostgreSQL storage "
        "(DAGSTER_PG_PASSWORD=***) could not be reached: connection failed: "
        f'connection to server at "127.0.0.1", port {port} failed: Connection refused'
    )


def test_dagster_home_unset_or_no_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pools and scale_out open the instance in DAGSTER_HOME: unset, or a folder that is not there, is one
    line (Dagster alone raises DagsterHomeNotSetError, or fails a check on ``base_dir``, with a traceback)."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert pools.main([]) == 2
    assert scale_out.main(["films"]) == 2
    unset = (
        "error: DAGSTER_HOME is not set: export it as the folder of the instance's dagster.yaml "
        "(docs/deploy.md, 'The Dagster instance on PostgreSQL')\n"
    )
    assert capsys.readouterr().err == unset * 2
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no" / "such"))
    assert pools.main([]) == 2
    assert capsys.readouterr().err == (
        f"error: DAGSTER_HOME={tmp_path}/no/such is not a folder "
        "(docs/deploy.md, 'The Dagster instance on PostgreSQL')\n"
    )
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("module", [pools, scale_out])
def test_help_is_for_users_not_docstring_markup(module: object, capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` prints the module docstring's first line without its reStructuredText ````name````."""
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])  # type: ignore[attr-defined]
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ")
    assert "``" not in out


def test_scale_out_refuses_an_undeclared_or_repeated_source_before_registering_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped id was registered as a partition for good (shown in the UI, named by daily_reingest
    every night) and its run failed; an id given twice started two runs of one source at once, outside
    the run queue, the later overtaken (StaleDiffError)."""
    import dagster as dg
    from dagster_fixtures import copy_data

    from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION

    sources = copy_data(tmp_path / "data")
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("GRAPHWALK_SOURCES", str(sources))
    monkeypatch.setenv("GRAPHWALK_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.delenv("GRAPHWALK_GRAPH_URL", raising=False)
    assert scale_out.main(["films", "flims", "film"]) == 2
    assert scale_out.main(["films", "sample_db", "films"]) == 2
    assert capsys.readouterr().err == (
        f"error: sources ['flims', 'film'] are not declared in {sources} (it declares "
        "['films', 'sample_db']): nothing was registered or run\n"
        "error: source 'films' is named twice: one run per source (two at once would overtake each other); "
        "nothing was registered or run\n"
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_dynamic_partitions(SOURCES_PARTITION) == []
        assert instance.get_runs() == []


def test_scale_out_refuses_fewer_than_one_run_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-runs 0`` registered the partitions, then failed with ProcessPoolExecutor's traceback."""
    with pytest.raises(SystemExit) as stopped:
        scale_out.main(["films", "--max-runs", "0"])
    assert stopped.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("error: argument --max-runs: 0 is not a number of runs (1 or more)")
    )


def test_scale_out_exits_1_when_runs_ran_and_failed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit code 2 is an error that stopped the command (above); runs that ran and failed are 1."""
    from contextlib import nullcontext

    def failed(*args: object, **kwargs: object) -> None:
        raise scale_out.RunsFailed("ingest runs failed for ['films']; see their events in the instance")

    monkeypatch.setattr(scale_out, "home_instance", nullcontext)
    monkeypatch.setattr(scale_out, "ingest_partitions", failed)
    assert scale_out.main(["films"]) == 1
    assert capsys.readouterr().err == (
        "error: ingest runs failed for ['films']; see their events in the instance\n"
    )


def test_a_password_pasted_as_the_url_is_not_shown(
    pg_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A value that is no URL at all (the password alone, pasted into the URL's variable) was printed as it
    is in the "not a SQLAlchemy URL" error."""
    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", "s3cret")
    assert pools.main([]) == 2
    assert capsys.readouterr().err == (
        f"error: {pg_home}/dagster.yaml reads GRAPHWALK_DAGSTER_PG_URL: invalid storage URL ***: not a "
        "SQLAlchemy URL (dialect+driver://user:password@host:port/database, the port a number) "
        "(docs/deploy.md, 'The Dagster instance on PostgreSQL')\n"
    )
