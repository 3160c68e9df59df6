"""Open a graph store from a command-line style spec: a URL, a SQLite file, a Parquet folder, triples."""

from __future__ import annotations

from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore, NodeTypeFor
from graphwalk_core.stores.sql import SQLGraphStore

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
TRIPLES_SUFFIXES = (".txt", ".triples")


def sqlite_url(path: str | Path) -> str:
    """The SQLAlchemy URL of a SQLite file."""
    return f"sqlite:///{Path(path).resolve()}"


def open_store(
    spec: str | Path, *, create: bool = False, node_type_for: NodeTypeFor | None = None
) -> GraphStore:
    """The store ``spec`` names.

    - a SQLAlchemy URL (contains ``://``) -> :class:`SQLGraphStore`;
    - a ``.db`` / ``.sqlite`` / ``.sqlite3`` file -> :class:`SQLGraphStore` on SQLite
      (created when ``create``; else it must exist);
    - a folder of Parquet tables (``nodes.parquet`` ...) -> :class:`MemoryGraphStore`
      (an empty store when ``create`` and the folder does not exist yet);
    - a ``.txt`` / ``.triples`` file of ``subject|relation|object`` lines -> :class:`MemoryGraphStore`
      (source id: the file name; node types from ``node_type_for``).
    """
    text = str(spec)
    if "://" in text:
        return SQLGraphStore(text)
    path = Path(spec)
    if path.suffix.lower() in SQLITE_SUFFIXES:
        if not path.is_file() and not create:
            raise InputError(f"graph database not found: {path}")
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        return SQLGraphStore(sqlite_url(path))
    if path.is_dir():
        if create and not (path / "nodes.parquet").exists():
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
