"""The warehouse: partitioned Parquet tables under a root folder, with DuckDB views over them."""

from __future__ import annotations

from graphwalk_core.warehouse.layout import DB_NAME
from graphwalk_core.warehouse.refresh import refresh_views
from graphwalk_core.warehouse.tables import Warehouse
from graphwalk_core.warehouse.views import QueryResult, Rows, open_query, query

__all__ = ["DB_NAME", "QueryResult", "Rows", "Warehouse", "open_query", "query", "refresh_views"]
