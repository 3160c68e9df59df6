"""Shared test fixtures: paths to ../shared, offline environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers.pgbouncer_server import PgBouncer, find_pgbouncer
from servers.postgres_server import PostgresServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
#: No test reads or writes the developer's embedding cache (~/.cache/graphwalk); tests of it set their own.
os.environ["GRAPHWALK_EMBED_CACHE"] = "off"

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_DATA = SHARED / "data"
SHARED_MODEL = SHARED / "models" / "all-minilm-l6-v2-onnx"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a message naming it."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: this test needs ../shared (see ../shared/README.md)")
    return path


@pytest.fixture
def metaqa_dir() -> Path:
    return shared_path("data", "metaqa")


@pytest.fixture
def minilm_dir() -> Path:
    return shared_path("models", "all-minilm-l6-v2-onnx")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server on 127.0.0.1 for the whole session (started on first use)."""
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The SQLAlchemy URL of a fresh, empty PostgreSQL database."""
    return postgres_server.url(postgres_server.create_database())


@pytest.fixture(scope="session")
def pgbouncer(postgres_server: PostgresServer) -> Iterator[PgBouncer]:
    """PgBouncer in transaction pooling mode in front of the session's server (started on first use)."""
    binary = find_pgbouncer()
    if binary is None:
        pytest.skip("no pgbouncer binary: install Debian's pgbouncer package (`make test` does it as root)")
    bouncer = PgBouncer(postgres_server, binary).start()
    yield bouncer
    bouncer.stop()


#: The SQL backends every SQL-store test runs on.
SQL_BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh graph database URL: a SQLite file, then a PostgreSQL database on the test server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'graph.sqlite'}"
    return request.getfixturevalue("postgres_url")
