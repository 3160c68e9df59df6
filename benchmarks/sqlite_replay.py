"""SQLite's own share of an apply: the statements a SQL graph store sent, replayed without graphwalk.

:class:`StatementLog` records, while it is open, every statement (with its parameters), commit and rollback
that SQLAlchemy hands a SQLite database, per connection. :func:`replay_seconds` runs them again, in order
and on as many connections, against an empty graph database with the store's settings, fetching every
result, and closes it (its last checkpoint): the seconds SQLite itself needs for the work the store asked
of it. An apply whose rows/s falls as the graph grows, while this replay's falls as much, spends the
difference inside the database, not in graphwalk.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, event

from graphwalk_core.stores.sql import SQLGraphStore, schema


@dataclass
class StatementLog:
    """The statements, commits and rollbacks sent to the SQLite database ``url`` while the log is open."""

    url: str
    #: (connection number, statement or "commit"/"rollback", parameters, executemany)
    entries: list[tuple[int, str, Any, bool]] = field(default_factory=list)
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
    store = SQLGraphStore(url)
    engine = store._engine  # the store's connection settings (WAL, page cache, checkpoints)
    connections = [engine.raw_connection() for _ in range(log.connections)]
    cursors = [c.cursor() for c in connections]
    started = time.perf_counter()
    for number, statement, parameters, many in log.entries:
        if statement == "commit":
            connections[number].commit()
        elif statement == "rollback":
            connections[number].rollback()
        else:
            cursor = cursors[number]
            if many:
                cursor.executemany(statement, parameters)
            else:
                cursor.execute(statement, parameters)
            if cursor.description is not None:
                cursor.fetchall()
    for cursor, connection in zip(cursors, connections, strict=True):
        cursor.close()
        connection.close()
    await store.close()  # the last connection: its final checkpoint
    return time.perf_counter() - started


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
