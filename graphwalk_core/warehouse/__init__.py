"""The warehouse: partitioned Parquet tables under a root folder, with DuckDB views over them."""
