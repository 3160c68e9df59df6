"""Graph stores: the GraphStore protocol, the in-memory and SQL stores, import/export and open_store."""

from graphwalk_core.stores.base import Adjacent, Direction, GraphStore, Neighbor
from graphwalk_core.stores.memory import MemoryGraphStore
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
