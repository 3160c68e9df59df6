"""The warehouse: partitioned Parquet tables under a root folder, with DuckDB views over them."""

from graphwalk_core.warehouse.files import atomic_path, write_table_atomic, write_text_atomic
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
