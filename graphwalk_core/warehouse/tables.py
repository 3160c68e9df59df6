"""Hive-partitioned Parquet tables: ``<root>/<table>/<key>=<value>/.../part-0.parquet``.

A partition value is any non-empty string: its folder name percent-encodes every character but ASCII
letters, digits and ``_.-~`` (``source=my%20docs``), which DuckDB's and pyarrow's hive partitioning
decode, so the views and ``pandas.read_parquet`` give the value back exactly.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from graphwalk_core.errors import InputError
from graphwalk_core.files import read_table_once, write_table_atomic
from graphwalk_core.warehouse.layout import DB_NAME, PART_FILE, TABLE_NAME, inside, table_names
from graphwalk_core.warehouse.refresh import refresh_views
from graphwalk_core.warehouse.swap import swap_in

#: The value DuckDB and pyarrow read as NULL (Hive's name for a NULL partition value).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
#: The longest file name (bytes) common file systems take.
NAME_MAX = 255

Rows = pa.Table | Sequence[Mapping[str, Any]]


def _check_name(kind: str, name: str) -> str:
    if not TABLE_NAME.match(name):
        raise InputError(f"warehouse {kind} {name!r} is invalid: use letters, digits and '_'")
    return name


def _folder(key: str, value: str) -> str:
    """The folder name of the partition ``key=value``, the value percent-encoded."""
    if not value or value == HIVE_NULL:
        raise InputError(f"warehouse partition value {key}={value!r} is invalid: it would read as NULL")
    name = f"{key}={quote(value, safe='')}"
    if len(name.encode()) > NAME_MAX:
        raise InputError(
            f"warehouse partition value {key}={value[:40]!r}... is too long: its folder name {name[:40]}... "
            f"is {len(name.encode())} bytes (percent-encoded), and a file system takes {NAME_MAX}"
        )
    return name


def _first_file(folder: Path) -> Path | None:
    """The first Parquet file under ``folder`` in path order (``min(folder.rglob("*.parquet"))``), listing
    only the folders on the way to it: a write beside thousands of partitions lists two folders, not all."""
    if not folder.is_dir():
        return None
    for name in sorted(os.listdir(folder)):  # names: sorting 4,800 paths took 20 ms
        entry = folder / name
        found = _first_file(entry) if entry.is_dir() else entry if entry.suffix == ".parquet" else None
        if found is not None:
            return found
    return None


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
        """The folder of one partition (``<root>/<table>/k=v/...``), keys in the given order; refused when
        it leads out of the warehouse (a symlink)."""
        path = self.root / _check_name("table", table)
        for key, value in (partition or {}).items():
            path = path / _folder(_check_name("partition key", key), str(value))
        return inside(self.root, path)

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
            for column in [name for name in data.column_names if name.lower() == key.lower()]:
                found = set(data.column(column).to_pylist())
                if found - {value}:
                    raise InputError(
                        f"table {table!r}: column {column!r} holds {sorted(map(str, found))}, "
                        f"but the partition is {key}={value}"
                    )
                data = data.drop_columns([column])
        if data.num_columns == 0:
            raise InputError(f"table {table!r}: nothing to write (no columns; pass a schema)")
        folder = self.partition_dir(table, partition)
        self._check_fits(table, list(partition or {}))
        path = write_table_atomic(data, folder / PART_FILE)
        if refresh:
            refresh_views(self.root)
        return path

    def _check_fits(self, table: str, keys: list[str]) -> None:
        """Refuse a partition of ``table`` keyed by ``keys`` that its view could not read: beside partitions
        keyed otherwise (DuckDB: 'Hive partition mismatch'), or in a table named like another but for case
        (DuckDB's view names ignore it: one view would hide the other table)."""
        folder = self.root / table
        for other in self.tables():
            alike = other != table and other.lower() == table.lower()
            if alike and not (folder.exists() and folder.samefile(self.root / other)):  # case-blind disk
                raise InputError(
                    f"table {table!r} cannot be written beside the table {other!r} ({self.root / other}): "
                    "the views' names ignore case; use another name"
                )
        first = _first_file(folder)
        if first is None:
            return
        found = [name.split("=", 1)[0] for name in first.relative_to(folder).parent.parts]
        if sorted(found) != sorted(keys):
            raise InputError(
                f"table {table!r}: a partition keyed by {', '.join(keys) or 'no key'} cannot join its "
                f"partitions, keyed by {', '.join(found) or 'no key'} ({first}): the views read them "
                "together; write the same keys, or delete the table first (Warehouse.delete)"
            )

    def replace(self, tables: Mapping[str, pa.Table], staging: Path) -> None:
        """Replace the (unpartitioned) ``tables`` together, so that a query sees all of them old or all new
        (see :mod:`~graphwalk_core.warehouse.swap`); they are staged in ``staging``, a new hidden folder
        directly under the warehouse folder."""
        for name, table in tables.items():
            write_table_atomic(table, staging / self.partition_dir(name).name / PART_FILE)
        swap_in(self.root, staging)

    def read(self, table: str, partition: Mapping[str, str] | None = None) -> pa.Table:
        """One partition's rows (without partition columns)."""
        path = self.partition_dir(table, partition) / PART_FILE
        if not path.exists():
            raise InputError(f"table {table!r} has no partition {dict(partition or {})} at {path}")
        try:
            return read_table_once(path)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {path}: {str(exc).strip()}") from None

    def delete(self, table: str, partition: Mapping[str, str] | None = None) -> None:
        """Remove a partition (or the whole table) and refresh the views."""
        shutil.rmtree(self.partition_dir(table, partition), ignore_errors=True)
        refresh_views(self.root)

    def tables(self) -> list[str]:
        """Names of tables that hold at least one Parquet file."""
        return table_names(self.root)
