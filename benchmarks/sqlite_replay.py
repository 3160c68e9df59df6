"""SQLite's own share of an apply: the statements a SQL graph store sent, replayed without graphwalk.

:class:`StatementLog` records, while it is open, every statement (with its parameters), commit and rollback
that SQLAlchemy hands a SQLite database, per connection. :func:`replay_seconds` runs them again, in order
and on as many connections, against an empty graph database with the store's settings, fetching every
result, and closes it (its last checkpoint): the seconds SQLite itself needs for the work the store asked
of it. An apply whose rows/s falls as the graph grows, while this replay's falls as much, spends the
difference inside the database, not in graphwalk.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, event

from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.stores.sql_tables import schema

#: A recorded statement: (connection number, statement or "commit"/"rollback", parameters, executemany).
Entry = tuple[int, str, Any, bool]


@dataclass
class StatementLog:
    """The statements, commits and rollbacks sent to the SQLite database ``url`` while the log is open."""

    url: str
    entries: list[Entry] = field(default_factory=list)
    _connections: dict[int, int] = field(default_factory=dict)

    def _number(self, conn: Any) -> int:
        return self._connections.setdefault(id(conn.connection.dbapi_connection), len(self._connections))

    def _statement(
        self, conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool
    ) -> None:
        if str(conn.engine.url) == self.url:
            self.entries.append((self._number(conn), statement, parameters, many))

    def _commit(self, conn: Any) -> None:
        if str(conn.engine.url) == self.url:
            self.entries.append((self._number(conn), "commit", None, False))

    def _rollback(self, conn: Any) -> None:
        if str(conn.engine.url) == self.url:
            self.entries.append((self._number(conn), "rollback", None, False))

    def __enter__(self) -> StatementLog:
        event.listen(Engine, "after_cursor_execute", self._statement)
        event.listen(Engine, "commit", self._commit)
        event.listen(Engine, "rollback", self._rollback)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(Engine, "after_cursor_execute", self._statement)
        event.remove(Engine, "commit", self._commit)
        event.remove(Engine, "rollback", self._rollback)

    @property
    def connections(self) -> int:
        return len(self._connections)


async def replay_seconds(log: StatementLog, url: str) -> float:
    """Wall seconds to replay ``log`` on the new SQLite graph database ``url`` (created empty, then opened
    with the store's own connection settings) and close it."""
    return (await replay_commits(log.entries, log.connections, url))[0]


async def replay_commits(
    entries: Iterable[Entry], connections: int, url: str
) -> tuple[float, list[tuple[int, float]]]:
    """Replay ``entries`` (a log's, or those of :func:`insertion_ordered` or :func:`copied`, made before the
    replay so that the timing leaves them out) as :func:`replay_seconds` does: its seconds, and (rows the
    statements carried, seconds) from one commit to the next."""
    store = SQLGraphStore(url)
    engine = store._engine  # the store's connection settings (WAL, page cache, checkpoints)
    opened = [engine.raw_connection() for _ in range(connections)]
    cursors = [c.cursor() for c in opened]
    commits: list[tuple[int, float]] = []
    rows = 0
    started = last = time.perf_counter()
    for number, statement, parameters, many in entries:
        if statement == "commit":
            opened[number].commit()
            now = time.perf_counter()
            commits.append((rows, now - last))
            rows, last = 0, now
        elif statement == "rollback":
            opened[number].rollback()
        else:
            cursor = cursors[number]
            if many:
                cursor.executemany(statement, parameters)
                rows += len(parameters)
            else:
                cursor.execute(statement, parameters)
                rows += 1
            if cursor.description is not None:
                cursor.fetchall()
    for cursor, connection in zip(cursors, opened, strict=True):
        cursor.close()
        connection.close()
    await store.close()  # the last connection: its final checkpoint
    return time.perf_counter() - started, commits


#: Windows averaged at each end of a replay.
ENDS = 4


def per_row(commits: list[tuple[int, float]]) -> tuple[float, str, str, str]:
    """Microseconds per statement row over the whole replay, over the first and the last :data:`ENDS`
    windows (commits that carried a window's rows, not the ledger's or a retraction's few), and the growth
    between those; "-" where there are fewer than twice :data:`ENDS` windows."""
    overall = 1e6 * sum(s for _, s in commits) / sum(r for r, _ in commits)
    windows = [c for c in commits if c[0] > 1000]
    if len(windows) < 2 * ENDS:
        return overall, "-", "-", "-"
    first, last = (
        1e6 * sum(s for _, s in w) / sum(r for r, _ in w) for w in (windows[:ENDS], windows[-ENDS:])
    )
    return overall, f"{first:.1f}", f"{last:.1f}", f"{last / first - 1:+.0%}"


_HASH_ID = re.compile(r"(?:n|nd|e)_[0-9a-f]{24}")
#: Statements whose first parameter is a name, not an element id: a ledger key, a name key, a source id.
_NAMED_FIRST = ("INSERT INTO metadata", "INSERT INTO node_names", "INSERT INTO provenance")


def _rekeyed(entries: Iterable[Entry], key: Callable[[str, int, Any], Any]) -> Iterator[Entry]:
    """``entries`` with every parameter replaced by ``key(statement, column, value)``."""
    for number, statement, parameters, many in entries:
        if many:
            parameters = [tuple(key(statement, i, v) for i, v in enumerate(row)) for row in parameters]
        elif isinstance(parameters, (tuple, list)):
            parameters = tuple(key(statement, i, v) for i, v in enumerate(parameters))
        yield number, statement, parameters, many


def insertion_ordered(entries: list[Entry]) -> list[Entry]:
    """``entries`` with every hash id among the parameters replaced by a key of the same length that
    sorts, among the ids of that length, in the order the ids first appear: the statements a store keyed
    by insertion order would send (element JSON keeps the hash ids; only keys move)."""
    keys: dict[str, str] = {}

    def key(_statement: str, _column: int, value: Any) -> Any:
        if isinstance(value, str) and _HASH_ID.fullmatch(value):
            found = keys.get(value)
            if found is None:
                found = keys[value] = "k" + str(len(keys)).zfill(len(value) - 1)
            return found
        return value

    return list(_rekeyed(entries, key))


def copied(entries: list[Entry], copy: int) -> list[Entry]:
    """``entries`` as another corpus of the same shape would send them (copy 0: as recorded): every hash id
    replaced by another hash id of its kind, and every ledger key, name key and source id marked with
    ``#copy``. Replayed after the copies before it, its rows land at random among theirs, as a larger
    corpus's would; unlike a larger corpus's, they never merge into theirs (element JSON keeps the
    recorded ids; only keys move)."""
    if copy == 0:
        return entries
    ids: dict[str, str] = {}

    def key(statement: str, column: int, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if _HASH_ID.fullmatch(value):
            found = ids.get(value)
            if found is None:
                digest = hashlib.blake2b(f"{copy}:{value}".encode(), digest_size=12).hexdigest()
                found = ids[value] = f"{value.split('_', 1)[0]}_{digest}"
            return found
        if column == 0 and statement.startswith(_NAMED_FIRST):
            return f"{value}#{copy}"
        return value

    return list(_rekeyed(entries, key))


def fingerprint(path: str) -> list[tuple[str, int, float]]:
    """Each graph table's name, rows and characters: a replay that did the recorded work matches its
    original's."""
    rows = []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        for table in schema.sorted_tables:
            width = " + ".join(f"length({c.name})" for c in table.c)
            count, chars = conn.execute(f"SELECT count(*), total({width}) FROM {table.name}").fetchone()
            rows.append((table.name, count, chars))
    return rows
