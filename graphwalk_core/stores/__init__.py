"""Graph stores: the GraphStore protocol, the in-memory and SQL stores, import/export and open_store.

``SQLGraphStore`` and ``open_store`` import SQLAlchemy on first use, so in-memory users stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphwalk_core.stores.base import Adjacent, Direction, GraphStore, Neighbor
from graphwalk_core.stores.memory import MemoryGraphStore

if TYPE_CHECKING:
    from graphwalk_core.stores.open import open_store
    from graphwalk_core.stores.sql import SQLGraphStore

__all__ = [
    "Adjacent",
    "Direction",
    "GraphStore",
    "MemoryGraphStore",
    "Neighbor",
    "SQLGraphStore",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name == "SQLGraphStore":
        from graphwalk_core.stores.sql import SQLGraphStore

        return SQLGraphStore
    if name == "open_store":
        from graphwalk_core.stores.open import open_store

        return open_store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
