"""Hive-partitioned Parquet tables: ``<root>/<table>/<key>=<value>/.../part-0.parquet``."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphwalk_core.errors import InputError
from graphwalk_core.files import write_table_atomic
from graphwalk_core.warehouse.layout import DB_NAME, PART_FILE, TABLE_NAME, table_names
from graphwalk_core.warehouse.views import refresh_views

_VALUE = re.compile(r"^[A-Za-z0-9_.\-]+$")

Rows = pa.Table | Sequence[Mapping[str, Any]]


def _check_name(kind: str, name: str) -> str:
    if not TABLE_NAME.match(name):
        raise InputError(f"warehouse {kind} {name!r} is invalid: use letters, digits and '_'")
    return name


def _check_value(key: str, value: str) -> str:
    if not _VALUE.match(value):
        raise InputError(
            f"warehouse partition value {key}={value!r} is invalid: use letters, digits, '.', '_', '-'"
        )
    return value


class Warehouse:
    """Parquet tables under ``root`` plus ``warehouse.duckdb`` with one view per table.

    Every write replaces one partition file atomically (a failed write leaves the previous
    file intact) and then refreshes the DuckDB views.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()

    @property
    def db_path(self) -> Path:
        return self.root / DB_NAME

    def partition_dir(self, table: str, partition: Mapping[str, str] | None = None) -> Path:
        """The folder of one partition (``<root>/<table>/k=v/...``), keys in the given order."""
        path = self.root / _check_name("table", table)
        for key, value in (partition or {}).items():
            path = path / f"{_check_name('partition key', key)}={_check_value(key, str(value))}"
        return path

    def write(
        self,
        table: str,
        rows: Rows,
        partition: Mapping[str, str] | None = None,
        *,
        schema: pa.Schema | None = None,
        refresh: bool = True,
    ) -> Path:
        """Replace one partition of ``table`` with ``rows``; returns the Parquet file written.

        Partition columns live in the folder names only: a row column with the same name must
        hold the partition's value and is dropped from the file.
        """
        data = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(list(rows), schema=schema)
        for key, value in (partition or {}).items():
            if key in data.column_names:
                found = set(data.column(key).to_pylist())
                if found - {value}:
                    raise InputError(
                        f"table {table!r}: column {key!r} holds {sorted(map(str, found))}, "
                        f"but the partition is {key}={value}"
                    )
                data = data.drop_columns([key])
        if data.num_columns == 0:
            raise InputError(f"table {table!r}: nothing to write (no columns; pass a schema)")
        path = write_table_atomic(data, self.partition_dir(table, partition) / PART_FILE)
        if refresh:
            refresh_views(self.root)
        return path

    def read(self, table: str, partition: Mapping[str, str] | None = None) -> pa.Table:
        """One partition's rows (without partition columns)."""
        path = self.partition_dir(table, partition) / PART_FILE
        if not path.exists():
            raise InputError(f"table {table!r} has no partition {dict(partition or {})} at {path}")
        try:
            return pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {path}: {str(exc).strip()}") from None

    def delete(self, table: str, partition: Mapping[str, str] | None = None) -> None:
        """Remove a partition (or the whole table) and refresh the views."""
        shutil.rmtree(self.partition_dir(table, partition), ignore_errors=True)
        refresh_views(self.root)

    def tables(self) -> list[str]:
        """Names of tables that hold at least one Parquet file."""
        return table_names(self.root)
