"""The DuckDB side of the warehouse: one view per Parquet table, and read-only queries.

Every connection is sandboxed to the warehouse folder: DuckDB's external access is disabled except
for that folder (``allowed_directories``) and the configuration is locked, so no query can read or
write another file (``read_csv('/etc/hostname')``, ``COPY ... TO '/tmp/x'``, ``ATTACH``, ``INSTALL``).
``query`` also runs only ``SELECT``-like statements (``SELECT``, ``WITH``, ``DESCRIBE``, ``SHOW``,
``SUMMARIZE``, and ``EXPLAIN`` of those), so it writes nothing inside the folder either.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from graphwalk_core.errors import BackendError, InputError
from graphwalk_core.warehouse.layout import DB_NAME, cut_short, table_names, view_root

#: Write the oldest storage format current DuckDB releases read, so the stand-alone ``duckdb`` CLI
#: (the duckdb-cli package, which can lag the Python package) opens the warehouse too.
_STORAGE_CONFIG = {"storage_compatibility_version": "v1.0.0"}
#: Seconds between two attempts to open a database another process holds locked.
_LOCK_WAIT_S = 0.1
#: Seconds ``connect`` waits for another process's lock by default (a refresh, a query).
LOCK_TIMEOUT_S = 5.0
#: The process holding a database's lock, in DuckDB's error.
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
#: Times ``query`` runs a statement that failed while another process replaced a file it read.
QUERY_ATTEMPTS = 5
#: Rows fetched from DuckDB at once when a result is read through.
FETCH_ROWS = 10_000


class QueryResult(NamedTuple):
    columns: list[str]
    rows: list[tuple[Any, ...]]


#: Statement types ``query`` runs (DESCRIBE, SHOW and SUMMARIZE parse as SELECT; EXPLAIN is checked apart).
_READ_STATEMENTS = frozenset({duckdb.StatementType.SELECT})


def _sandbox(con: duckdb.DuckDBPyConnection, folder: Path) -> duckdb.DuckDBPyConnection:
    """Limit ``con`` to files under ``folder`` and lock its configuration (no way back)."""
    allowed = folder.resolve().as_posix().rstrip("/") + "/"
    try:
        locked, external, dirs, paths = con.execute(
            "SELECT current_setting('lock_configuration'), current_setting('enable_external_access'), "
            "current_setting('allowed_directories'), current_setting('allowed_paths')"
        ).fetchone() or (False, True, [], [])
        if locked:  # another connection of this process already sandboxed the shared database
            # DuckDB adds its own files to the lists (warehouse.duckdb.tmp/, warehouse.duckdb.wal, ...)
            inside = all(str(p).startswith(allowed) for p in [*dirs, *paths])
            if external or allowed not in list(dirs) or not inside:
                raise BackendError(f"{folder}: DuckDB database already open with other file access")
            return con
        con.execute("SET allowed_directories = $dirs", {"dirs": [allowed]})
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _create(db: Path) -> None:
    """Make the database ``db`` whole unless it exists. DuckDB creates a new file in place, then locks it
    and writes its header: a process opening it meanwhile found it empty ("not a valid DuckDB database
    file"), or locked it first and so left it empty for good. The file is made beside it under a hidden
    name and linked into place (a link never replaces a file another process made meanwhile); where that
    fails (a file system without links), the open that follows creates it in place or says why not."""
    tmp = db.parent / f".{db.name}.{secrets.token_hex(6)}.tmp"
    try:
        with suppress(duckdb.Error, OSError):
            duckdb.connect(str(tmp), config=_STORAGE_CONFIG).close()
            os.link(tmp, db)
    finally:
        tmp.unlink(missing_ok=True)


def connect(db: Path, *, read_only: bool, timeout_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the database sandboxed to its folder, waiting up to ``timeout_s`` (None: :data:`LOCK_TIMEOUT_S`)
    while another process holds a lock on it (a writer excludes every session; a read-only one, writers).
    A writer makes the database when it does not exist."""
    if "\\" in db.as_posix():
        raise InputError(
            f"warehouse folder {db.parent} has a backslash in its path, which DuckDB reads as a folder "
            "separator (it would open another folder's warehouse.duckdb); move the warehouse to a path "
            "without one"
        )
    timeout_s = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    if not read_only and not db.exists():
        _create(db)
    attempts = max(1, round(timeout_s / _LOCK_WAIT_S))
    for attempt in range(attempts):
        try:
            config = {} if read_only else _STORAGE_CONFIG
            con = duckdb.connect(str(db), read_only=read_only, config=config)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            # ConnectionException: this process has it open in the other mode (read-only / read-write)
            holder = "this process" if isinstance(exc, duckdb.ConnectionException) else "another process"
            if holder == "another process" and "lock" not in str(exc).lower():
                reason = str(exc).splitlines()[0]
                raise InputError(
                    f"cannot open the warehouse database {db} ({reason}): it is truncated or not a DuckDB "
                    "file; it holds only views over the Parquet tables, so removing it is safe (the next "
                    "materialization rebuilds it)"
                ) from None
            if attempt == attempts - 1:
                found = _HOLDER.search(str(exc))
                by = f" (PID {found['pid']}, {found['program']})" if found else ""
                raise BackendError(
                    f"{db} stayed locked by {holder}{by} for {timeout_s:.0f}s "
                    "(close other DuckDB sessions on it)"
                ) from exc
            time.sleep(_LOCK_WAIT_S)
            continue
        return _sandbox(con, db.parent)
    raise AssertionError("unreachable")


def _check_read_only(sql: str) -> None:
    """Refuse statements other than reads, naming the first one found; an EXPLAIN must explain a read
    (EXPLAIN ANALYZE runs the statement: an explained COPY would write inside the warehouse)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError(f"query failed: {exc}") from exc
    if not statements:
        raise InputError("query refused: it holds no SQL statement (write one, e.g. 'select * from nodes')")
    for statement in statements:
        kind = _type(statement)
        if kind is duckdb.StatementType.EXPLAIN:
            explained = _explained(statement.query)
            if explained is None:
                raise InputError(
                    "query refused: cannot tell which statement this EXPLAIN runs; write "
                    "EXPLAIN [ANALYZE] SELECT ..."
                )
            if explained is not duckdb.StatementType.SELECT:
                raise InputError(
                    f"query refused: EXPLAIN of {explained.name} statements is not allowed (EXPLAIN ANALYZE "
                    "runs it); the warehouse console explains only SELECT-like statements"
                )
        elif kind is duckdb.StatementType.MULTI:  # what DuckDB makes of a PIVOT without IN (...)
            raise InputError(
                "query refused: a PIVOT must list the values it turns into columns here (PIVOT t ON col IN "
                "('a', 'b') USING ...): without them DuckDB first creates a type, a write"
            )
        elif kind not in _READ_STATEMENTS:
            name = kind.name if kind is not None else _words(statement.query)[0][1].upper()
            raise InputError(
                f"query refused: {name} statements are not allowed; the warehouse console runs "
                "read-only queries (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)"
            )


def _type(statement: duckdb.Statement) -> duckdb.StatementType | None:
    """The statement's type; None for one the Python package's enum lacks (``UPDATE EXTENSIONS`` raised a
    ValueError, a traceback for the console)."""
    try:
        return statement.type
    except ValueError:
        return None


def _words(sql: str) -> list[tuple[int, str]]:
    """The tokens of ``sql`` that are not comments, each with its offset (DuckDB's tokenizer)."""
    tokens = duckdb.tokenize(sql)
    ends = [pos for pos, _ in tokens[1:]] + [len(sql)]
    return [
        (pos, sql[pos:end].strip())
        for (pos, kind), end in zip(tokens, ends, strict=True)
        if kind is not duckdb.token_type.comment
    ]


def _explained(sql: str) -> duckdb.StatementType | None:
    """The type of the statement ``EXPLAIN [ANALYZE | (options)] <statement>`` wraps, found with DuckDB's
    own tokenizer and parser; None when no single statement follows the EXPLAIN prefix."""
    words = _words(sql)
    if len(words) < 2 or words[0][1].upper() != "EXPLAIN":
        return None
    starts = [1]
    if words[1][1].upper() in {"ANALYZE", "ANALYSE"}:
        starts = [2]
    elif words[1][1].startswith("("):  # a parenthesized SELECT, or options: (ANALYZE), (FORMAT json)
        depth = 0
        for i, (_, word) in enumerate(words[1:], start=1):
            depth += word.count("(") - word.count(")")
            if depth <= 0:
                starts.append(i + 1)
                break
    for start in starts:
        if start >= len(words):
            continue
        try:
            inner = duckdb.extract_statements(sql[words[start][0] :])
        except duckdb.Error:
            continue
        if len(inner) == 1:
            return _type(inner[0])
    return None


def unreadable_parquet(root: Path) -> str | None:
    """The first warehouse Parquet file that does not read, with the reason (DuckDB's decoding errors
    name no file); None when all read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in sorted(root.rglob("*.parquet")):
        try:
            pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            return f"{path}: {str(exc).strip()}"
    return None


class Rows:
    """An open read-only query: its ``columns``, and its rows fetched a batch at a time (DuckDB streams
    them, so a result larger than memory can be read through)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, root: Path) -> None:
        self._cursor, self._root = cursor, root
        self.columns: list[str] = [d[0] for d in cursor.description or []]
        #: each column's DuckDB type (its ``id``: ``integer``, ``varchar``, ``list``, ``struct``, ...)
        self.types: list[str] = [str(d[1].id) for d in cursor.description or []]

    def batches(self, size: int = FETCH_ROWS) -> Iterator[list[tuple[Any, ...]]]:
        """The rows not fetched yet, at most ``size`` at a time."""
        if not self.columns:
            return
        while True:
            with _query_errors(self._root):
                batch = self._cursor.fetchmany(size)
            if not batch:
                return
            yield batch


def view_sql(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Each view of the database (not DuckDB's own) -> the SQL that defines it."""
    return dict(con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall())


def _moved_from(con: duckdb.DuckDBPyConnection, root: Path) -> str | None:
    """The folder graphwalk's views read when it is not ``root`` (the warehouse was moved, renamed or
    mounted elsewhere since they were made), else None."""
    for name, sql in view_sql(con).items():
        read = view_root(name, sql)
        if read is not None and read != root.resolve().as_posix():
            return read
    return None


def _repoint(root: Path) -> str:
    """The command that makes the views of the warehouse at ``root`` again."""
    return f"python -c \"from graphwalk_core.warehouse import refresh_views; refresh_views('{root}')\""


@contextmanager
def _query_errors(root: Path, con: duckdb.DuckDBPyConnection | None = None) -> Iterator[None]:
    """DuckDB's errors while running or reading a query, as ``InputError``s saying what went wrong (with
    ``con``, a refusal caused by views of a moved warehouse says so)."""
    try:
        yield
    except duckdb.PermissionException as exc:
        if con is not None and (moved_from := _moved_from(con, root)) is not None:
            raise InputError(
                f"query failed: the views of {root / DB_NAME} read the tables under {moved_from}, where the "
                f"warehouse was when they were made (moved, renamed or mounted elsewhere since?); any write "
                f"re-points them, or: {_repoint(root)}"
            ) from None
        raise InputError(
            f"query refused: it reaches outside the warehouse folder {root} "
            f"(the console reads only the warehouse's own files): {exc}"
        ) from exc
    except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException) as exc:
        # the query's text or names: no file to look for (reading each whole took minutes on a big one)
        raise InputError(f"query failed: {str(exc).strip()}") from None
    except duckdb.Error as exc:
        bad = unreadable_parquet(root)
        where = f" (unreadable Parquet file {bad})" if bad else ""
        raise InputError(f"query failed: {str(exc).strip()}{where}") from None


@contextmanager
def open_query(root: Path, sql: str) -> Iterator[Rows]:
    """Run the read-only ``sql`` against ``root/warehouse.duckdb``, seeing only files under ``root``; its
    rows are read while the context is open."""
    db = Path(root).expanduser() / DB_NAME
    if not db.exists():
        if tables := table_names(db.parent):
            raise InputError(
                f"no warehouse database at {db}, though the folder holds the tables {', '.join(tables)}: "
                f"make their views with any write, or: {_repoint(db.parent.resolve())}"
            )
        raise InputError(f"no warehouse database at {db}: materialize something first (graphwalk demo)")
    _check_read_only(sql)
    con = connect(db, read_only=True)  # no tables move in while it is open (warehouse.swap)
    try:
        if killed := cut_short(db.parent):
            raise InputError(
                f"the warehouse tables under {db.parent} are part old, part new: a publish was killed while "
                f"moving its tables in (they wait in {killed[0]}); the next publish finishes it "
                "(materialize knowledge_graph)"
            )
        with _query_errors(db.parent, con):
            cursor = con.execute(sql)
        yield Rows(cursor, db.parent)
    finally:
        con.close()


def _replaced_since(root: Path, started: float) -> bool:
    """Whether a Parquet file under ``root`` was written (or moved in) since ``started`` (``time.time()``;
    a second's margin, as file times come from a coarser clock)."""
    for path in root.rglob("*.parquet"):
        with suppress(OSError):
            if path.stat().st_ctime >= started - 1.0:
                return True
    return False


def query(root: Path, sql: str) -> QueryResult:
    """Every row of the read-only ``sql`` (see :func:`open_query`; for results that fit in memory). DuckDB
    opens each file of a query more than once (its schema, then its rows): one that fails while another
    process replaced a table file (it read part of the old file, part of the new) runs again; one refused
    or unparsable (its text fails, not a file) is refused at once."""
    _check_read_only(sql)
    for attempt in range(QUERY_ATTEMPTS):
        started = time.time()
        try:
            with open_query(root, sql) as rows:
                return QueryResult(rows.columns, [row for batch in rows.batches() for row in batch])
        except InputError:
            if attempt == QUERY_ATTEMPTS - 1 or not _replaced_since(Path(root), started):
                raise
    raise AssertionError("unreachable")
