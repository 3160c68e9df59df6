"""The warehouse: partitioned Parquet tables under a root folder, with DuckDB views over them.

``Warehouse`` and the view functions import DuckDB on first use, so file helpers stay light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from graphwalk_core.warehouse.files import atomic_path, write_table_atomic, write_text_atomic

if TYPE_CHECKING:
    from graphwalk_core.warehouse.tables import Warehouse
    from graphwalk_core.warehouse.views import DB_NAME, QueryResult, query, refresh_views

__all__ = [
    "DB_NAME",
    "QueryResult",
    "Warehouse",
    "atomic_path",
    "query",
    "refresh_views",
    "write_table_atomic",
    "write_text_atomic",
]

_LAZY = {
    "Warehouse": "tables",
    "DB_NAME": "views",
    "QueryResult": "views",
    "query": "views",
    "refresh_views": "views",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
