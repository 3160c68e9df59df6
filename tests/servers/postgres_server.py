"""A throwaway PostgreSQL server on 127.0.0.1 for the tests, driven by pytest-postgresql's executor.

The binaries come from Debian's ``postgresql`` package (``make test`` installs it when missing).
PostgreSQL refuses to run as root, so under root ``pg_ctl`` runs as the ``postgres`` user the package
creates, on a data folder that user owns. One server serves the whole session; every test gets a
fresh database of its own (``create_database``), dropped when the session stops the server.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import psycopg
from port_for import get_port
from pytest_postgresql.executors import PostgreSQLExecutor

SERVER_USER = "postgres"
#: Durability settings a throwaway server can skip (a killed client still loses its open transaction).
FAST_OPTIONS = "-c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=200"


def wait_for_sessions(url: str, timeout: float) -> None:
    """Return once a session can be opened at ``url`` (a libpq URL); its error after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=5).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def find_pg_ctl() -> str:
    """``pg_ctl`` on PATH, else the newest one of Debian's ``/usr/lib/postgresql/<version>/bin``."""
    found = shutil.which("pg_ctl")
    if found:
        return found
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3].split(".")[0])
    )
    if not candidates:
        raise RuntimeError(
            "no PostgreSQL server binaries (pg_ctl): install Debian's postgresql package "
            "(`make test` does it as root: apt-get install postgresql)"
        )
    return candidates[-1]


def _as_server_user(pg_ctl: str, folder: Path) -> str:
    """A ``pg_ctl`` that runs as the ``postgres`` user (for root, whom PostgreSQL refuses)."""
    wrapper = folder / "pg_ctl"
    wrapper.write_text(f'#!/bin/sh\nexec runuser -u {SERVER_USER} -- "{pg_ctl}" "$@"\n', encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(wrapper)


class PostgresServer:
    """One PostgreSQL server in a temporary folder: ``start()``, ``create_database()``, ``stop()``."""

    def __init__(self, *, fast: bool = True) -> None:
        """``fast``: skip fsync (tests); else PostgreSQL's durable defaults (benchmarks)."""
        self.folder = Path(tempfile.mkdtemp(prefix="graphwalk-pg-"))
        pg_ctl = find_pg_ctl()
        if os.geteuid() == 0:
            shutil.chown(self.folder, SERVER_USER)
            pg_ctl = _as_server_user(pg_ctl, self.folder)
        self.port = get_port(None)
        self.executor = PostgreSQLExecutor(
            executable=pg_ctl,
            host="127.0.0.1",
            port=self.port,
            datadir=str(self.folder / "data"),
            unixsocketdir=str(self.folder),
            logfile=str(self.folder / "server.log"),
            startparams="-w",
            dbname="graphwalk",
            user=SERVER_USER,
            postgres_options=FAST_OPTIONS if fast else "-c max_connections=200",
        )
        self._databases = 0

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """Start the server and wait until it accepts sessions (an open port is not enough)."""
        self.executor.start()
        wait_for_sessions(self.url(driver="postgresql"), timeout)
        return self

    def stop(self) -> None:
        try:
            self.executor.stop()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        """The SQLAlchemy URL of ``database`` (``driver`` ``postgresql`` for a libpq URL)."""
        return f"{driver}://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "graph") -> str:
        """A new empty database; its name."""
        self._databases += 1
        name = f"{prefix}_{self._databases}"
        with psycopg.connect(self.url(driver="postgresql"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name
