"""SQLSource streams: rows are fetched in batches, referenced rows looked up per batch, counts by COUNT(*)."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from graphwalk_core.ingest.sources import SQLSource
from graphwalk_core.ingest.sources.sql import STREAM_BATCH

PEOPLE = 5000
#: Rows handed back by data queries on films/people, keyed by (table, count | lookup | scan).
_FETCHED: Counter[tuple[str, str]] = Counter()


class _CountingCursor(sqlite3.Cursor):
    """Counts the rows each data query hands back into ``_FETCHED``."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        match = re.search(r"\bFROM (films|people)\b", sql)
        kind = "count" if "count(*)" in sql else "lookup" if "WHERE" in sql else "scan"
        self._key = (match.group(1), kind) if match else None
        return super().execute(sql, *args)

    def _count(self, rows: list[Any]) -> list[Any]:
        if self._key is not None:
            _FETCHED[self._key] += len(rows)
        return rows

    def fetchone(self) -> Any:
        row = super().fetchone()
        return row if row is None else self._count([row])[0]

    def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._count(super().fetchmany() if size is None else super().fetchmany(size))

    def fetchall(self) -> list[Any]:
        return self._count(super().fetchall())


class _CountingConnection(sqlite3.Connection):
    def cursor(self, factory: Any = _CountingCursor) -> Any:
        return super().cursor(factory)


def _counting_connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
    cparams["factory"] = _CountingConnection


@pytest.fixture
def fetched() -> Iterator[Counter[tuple[str, str]]]:
    """Rows fetched from films/people by every SQLite connection SQLAlchemy opens during the test."""
    _FETCHED.clear()
    event.listen(sa.Engine, "do_connect", _counting_connect)
    try:
        yield _FETCHED
    finally:
        event.remove(sa.Engine, "do_connect", _counting_connect)


@pytest.fixture
def big_db(tmp_path: Path) -> Path:
    """5,000 people and 2 films directed by people 7 and 4321."""
    path = tmp_path / "big.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany(
            "INSERT INTO people VALUES (?, ?)", [(i, f"Person {i}") for i in range(1, PEOPLE + 1)]
        )
        conn.execute(
            "CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT,"
            " director_id INTEGER REFERENCES people(id))"
        )
        conn.executemany("INSERT INTO films VALUES (?, ?, ?)", [(1, "Alpha", 7), (2, "Beta", 4321)])
    conn.close()
    return path


def test_rows_arrive_batch_by_batch(big_db: Path, fetched: Counter[tuple[str, str]]) -> None:
    docs = SQLSource(f"sqlite:///{big_db}", source_id="big").iter_documents()
    first = next(docs)
    # the films batch plus a look-up of just the two directors: no people table scan yet
    assert first.id == "films#1"
    assert [e.name for e in first.extraction.entities] == ["Alpha", "Person 7"]
    assert dict(fetched) == {("films", "scan"): 2, ("people", "lookup"): 2}
    assert [next(docs).id, next(docs).id] == ["films#2", "people#1"]
    # the first person arrives after one batch of the 5,000 rows was fetched
    assert STREAM_BATCH == 1000
    assert fetched[("people", "scan")] == STREAM_BATCH
    rest = list(docs)
    assert (len(rest), rest[-1].id) == (PEOPLE - 1, f"people#{PEOPLE}")
    assert dict(fetched) == {("films", "scan"): 2, ("people", "lookup"): 2, ("people", "scan"): PEOPLE}


async def test_profile_counts_rows_without_fetching_them(
    big_db: Path, fetched: Counter[tuple[str, str]]
) -> None:
    profile = await SQLSource(f"sqlite:///{big_db}", source_id="big").profile()
    assert [(t.name, t.rows) for t in profile.tables] == [("films", 2), ("people", PEOPLE)]
    assert (profile.rows, profile.documents) == (PEOPLE + 2, PEOPLE + 2)
    assert dict(fetched) == {("films", "count"): 1, ("people", "count"): 1}
