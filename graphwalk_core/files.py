"""Local files: atomic writes (a failed write leaves the previous file intact), files created shared,
SQLite files switched to WAL mode by processes opening them at once, and folders locked for one process.

The temporary file is created with mode 0666 less the process umask (as ``open`` and DuckDB create
files), so a replaced Parquet file or plot gets the same permissions as ``warehouse.duckdb``;
``tempfile.mkstemp`` would make it 0600.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import math
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: path -> (its inode, size, mtime and ctime, :func:`file_sha256` of it then): one entry per path.
_SHA256: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_SHA256_LOCK = threading.Lock()


def remembered_sha256(path: Path) -> str:
    """:func:`file_sha256`, remembered per path on the file's inode, size, mtime and ctime: a process hashes
    a large file it opens again (a model's weights) once, and a rewrite changes the ctime at least."""
    stat = path.stat()
    key = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _SHA256_LOCK:
        known = _SHA256.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    digest = file_sha256(path)
    with _SHA256_LOCK:
        _SHA256[str(path)] = (key, digest)
    return digest


def _create_temp(path: Path) -> Path:
    """A new empty file beside ``path`` (mode 0666 & ~umask); never reuses an existing name."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp


def create_shared(path: Path) -> None:
    """Create ``path`` empty with mode 0666 & ~umask, as ``open`` and DuckDB create files, unless it
    exists. SQLite creates a database 0644 & ~umask (and its -wal and -shm files like it), so under umask
    002 the group sharing a warehouse could not write it. An error is left to the caller's own open."""
    with suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


def switch_to_wal(conn: Any, timeout_s: float) -> None:
    """``PRAGMA journal_mode=WAL`` on a sqlite3 connection or cursor, retried for up to ``timeout_s``. On a
    file still in rollback mode (a new one that other processes are opening too) the switch reads the
    header, then upgrades to write; SQLite answers a contended upgrade with "database is locked" at once,
    never calling its busy handler (waiting there could deadlock), and the failed statement releases its
    read lock, so retrying lets the other writer finish."""
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


@contextmanager
def folder_locked(folder: Path, *, shared: bool = False) -> Iterator[None]:
    """Run the block while this process alone holds ``folder``'s lock, or (``shared``) with other readers
    only; others wait, saying so in the log. The lock is ``flock`` on the folder itself, so no lock file is
    left among its files. Where the folder cannot be opened or its file system takes no such lock (NFS
    emulates it only on files opened for writing), the block runs without it."""
    fd, wait = _lock_if_free(folder, shared)
    if wait:
        with suppress(OSError):
            fcntl.flock(fd, wait)
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


@asynccontextmanager
async def folder_locked_async(folder: Path, *, poll_s: float = 0.1) -> AsyncIterator[None]:
    """:func:`folder_locked` (not shared) for a coroutine: the wait polls the lock, so the event loop goes
    on and a cancellation (Ctrl-C) ends it; a blocking ``flock`` held the loop, and Ctrl-C went unheard
    until the other process let the folder go."""
    fd, wait = _lock_if_free(folder, False)
    try:
        while wait:
            await asyncio.sleep(poll_s)
            try:
                fcntl.flock(fd, wait | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            except OSError:
                pass  # no lock to be had: the block runs without it, as with folder_locked
            wait = 0
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


def _lock_if_free(folder: Path, shared: bool) -> tuple[int, int]:
    """``folder`` opened and its lock taken if free: (fd, 0); else (fd, the lock to wait for), the wait
    logged. The fd is -1 where the folder cannot be opened; the lock is 0 where it takes no lock."""
    fd = -1
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s: another process is using it; waiting for it to finish", folder)
            return fd, kind
    return fd, 0


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table_atomic(table: pa.Table, path: Path) -> Path:
    """Write ``table`` as Parquet to ``path`` atomically."""
    import pyarrow.parquet as pq  # here: the stores use this module without pyarrow

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path


def read_table_once(path: Path, columns: list[str] | None = None) -> pa.Table:
    """The Parquet file ``path`` read through one open file: pyarrow given a path opens it more than once,
    so a read while another process replaced the file (:func:`write_table_atomic`) got parts of both
    ("Page was smaller than expected")."""
    import pyarrow.parquet as pq  # here: the stores use this module without pyarrow

    with open(path, "rb") as file:
        return pq.read_table(file, columns=columns)


def write_text_atomic(text: str, path: Path) -> Path:
    """Write UTF-8 text to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def first_undecodable(data: bytes) -> tuple[int, str]:
    """The line number and hex byte of the first bytes in ``data`` that are not UTF-8, for an error
    message (``(0, "")`` when all of it decodes)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data[: exc.start].count(b"\n") + 1, data[exc.start : exc.start + 1].hex()
    return 0, ""


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as the JSON text graphwalk prints: UTF-8, a value JSON has no type for (a date) as its
    ``str``, and NaN or an infinity, which JSON has no number for, as null (as Pydantic writes them)."""
    try:
        return json.dumps(value, default=str, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:  # a NaN or infinity in it: replaced only then (walking every value would cost)
        return json.dumps(_finite(value), default=str, ensure_ascii=False, indent=indent, allow_nan=False)


def _finite(value: Any) -> Any:
    """``value`` with every NaN and infinity in it as None (a key as the text ``json.dumps`` gives it)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {
            json.dumps(k) if isinstance(k, float) and not math.isfinite(k) else k: _finite(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_error(exc: json.JSONDecodeError) -> str:
    """``invalid JSON: <json's reason> at column N`` (some reasons end in "starting at" themselves)."""
    at = "" if exc.msg.endswith(" at") else " at"
    return f"invalid JSON: {exc.msg}{at} column {exc.colno}"


def file_in_the_way(folder: Path) -> Path | None:
    """``folder`` or the first folder above it that is a file (so no folder can be made there), else None."""
    return next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
