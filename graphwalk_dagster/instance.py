"""Open a persistent Dagster instance, with an error that names what to fix when its storage is unset
or out of reach (``dagster.postgres.yaml`` reads its URL from ``GRAPHWALK_DAGSTER_PG_URL``).

Dagster alone answers an unset variable with a config-processing traceback, and a PostgreSQL server
that refuses the connection with "too many retries for DB connection" after a long traceback.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from graphwalk_core.errors import BackendError, ConfigError, InputError
from graphwalk_core.stores.sql_engine import error_reason, parse_url, redact_url

DEPLOY_DOC = "docs/deploy.md, 'The Dagster instance on PostgreSQL'"


def env_reads(config: Any, key: str = "") -> list[tuple[str, str]]:
    """(key, variable) of each ``{env: NAME}`` an instance config reads, in file order: the variable and
    the key it fills (``postgres_url``, ``password``, ...)."""
    if isinstance(config, dict):
        if set(config) == {"env"} and isinstance(config["env"], str):
            return [(key, config["env"])]
        return [read for k, value in config.items() for read in env_reads(value, str(k))]
    if isinstance(config, list):
        return [read for value in config for read in env_reads(value, key)]
    return []


def _config_env(home: Path) -> dict[str, str]:
    """The variables ``home``'s dagster.yaml reads, in file order, each with the (first) key it fills."""
    file = home / "dagster.yaml"
    if not file.is_file():
        return {}
    try:
        reads = env_reads(yaml.safe_load(file.read_text(encoding="utf-8")))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML ({exc})") from None
    found: dict[str, str] = {}
    for key, name in reads:
        found.setdefault(name, key)
    return found


def _shown(value: str) -> str:
    """A variable's value for a message: a URL with its password as ``***``; anything else (a password
    read alone, as ``postgres_db``'s ``password: {env: ...}`` does) as ``***``."""
    return redact_url(value) if "://" in value else "***"


def _root_cause(exc: BaseException) -> str:
    """What the database said (:func:`error_reason`) in the innermost cause: Dagster wraps the driver's
    error (e.g. the server's refusal) in its own."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return error_reason(exc)


class _RetryNotice(logging.Filter):
    """Drops dagster-postgres' warning at each connection retry (three lines each, five times), saying
    once on stderr that it waits instead."""

    PREFIX = "Retrying failed database connection"

    def __init__(self) -> None:
        super().__init__()
        self.said = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(self.PREFIX):
            return True
        if not self.said:
            print("the Dagster instance's PostgreSQL storage does not answer; retrying ...", file=sys.stderr)
            self.said = True
        return False


@contextmanager
def _retries_in_one_line() -> Iterator[None]:
    notice = _RetryNotice()
    logging.root.addFilter(notice)
    try:
        yield
    finally:
        logging.root.removeFilter(notice)


def open_instance(home: Path) -> dg.DagsterInstance:
    """The persistent instance in ``home``; a ConfigError naming an unset variable its dagster.yaml
    reads, a BackendError naming the storage URL (password hidden) and the server's answer."""
    home = home.resolve()
    reads = _config_env(home)
    unset = [name for name in reads if not os.environ.get(name)]
    if unset:
        name = unset[0]
        remedy = (
            f": export {name}=postgresql+psycopg2://USER:PASSWORD@HOST:5432/DATABASE"
            if reads[name] == "postgres_url"
            else ""
        )
        listed = ", ".join(n if reads[n] == "postgres_url" else f"{n} (as `{reads[n]}`)" for n in unset)
        raise ConfigError(
            f"{home / 'dagster.yaml'} reads {listed} from the environment, which is not set{remedy} "
            f"({DEPLOY_DOC})"
        )
    for name in (n for n, key in reads.items() if key == "postgres_url"):
        try:
            parse_url(os.environ[name], "storage", shown=_shown(os.environ[name]))
        except InputError as exc:  # Dagster alone fails with SQLAlchemy's traceback
            raise ConfigError(f"{home / 'dagster.yaml'} reads {name}: {exc} ({DEPLOY_DOC})") from None
    from dagster_postgres.utils import DagsterPostgresException
    from sqlalchemy.exc import SQLAlchemyError

    storage = ", ".join(f"{name}={_shown(os.environ[name])}" for name in reads) or "dagster.yaml"
    try:
        with _retries_in_one_line():
            return dg.DagsterInstance.from_config(str(home))
    except DagsterPostgresException as exc:
        raise BackendError(
            f"cannot open the Dagster instance in {home}: its PostgreSQL storage ({storage}) could not be "
            f"reached: {_root_cause(exc)}"
        ) from None
    except SQLAlchemyError as exc:  # reached, but refused (a role that cannot create Dagster's tables)
        raise BackendError(
            f"cannot open the Dagster instance in {home}: its storage ({storage}) failed: {_root_cause(exc)}"
        ) from None


def home_instance() -> dg.DagsterInstance:
    """The instance in ``DAGSTER_HOME`` (``~`` expanded), opened by :func:`open_instance`; a ConfigError
    when the variable is unset or names no folder (Dagster alone raises with a traceback)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        raise ConfigError(
            f"DAGSTER_HOME is not set: export it as the folder of the instance's dagster.yaml ({DEPLOY_DOC})"
        )
    folder = Path(home).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"DAGSTER_HOME={home} is not a folder ({DEPLOY_DOC})")
    return open_instance(folder)
