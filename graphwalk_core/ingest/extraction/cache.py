"""On-disk extraction cache (SQLite): (chunk hash, extractor, model) -> extraction; reruns cost nothing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.files import create_shared, switch_to_wal
from graphwalk_core.ingest.extraction.base import Extraction

#: Seconds a statement waits for another process's write (processes extracting at once share the file).
BUSY_TIMEOUT_S = 60.0


class ExtractionCache:
    """A small SQLite table of extractions. ``path=":memory:"`` keeps it in memory (tests)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            create_shared(Path(self.path))  # 0666 & ~umask, not SQLite's 0644 & ~umask
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None
            )
            switch_to_wal(self._conn, BUSY_TIMEOUT_S)
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS extractions (chunk_hash TEXT NOT NULL, extractor TEXT NOT NULL, "
                "model TEXT NOT NULL, extraction TEXT NOT NULL, PRIMARY KEY (chunk_hash, extractor, model))"
            )
        except sqlite3.Error as exc:
            raise InputError(f"cannot open extraction cache {self.path}: {exc}") from exc
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, chunk_hash: str, extractor: str, model: str) -> Extraction | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT extraction FROM extractions WHERE chunk_hash=? AND extractor=? AND model=?",
                (chunk_hash, extractor, model),
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Extraction.model_validate_json(row[0])

    def put(self, chunk_hash: str, extractor: str, model: str, extraction: Extraction) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO extractions VALUES (?, ?, ?, ?)",
                (chunk_hash, extractor, model, extraction.model_dump_json()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM extractions").fetchone()[0])

    def close(self) -> None:
        self._conn.close()
