"""How the SQL graph store talks to its database: URLs (redacted for messages), the engine with its
per-dialect connection settings (SQLite's pragmas and ``BEGIN IMMEDIATE``; PostgreSQL's writer lock), and
the set-based write statements (``INSERT … ON CONFLICT`` and PostgreSQL's one-statement arrays).
See :mod:`~graphwalk_core.stores.sql` for what they guarantee."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, create_engine, event, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.files import create_shared, switch_to_wal

#: Seconds a SQLite writer waits for another process's write transaction before failing.
SQLITE_BUSY_TIMEOUT_S = 600
#: Seconds between a waiting writer's tries at the graph's writer lock: the first pause, the longest.
WRITER_PAUSES_S = (0.005, 0.1)
#: SQLite's page cache per connection, KiB (its default is 2,000): a graph's indexes outgrow the default at
#: a few thousand documents, and every insert then re-reads B-tree pages from the operating system. 16 MiB
#: keeps their inner pages; 64 MiB applied 6,119 passages 3% faster for 55 MB more resident memory.
SQLITE_CACHE_KIB = 16_384
#: WAL pages after which a SQLite commit copies the log into the database file (its default is 1,000): a
#: window's commit alone logs more, so each commit would copy (and sync) every page it wrote, where a
#: longer log copies a page rewritten by several windows (a hub node, an index's inner pages) once.
SQLITE_CHECKPOINT_PAGES = 16_384
#: The PostgreSQL advisory lock key of the writers of the graph in schema ``public``; a graph in another
#: schema (a ``search_path`` in the URL's ``options``) locks the hash of its schema's name seeded with it.
WRITER_LOCK = 0x67726170685F7772  # "graph_wr"
#: The advisory lock key of the graph in the session's schema (the first of its search path that exists).
_WRITER_KEY = (
    f"CASE current_schema() WHEN 'public' THEN {WRITER_LOCK} "
    f"ELSE hashtextextended(current_schema(), {WRITER_LOCK}) END"
)
#: Makes the transaction commit asynchronously unless the session's ``synchronous_commit`` was chosen for it
#: (the URL's options, PGOPTIONS, the role's or the database's setting). Set per transaction, never per
#: session: PgBouncer in transaction mode refuses startup options and runs each transaction on any server
#: session.
_ASYNC_COMMIT = (
    "(SELECT set_config(name, 'off', true) FROM pg_settings "
    "WHERE name = 'synchronous_commit' AND source IN ('default', 'configuration file', 'command line'))"
)
#: Begins a PostgreSQL write transaction: takes the writer lock of the graph, waiting for it, and
#: :data:`_ASYNC_COMMIT`.
_WRITER_BEGIN = f"SELECT pg_advisory_xact_lock({_WRITER_KEY}), {_ASYNC_COMMIT}"
#: Begins a PostgreSQL write transaction as :data:`_WRITER_BEGIN` does, if the lock is free (its first
#: column: whether it was).
_WRITER_TRY = f"SELECT pg_try_advisory_xact_lock({_WRITER_KEY}), {_ASYNC_COMMIT}"
#: The session's setting that ends a wait for a lock (the shorter of ``lock_timeout`` and
#: ``statement_timeout``, if set), and its value in milliseconds.
_LOCK_WAIT_BOUND = (
    "SELECT name, setting::bigint FROM pg_settings WHERE name IN ('lock_timeout', 'statement_timeout') "
    "AND setting <> '0' ORDER BY setting::bigint, name LIMIT 1"
)
#: Execution option marking write transactions (see :mod:`~graphwalk_core.stores.sql`).
WRITER_OPTION = "graphwalk_writer"
#: Execution option making a write transaction's writer lock (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's
#: advisory lock) one try, failing at once while another connection writes (see :func:`writer_busy`), not
#: after a wait spent in the driver, where neither Ctrl-C nor an asyncio cancellation is heard. Its value
#: :data:`LAST_TRY` makes the try the one after the wait's bound: it fails as the driver's wait did.
TRY_WRITE_OPTION = "graphwalk_try_write"
LAST_TRY = "last"


class WriterBusy(Exception):
    """A PostgreSQL write transaction's try (:data:`TRY_WRITE_OPTION`) found another session holding the
    graph's writer lock; ``wait_s``: how long the session would have waited for it (inf: as long as held)."""

    def __init__(self, wait_s: float) -> None:
        super().__init__("another session holds the graph's writer lock")
        self.wait_s = wait_s


#: What SQLAlchemy raises for a URL it cannot parse (a port that is not a number: a ValueError).
_BAD_URL = (ArgumentError, ValueError)


def parse_url(url: str | URL, what: str, shown: str | None = None) -> URL:
    """``url`` parsed; else an InputError naming ``what`` and the URL, its password hidden (``shown``: the
    URL as the error shows it instead, e.g. ``***`` for a value that may be a password alone)."""
    try:
        parsed = make_url(url)
    except _BAD_URL:  # the message may repeat the password
        raise InputError(
            f"invalid {what} URL {shown or redact_url(url)}: not a SQLAlchemy URL "
            "(dialect+driver://user:password@host:port/database, the port a number)"
        ) from None
    if "@" in (parsed.host or ""):  # the host would be the password's tail, in the driver's errors too
        raise InputError(
            f"invalid {what} URL {shown or redact_url(url)}: its password holds an '@': write it as %40"
        )
    return parsed


#: ``://user:password@`` in a URL SQLAlchemy cannot parse (the password up to its first ``@``).
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
#: ``scheme://user:password@host...``, the password up to the last ``@`` before a host that holds none.
_USER_PASSWORD = re.compile(r"^(?P<head>[^:/]+://[^:/@]*:).*@(?P<host>[^@/?]*(?:[/?].*)?)$", re.DOTALL)


#: A query parameter holding a secret (libpq's ``password`` and ``sslpassword``, MySQL's ``passwd``, a
#: ``token``): the driver connects with it as with the URL's password, so its value is hidden too.
_SECRET_PARAM = re.compile(r"([?&][^=&]*(?:pass(?!file)|pwd|secret|token)[^=&]*=)[^&]*", re.IGNORECASE)


def redact_url(url: str | URL) -> str:
    """``url`` with any password replaced by ``***`` (for messages; an unparsable one too), and the value
    of any query parameter holding one. SQLAlchemy ends a password at its first ``@``, so one holding a
    raw ``@`` gives a host holding the password's tail: that URL hides everything up to the host's last
    ``@``."""
    return _SECRET_PARAM.sub(r"\1***", _hide_password(url))


def redact_location(location: str) -> str:
    """A graph location for a message: a URL without its password (see :func:`redact_url`), a path as
    given."""
    return redact_url(location) if "://" in location else location


def _hide_password(url: str | URL) -> str:
    """``url`` with its user's password replaced by ``***`` (see :func:`redact_url`)."""
    try:
        parsed: URL | None = make_url(url)
    except _BAD_URL:
        parsed = None
    if parsed is not None and "@" not in (parsed.host or ""):
        return parsed.render_as_string(hide_password=True)
    # a URL object's str() hides what it read as the password: the rest, up to the host, is hidden here
    text = str(parsed if parsed is not None else url)
    found = _USER_PASSWORD.match(text)
    if found is not None:
        return f"{found['head']}***@{found['host']}"
    return _PASSWORD.sub(r"\1***@", text)


def error_reason(exc: BaseException) -> str:
    """The first line of what the database said: the driver's error inside a SQLAlchemy one, else
    SQLAlchemy's own words (a pool timeout, a pending rollback); the type's name when there is no text."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


def no_dialect(url: str) -> str:
    """Why SQLAlchemy found no dialect for ``url`` (e.g. libpq's ``postgres://``), and what it takes."""
    scheme = url.split("://", 1)[0]
    return (
        f"SQLAlchemy has no dialect {scheme!r} (PostgreSQL: postgresql+psycopg://USER:PASSWORD@HOST:5432/DB, "
        "SQLite: sqlite:///PATH)"
    )


def has_password(url: str) -> bool:
    """Whether ``url`` carries a password, as its user's or in a query parameter (an unparsable URL:
    whether it looks like ``user:pw@``)."""
    if _SECRET_PARAM.search(url) is not None:
        return True
    try:
        return make_url(url).password is not None
    except _BAD_URL:
        return _PASSWORD.search(url) is not None


def _sqlite_transactions(engine: Engine) -> None:
    """SQLAlchemy, not pysqlite, emits BEGIN (so SAVEPOINTs behave): IMMEDIATE for writers; WAL mode."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        switch_to_wal(cursor, SQLITE_BUSY_TIMEOUT_S)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_CHECKPOINT_PAGES}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if not options.get(TRY_WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get(WRITER_OPTION) else "BEGIN")
            return
        conn.exec_driver_sql("PRAGMA busy_timeout = 0")
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        finally:
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")


def writer_busy(exc: BaseException) -> float | None:
    """When ``exc`` answers a write transaction's try (:data:`TRY_WRITE_OPTION`) while another connection
    holds the writer lock: the seconds the database's own wait for it lasts (inf: as long as it is held);
    else None."""
    if isinstance(exc, WriterBusy):
        return exc.wait_s
    cause = getattr(exc, "orig", None)
    if isinstance(cause, sqlite3.OperationalError) and cause.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
        return SQLITE_BUSY_TIMEOUT_S
    return None


def _postgresql_writer_lock(engine: Engine) -> None:
    """Write transactions start by taking the graph's advisory lock (released at commit or rollback): one
    per schema, so the graphs of one database never wait for each other's writers (see
    :data:`_WRITER_BEGIN`). A try (:data:`TRY_WRITE_OPTION`) raises :class:`WriterBusy` while another
    session holds it; the last try waits for it with the setting bounding that wait at 1 ms, so that the
    server fails it with the error it gave when it waited (``canceling statement due to lock timeout``)."""

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if not options.get(WRITER_OPTION):
            return
        tried = options.get(TRY_WRITE_OPTION)
        if tried and tried != LAST_TRY:
            if not conn.exec_driver_sql(_WRITER_TRY).scalar():
                bound = conn.exec_driver_sql(_LOCK_WAIT_BOUND).first()
                raise WriterBusy(math.inf if bound is None else bound[1] / 1000)
            return
        bound = conn.exec_driver_sql(_LOCK_WAIT_BOUND).first() if tried else None
        if bound is not None:
            conn.exec_driver_sql(f"SET LOCAL {bound[0]} = 1")
        conn.exec_driver_sql(_WRITER_BEGIN)
        if bound is not None:
            conn.exec_driver_sql(f"SET LOCAL {bound[0]} = {bound[1]}")


#: SQLSTATEs of a prepared statement the session does not have, or has already: psycopg prepared it on
#: another server session (PgBouncer in transaction mode runs each transaction on any of them).
_LOST_PREPARED = frozenset({"26000", "42P05"})


def _lost_prepared_statements(engine: Engine, url: str) -> None:
    """A statement failing on a prepared statement another server session holds is a ConfigError saying
    to turn them off (returned, not raised: the store's own error handlers run too)."""

    @event.listens_for(engine, "handle_error")
    def _hint(context: Any) -> Exception | None:
        if getattr(context.original_exception, "sqlstate", None) not in _LOST_PREPARED:
            return None
        return ConfigError(
            f"the graph store {redact_url(url)} lost a prepared statement between transactions (PgBouncer "
            "in transaction mode?): add prepare_threshold=none to its URL"
        )


def driver_args(url: str | URL, what: str) -> dict[str, Any]:
    """Connection arguments the URL gives as text but the driver takes as values: psycopg's
    ``prepare_threshold``, a number or None (``none``: no prepared statements, for PgBouncer in
    transaction mode); else an InputError naming ``what`` and the URL."""
    parsed = make_url(url)
    given = parsed.query.get("prepare_threshold")
    if parsed.get_backend_name() != "postgresql" or parsed.get_driver_name() != "psycopg" or given is None:
        return {}
    text = str(given[-1] if isinstance(given, tuple) else given).strip()
    if text.lower() in ("none", ""):
        return {"prepare_threshold": None}
    if not text.isdigit():
        raise InputError(
            f"invalid {what} URL {redact_url(url)}: prepare_threshold must be a whole number or none "
            "(none: no prepared statements, as PgBouncer in transaction mode needs)"
        )
    return {"prepare_threshold": int(text)}


def _connect_args(url: str) -> dict[str, Any]:
    """The driver's connection arguments beside the URL's (they replace a URL parameter of the same name):
    SQLite's busy timeout, or :func:`driver_args`."""
    if make_url(url).get_backend_name() == "sqlite":
        return {"timeout": SQLITE_BUSY_TIMEOUT_S}
    return driver_args(url, "graph store")


def upsert_statement(engine: Engine, table: Table) -> Any | None:
    """``INSERT … ON CONFLICT (id) DO UPDATE`` for ``table`` on SQLite and PostgreSQL, else None."""
    dialects = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
    make = dialects.get(engine.dialect.name)
    if make is None:
        return None
    statement = make(table)
    primary = [c for c in table.c if c.primary_key]
    updated = {c.name: statement.excluded[c.name] for c in table.c if not c.primary_key}
    return statement.on_conflict_do_update(index_elements=primary, set_=updated)


def array_statement(action: str, table: Table, quote: Callable[[str], str]) -> tuple[str, tuple[str, ...]]:
    """PostgreSQL with psycopg: ``action`` ("upsert", "insert" or "delete" by primary key) on many rows of
    ``table`` as ONE statement over one text array per column (``unnest``, sent in binary: no escaping),
    and the columns in parameter order: a batch costs one round trip and one plan, not one per row."""
    columns = (
        tuple(c.name for c in table.c) if action != "delete" else tuple(c.name for c in table.primary_key)
    )
    names = ", ".join(quote(c) for c in columns)
    rows = f"SELECT * FROM unnest({', '.join(['%b::text[]'] * len(columns))})"
    if action == "delete":
        return f"DELETE FROM {quote(table.name)} WHERE ({names}) IN ({rows})", columns
    sql = f"INSERT INTO {quote(table.name)} ({names}) {rows}"
    if action == "upsert":
        keys = ", ".join(quote(c.name) for c in table.primary_key)
        updates = ", ".join(
            f"{quote(c.name)} = EXCLUDED.{quote(c.name)}" for c in table.c if not c.primary_key
        )
        sql += f" ON CONFLICT ({keys}) DO UPDATE SET {updates}"
    return sql, columns


def table_names(url: str) -> list[str]:
    """The tables of the database ``url`` names, read with none of this store's connection settings (the
    WAL mode they switch SQLite to stays in the file). A SQLite file that does not exist is an InputError,
    not a new empty database."""
    file = sqlite_file(url)
    if file is not None and not file.is_file():
        raise InputError(f"graph database not found: {file}")
    engine = create_engine(url, connect_args=_connect_args(url))
    try:
        with engine.connect() as conn:
            return inspect(conn).get_table_names()
    finally:
        engine.dispose()


def sqlite_file(url: str | URL) -> Path | None:
    """The file a SQLite URL names; None for another database, one in memory or a ``file:`` URI."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def sqlite_in_memory(url: URL) -> bool:
    """Whether a SQLite URL names a database in memory (``sqlite://``, ``:memory:``, a ``file:`` URI in
    memory mode), not a file."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite":
        return False
    if database in ("", ":memory:"):
        return True
    return database.startswith("file:") and (
        database.endswith(":memory:") or "mode=memory" in database or url.query.get("mode") == "memory"
    )


def missing_folder(url: str) -> Path | None:
    """The folder a SQLite file URL names that does not exist (SQLite then says only "unable to open
    database file"), else None."""
    file = sqlite_file(url)
    return None if file is None or file.parent.is_dir() else file.parent


def open_engine(url: str) -> Engine:
    """An engine for ``url`` with this store's connection settings: SQLite's busy timeout, WAL mode, page
    cache and ``BEGIN IMMEDIATE`` for writers; PostgreSQL writers' advisory lock and asynchronous commit.
    Write transactions are the ones run with the :data:`WRITER_OPTION` execution option. A server's
    connection is checked as it leaves the pool, and replaced when the server ended it meanwhile (a
    restart, an idle timeout)."""
    remote = make_url(url).get_backend_name() != "sqlite"
    engine = create_engine(url, connect_args=_connect_args(url), pool_pre_ping=remote)
    if engine.dialect.name == "sqlite":
        if (file := sqlite_file(engine.url)) is not None:
            create_shared(file)  # 0666 & ~umask, not SQLite's 0644 & ~umask
        _sqlite_transactions(engine)
    elif engine.dialect.name == "postgresql":
        _postgresql_writer_lock(engine)
        _lost_prepared_statements(engine, url)
    return engine
