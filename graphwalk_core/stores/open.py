"""Open a graph store from a command-line style spec: a URL, a SQLite file, a Parquet folder, triples."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from graphwalk_core.errors import InputError
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore, NodeTypeFor
from graphwalk_core.stores.parquet import table_path
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.stores.sql_engine import error_reason, redact_url

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
TRIPLES_SUFFIXES = (".txt", ".triples")


def sqlite_url(path: str | Path) -> str:
    """The SQLAlchemy URL of a SQLite file."""
    return f"sqlite:///{Path(path).resolve()}"


def is_parquet_graph(folder: Path) -> bool:
    """Whether ``folder`` holds a graph's Parquet tables (its ``nodes.parquet``, or a cut save's), not other
    files."""
    return table_path(folder, "nodes").exists()


def open_store(
    spec: str | Path, *, create: bool = False, node_type_for: NodeTypeFor | None = None
) -> GraphStore:
    """The store ``spec`` names.

    - a SQLAlchemy URL (contains ``://``) -> :class:`SQLGraphStore` (its tables created when
      ``create``; else the database must hold a graph, and one that does not is left untouched);
    - a ``.db`` / ``.sqlite`` / ``.sqlite3`` file -> :class:`SQLGraphStore` on SQLite
      (created when ``create``; else it must exist and hold a graph);
    - a folder of Parquet tables (``nodes.parquet`` ...) -> :class:`MemoryGraphStore`
      (an empty store when ``create`` and the folder does not exist yet);
    - a ``.txt`` / ``.triples`` file of ``subject|relation|object`` lines -> :class:`MemoryGraphStore`
      (source id: the file name; node types from ``node_type_for``).
    """
    text = str(spec)
    if "://" in text:
        return SQLGraphStore(text, create=create)
    path = Path(spec)
    if path.suffix.lower() in SQLITE_SUFFIXES:
        if not path.is_file() and not create:
            raise InputError(f"graph database not found: {path}")
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        return SQLGraphStore(sqlite_url(path), create=create)
    if path.is_dir():
        if create and not is_parquet_graph(path):
            return MemoryGraphStore()
        return MemoryGraphStore.load(path)
    if path.is_file() and path.suffix.lower() in TRIPLES_SUFFIXES:
        from graphwalk_core.stores.triples import read_triples

        return MemoryGraphStore.from_triples(
            read_triples(path), source_id=path.name, node_type_for=node_type_for
        )
    if path.exists():
        raise InputError(
            f"cannot open {path} as a graph: expected a URL, a {'/'.join(SQLITE_SUFFIXES)} file, "
            f"a folder of Parquet tables or a {'/'.join(TRIPLES_SUFFIXES)} triples file"
        )
    if create:
        return MemoryGraphStore()
    raise InputError(f"graph not found: {path}")


#: Metadata key deleted (never set) to probe that a SQL graph accepts writes.
_WRITE_PROBE = "graphwalk/write-probe"


async def check_writable(store: GraphStore, spec: str | Path) -> None:
    """An InputError naming the graph and the cause when ``store`` (opened from ``spec``) cannot be
    written: a read-only SQLite file or database, or a Parquet folder in a read-only directory. Run it
    before the work, so a run never fails only when it saves."""
    if isinstance(store, SQLGraphStore):
        try:
            await store.set_metadata(_WRITE_PROBE, None)  # a delete: writes nothing, needs write access
        except SQLAlchemyError as exc:
            raise InputError(f"cannot write the graph {redact_url(str(spec))}: {error_reason(exc)}") from None
        return
    if isinstance(store, MemoryGraphStore) and "://" not in str(spec):
        folder = Path(spec)
        while not folder.exists() and folder != folder.parent:  # the folder is created on save
            folder = folder.parent
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as exc:
            raise InputError(f"cannot write the graph folder {spec}: {exc.strerror or exc}") from None
