"""One SQLSource pass reads one snapshot of its database: a writer committing mid-pass changes nothing
the pass reads (SQLite: one read transaction; PostgreSQL: REPEATABLE READ, READ ONLY)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from graphwalk_core.ingest.sources import SQLSource

SCHEMA = [
    "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)",
    "CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT)",
    "CREATE TABLE film_cast (film_id INTEGER REFERENCES films(id), person_id INTEGER REFERENCES people(id),"
    " PRIMARY KEY (film_id, person_id))",
    "INSERT INTO people VALUES (1, 'Ann Lee'), (2, 'Bob Ray')",
    "INSERT INTO films VALUES (1, 'Heat')",
    "INSERT INTO film_cast VALUES (1, 1), (1, 2)",
]
#: One commit: Bob Ray leaves the cast and the database (no state of it has the one without the other).
WRITE = ["DELETE FROM film_cast WHERE person_id = 2", "DELETE FROM people WHERE id = 2"]
BEFORE = ["film_cast#1,1", "film_cast#1,2", "films#1", "people#1", "people#2"]
AFTER = ["film_cast#1,1", "films#1", "people#1"]


def _write(url: str, statements: list[str]) -> bool:
    """Run ``statements`` in one transaction; False when SQLite's lock refused the commit at once."""
    engine = sa.create_engine(url, connect_args={"timeout": 0} if url.startswith("sqlite") else {})
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    except sa.exc.OperationalError as exc:
        assert "database is locked" in str(exc)
        return False
    finally:
        engine.dispose()
    return True


@pytest.mark.parametrize("database", ["sqlite-wal", "sqlite-journal", "postgresql"])
def test_a_commit_during_a_pass_changes_nothing_the_pass_reads(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Tables, and the rows a table's foreign keys point to, were read by separate queries (SQLite: each in
    a moment of its own; PostgreSQL: READ COMMITTED), so a commit between them gave a pass of no state
    the database was ever in: the cast row read before a person was removed, the people read after
    (the edge to Bob Ray's node kept, his row retracted). A pass now reads the state it began in; in
    SQLite's rollback-journal mode the writer waits for it (it cannot commit while the pass reads)."""
    if database == "postgresql":
        url = request.getfixturevalue("postgres_url")
    else:
        url = f"sqlite:///{tmp_path / 'films.sqlite'}"
    _write(url, [*(["PRAGMA journal_mode=WAL"] if database == "sqlite-wal" else []), *SCHEMA])
    source = SQLSource(url, source_id="db")
    before = source.read_documents()
    assert [d.id for d in before] == BEFORE
    docs = source.iter_documents()
    read = [next(docs)]  # film_cast#1,1: the pass has begun
    committed = _write(url, WRITE)
    read += list(docs)
    assert (committed, [d.id for d in read]) == (database != "sqlite-journal", BEFORE)
    assert read == before
    assert committed or _write(url, WRITE)  # once the pass is over, the writer commits
    assert [d.id for d in source.read_documents()] == AFTER


def test_a_table_postgresql_refuses_is_a_skip_and_the_pass_keeps_its_snapshot(postgres_url: str) -> None:
    """An error PostgreSQL raises aborts the transaction: the pass rolls back to the table's savepoint, so
    the tables after it are read, in the snapshot the pass began in."""
    _write(postgres_url, [*SCHEMA, "CREATE TABLE ledger_x (id INTEGER PRIMARY KEY, note TEXT)"])
    role = "reader_" + postgres_url.rsplit("/", 1)[1]
    _write(
        postgres_url,
        [f"CREATE ROLE {role} LOGIN", f"GRANT SELECT ON films, film_cast, people TO {role}"],
    )
    source = SQLSource(postgres_url.replace("//postgres@", f"//{role}@"), source_id="db")
    docs = source.iter_documents()
    read = [next(docs)]
    assert _write(postgres_url, WRITE)
    read += list(docs)
    assert [d.id for d in read] == BEFORE
    assert [s.describe() for s in source.skipped] == [
        "ledger_x: cannot read a row among its first 1,000: permission denied for table ledger_x"
    ]
