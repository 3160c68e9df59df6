"""Vectors kept across runs: a SQLite file of (model key, text) -> the model's float32 row, exactly.

A re-ingest routes new mentions against every stored node's name, so without it each run embeds the whole
graph's names again (7,000 names: ~12 s on 2 cores) to route a one-line edit. The file is a cache: any
error opening, reading or writing it is logged once and the process goes on computing vectors, and the
rows it returns are the bytes the model gave, so a warm cache changes no result (see
:meth:`~graphwalk_core.embeddings.fastembed.FastEmbedEmbedder.disk_key` for when a model may use it).
Processes share the file (WAL mode; a writer that finds it busy skips storing, it never waits long). A file
on a read-only file system (a cache baked into a container image, a volume mounted read-only) is read as
it is and never written: nothing can change it there, so SQLite opens it as immutable (a WAL-mode file
otherwise needs its ``-shm`` file, which cannot be created there).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np

from graphwalk_core.files import create_shared, switch_to_wal

log = logging.getLogger(__name__)

#: Texts looked up per statement (SQLite's parameter limit is far above).
LOOKUP_BATCH = 500
#: Seconds a write waits for another process's write before the rows are not stored.
BUSY_TIMEOUT_S = 2.0
#: Pages of 16 KiB hold ten 1.5 KB rows of a row-id table; a row this size in a key-only (``WITHOUT ROWID``)
#: table, or in 4 KiB pages, spills to an overflow page of its own (3x the file: 195 MB for 41,665 names).
PAGE_SIZE = 16_384
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (model, text)",
)


class NotACacheError(Exception):
    """The file is another SQLite database (a graph, say): the cache leaves it as it is."""


def _refuse_other_tables(conn: sqlite3.Connection) -> None:
    """Raise NotACacheError when the database holds tables besides ``vectors``, before anything is written
    to it (a cache path pointed at ``graph.sqlite`` would otherwise add a table and turn on WAL there)."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'vectors' ORDER BY name"
        )
    ]
    if names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise NotACacheError(
            f"it is another database, with tables {shown}; an embedding cache holds only 'vectors'"
        )


def on_read_only_file_system(path: Path) -> bool:
    """Whether the existing file ``path`` is on a file system mounted read-only (so nothing changes it)."""
    try:
        return path.is_file() and bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _open_immutable(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` that assumes no process changes the file (no locks, no -shm)."""
    uri = f"file:{quote(str(path.resolve()))}?immutable=1"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


class DiskVectorCache:
    """The vectors of a SQLite file, by model key and text (thread-safe; opened at first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._broken = False
        #: the file is on a read-only file system: read as it is, nothing stored
        self.read_only = False
        #: rows read back, and rows this object added to the file
        self.hits = 0
        self.stored = 0

    def __repr__(self) -> str:
        return f"DiskVectorCache({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None and not self._broken:
            conn = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                create_shared(self.path)  # 0666 & ~umask, not SQLite's 0644 & ~umask
                conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                _refuse_other_tables(conn)
                conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new file's only (before its first table)
                switch_to_wal(conn, BUSY_TIMEOUT_S)
                conn.execute("PRAGMA synchronous=NORMAL")  # a power loss may drop the last rows, not corrupt
                for statement in _SCHEMA:
                    conn.execute(statement)
                self._conn = conn
            except (OSError, sqlite3.Error, NotACacheError) as exc:
                if conn is not None:
                    conn.close()
                if isinstance(exc, sqlite3.OperationalError) and on_read_only_file_system(self.path):
                    self._open_read_only()
                else:
                    self._fail("open", exc)
        return self._conn

    def _open_read_only(self) -> None:
        """Open the file, on a read-only file system, as immutable: read as it is, nothing stored."""
        conn = None
        try:
            conn = _open_immutable(self.path)
            _refuse_other_tables(conn)
            conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchall()
        except (sqlite3.Error, NotACacheError) as exc:
            if conn is not None:
                conn.close()
            self._fail("open", exc)
            return
        log.info("embedding cache %s: on a read-only file system; reading it, storing nothing", self.path)
        self._conn, self.read_only = conn, True

    def close(self) -> None:
        """Close the file (the last connection to it checkpoints it whole: no ``-wal`` or ``-shm`` left);
        a later call opens it again."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _fail(self, what: str, exc: Exception) -> None:
        """Stop using the file for this process (a cache: the vectors are computed instead)."""
        log.warning(
            "embedding cache %s: cannot %s it (%s); computing vectors without it", self.path, what, exc
        )
        self._broken = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def get(self, model: str, texts: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        """The stored rows of ``texts`` under ``model`` (a row of another width is ignored)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            conn = self._connection()
            if conn is None:
                return found
            try:
                for start in range(0, len(texts), LOOKUP_BATCH):
                    batch = list(texts[start : start + LOOKUP_BATCH])
                    marks = ",".join("?" * len(batch))
                    rows = conn.execute(
                        f"SELECT text, vector FROM vectors WHERE model = ? AND text IN ({marks})",
                        [model, *batch],
                    )
                    for text, blob in rows:
                        if len(blob) == 4 * dim:
                            found[text] = np.frombuffer(blob, dtype=np.float32)
            except sqlite3.Error as exc:
                self._fail("read", exc)
                return {}
            self.hits += len(found)  # under the lock: threads share the counter
        return found

    def put(self, model: str, texts: Sequence[str], rows: np.ndarray) -> None:
        """Store ``rows`` (float32, one per text) under ``model``; a text stored already keeps its row."""
        with self._lock:
            conn = self._connection()
            if conn is None or self.read_only:
                return
            data = [
                (model, text, row.astype(np.float32).tobytes()) for text, row in zip(texts, rows, strict=True)
            ]
            try:
                before = conn.total_changes
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR IGNORE INTO vectors (model, text, vector) VALUES (?, ?, ?)", data)
                conn.execute("COMMIT")
                self.stored += conn.total_changes - before
            except sqlite3.OperationalError as exc:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    log.debug("embedding cache %s busy: %d vectors not stored", self.path, len(data))
                    return
                self._fail("write", exc)
            except sqlite3.Error as exc:
                self._fail("write", exc)
