"""Content fingerprints of declared sources, to tell which ones changed (not by mtime alone)."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.sources.files import Unread, read_regular, source_files
from graphwalk_core.ingest.sources.specs import SourceSpec, open_source
from graphwalk_core.model import content_hash, text_hash
from graphwalk_core.stores.sql_tables import holds_graph

#: path -> (its inode, size, mtime and ctime, sha256 of its bytes when it had them): one entry per path.
_FILE_HASHES: dict[str, tuple[tuple[int, int, int, int], str]] = {}


def file_hash(path: Path) -> str:
    """sha256 of the file's bytes, memoized on its inode, size, mtime and ctime: a same-size edit whose
    mtime was put back (``cp -p``, ``rsync -t``, ``touch -r``) still changes the ctime, which nobody sets."""
    stat = path.stat()
    key = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    known = _FILE_HASHES.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    digest = text_hash(read_regular(path))
    _FILE_HASHES[str(path)] = (key, digest)
    return digest


def _files(root: Path) -> list[tuple[str, str]]:
    """What the source reads, as ``FileSource`` lists it: each file's hash, and what it cannot read (a link
    it does not follow, a folder it cannot list), so a change to either is a change."""
    if not root.exists() and not root.is_symlink():
        return [(str(root), "missing")]
    try:
        listed = source_files(root)
    except InputError as exc:  # the source folder cannot be listed: the run will say so
        return [(str(root), str(exc))]
    out = []
    for rel, path, problem in listed:
        if problem is None:
            try:
                problem = file_hash(path)
            except Unread as exc:
                problem = str(exc)
            except OSError as exc:
                problem = f"cannot read: {exc.strerror or exc}"
        out.append((rel, problem))
    return out


def _source_path(spec: SourceSpec) -> tuple[str, Path] | None:
    """The source's folder, file or SQLite database, with its value as written in sources.yaml (a
    database reached by URL: None)."""
    url = spec.path_or_url
    if spec.kind == "files" or "://" not in url:
        return url, spec.resolve(url)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return url, Path(url[len("sqlite:///") :])
    return None


def _local_paths(spec: SourceSpec) -> list[tuple[str, Path]]:
    """The files a source reads, each with its value as written in sources.yaml: its own path (unless a
    database reached by URL), then its mapping file (for any source: a remote database's too)."""
    source = _source_path(spec)
    paths = [source] if source is not None else []
    if isinstance(spec.mapping, str):
        paths.append((spec.mapping, spec.resolve(spec.mapping)))
    return paths


def missing_paths(spec: SourceSpec) -> list[tuple[str, Path]]:
    """The paths a source reads that do not exist: (value as written in sources.yaml, resolved path)."""
    return [(written, path) for written, path in _local_paths(spec) if not (path.is_file() or path.is_dir())]


def missing_paths_message(spec: SourceSpec, sources_file: Path) -> str | None:
    """What is missing of a declared source, naming its entry in ``sources_file``; None: nothing."""
    missing = missing_paths(spec)
    if not missing:
        return None
    paths = ", ".join(f"{written!r} (resolved: {path})" for written, path in missing)
    return f"source {spec.id!r} in {sources_file}: path not found: {paths}"


async def _document_hashes(spec: SourceSpec) -> list[tuple[str, str]]:
    return sorted([(d.id, d.content_hash) async for d in open_source(spec).documents()])


def _holds_graph(path: Path) -> bool:
    """Whether the SQLite file ``path`` holds a graphwalk graph too (every ingest then rewrites it)."""
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    except sqlite3.Error:
        return False  # not a database: the run will say so
    return holds_graph(tables)


def source_fingerprint(spec: SourceSpec) -> str:
    """A hash of the spec and every byte the source reads, its mapping file's included (a remote database,
    or a SQLite file that also holds the graph, whose bytes every ingest changes: its documents' hashes)."""
    # allow_empty only when set: a spec without it hashes as before the field was added (no re-run of
    # every source after an upgrade), and setting it is a change that starts the run it allows
    unset = set() if spec.allow_empty else {"allow_empty"}
    parts: list[object] = [spec.model_dump(mode="json", exclude={"base_dir", *unset})]
    source = _source_path(spec)
    paths = _local_paths(spec)
    database = source[1] if source is not None and spec.kind == "sql" else None
    if source is None or (database is not None and database.is_file() and _holds_graph(database)):
        parts.append(asyncio.run(_document_hashes(spec)))
        paths = [p for p in paths if p != source]  # the mapping file's bytes
    elif database is not None and (wal := database.with_name(database.name + "-wal")).is_file():
        parts.append(_files(wal))  # in WAL mode, the latest commits are there until a checkpoint
    parts += [_files(p) for _, p in paths]
    return content_hash(parts)
