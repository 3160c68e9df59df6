"""Open a persistent Dagster instance, with an error that names what to fix when its storage is unset
or out of reach (``dagster.postgres.yaml`` reads its URL from ``GRAPHWALK_DAGSTER_PG_URL``).

Dagster alone answers an unset variable with a config-processing traceback, and a PostgreSQL server
that refuses the connection with "too many retries for DB connection" after a long traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from graphwalk_core.errors import BackendError, ConfigError
from graphwalk_core.stores.sql_engine import redact_url

DEPLOY_DOC = "docs/deploy.md, 'The Dagster instance on PostgreSQL'"


def env_names(config: Any) -> list[str]:
    """The environment variables an instance config reads (``{env: NAME}``), in file order."""
    if isinstance(config, dict):
        if set(config) == {"env"} and isinstance(config["env"], str):
            return [config["env"]]
        return [name for value in config.values() for name in env_names(value)]
    if isinstance(config, list):
        return [name for value in config for name in env_names(value)]
    return []


def _config_env(home: Path) -> list[str]:
    file = home / "dagster.yaml"
    if not file.is_file():
        return []
    try:
        return env_names(yaml.safe_load(file.read_text(encoding="utf-8")))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML ({exc})") from None


def _root_cause(exc: BaseException) -> str:
    """The first line of the innermost cause (the driver's own message, e.g. the server's refusal)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    exc = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def open_instance(home: Path) -> dg.DagsterInstance:
    """The persistent instance in ``home``; a ConfigError naming an unset variable its dagster.yaml
    reads, a BackendError naming the storage URL (password hidden) and the server's answer."""
    home = home.resolve()
    names = _config_env(home)
    unset = [name for name in names if not os.environ.get(name)]
    if unset:
        raise ConfigError(
            f"{home / 'dagster.yaml'} reads {', '.join(unset)} from the environment, which is not set: "
            f"export {unset[0]}=postgresql+psycopg2://USER:PASSWORD@HOST:5432/DATABASE ({DEPLOY_DOC})"
        )
    from dagster_postgres.utils import DagsterPostgresException

    try:
        return dg.DagsterInstance.from_config(str(home))
    except DagsterPostgresException as exc:
        urls = [f"{name}={redact_url(os.environ[name])}" for name in names]
        raise BackendError(
            f"cannot open the Dagster instance in {home}: its PostgreSQL storage "
            f"({', '.join(urls) or 'dagster.yaml'}) could not be reached: {_root_cause(exc)}"
        ) from None


def home_instance() -> dg.DagsterInstance:
    """The instance in ``DAGSTER_HOME`` (as ``dagster`` itself finds it), opened by :func:`open_instance`;
    without ``DAGSTER_HOME``, Dagster's own choice (an ephemeral instance)."""
    home = os.environ.get("DAGSTER_HOME")
    return open_instance(Path(home)) if home else dg.DagsterInstance.get()
