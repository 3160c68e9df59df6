"""graphwalk sql: run a query against the warehouse's DuckDB views and print a table, CSV or JSON."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO, TypeAlias

import typer

from graphwalk_core.errors import InputError
from graphwalk_core.files import json_text

if TYPE_CHECKING:
    from graphwalk_core.warehouse import Rows

#: Rows a table prints unless ``--limit`` says otherwise (CSV and JSON print every row by default).
TABLE_ROWS = 200
Row: TypeAlias = tuple[Any, ...]
#: DuckDB types whose Python values are lists or dicts (a union's may be either)
_NESTED = frozenset({"list", "array", "struct", "map", "union"})


class Format(StrEnum):
    """How ``graphwalk sql`` prints a result."""

    table = "table"
    csv = "csv"
    json = "json"


def sql(
    query: Annotated[str, typer.Argument(help="SQL over the warehouse views, e.g. 'select * from nodes'")],
    warehouse: Annotated[
        Path | None,
        typer.Option(help="warehouse root (default: GRAPHWALK_WAREHOUSE, else ./warehouse)"),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1, help=f"print at most this many rows (default: {TABLE_ROWS} in a table, all in CSV/JSON)"
        ),
    ] = None,
    output_format: Annotated[
        Format,
        typer.Option("--format", "-f", help="table, csv (with a header row) or json (a list of objects)"),
    ] = Format.table,
) -> None:
    """Run QUERY read-only against <warehouse>/warehouse.duckdb and print the result."""
    from rich.console import Console
    from rich.markup import escape

    from graphwalk_core.settings import get_settings
    from graphwalk_core.warehouse import open_query

    root = warehouse or get_settings().warehouse
    try:
        with open_query(root, query) as result:
            if output_format is Format.table:
                _print_table(result, TABLE_ROWS if limit is None else limit)
            else:
                batches = _first(result.batches(), limit)
                if output_format is Format.csv:
                    nested = [i for i, kind in enumerate(result.types) if kind in _NESTED]
                    _write_csv(result.columns, batches, sys.stdout, nested)
                else:
                    _write_json(result.columns, batches, sys.stdout)
    except InputError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc


def _first(batches: Iterator[list[Row]], limit: int | None) -> Iterator[list[Row]]:
    """``batches`` cut to ``limit`` rows in all (all of them when None); stops fetching once it is reached."""
    left = limit
    for batch in batches:
        if left is not None:
            batch = batch[:left]
            left -= len(batch)
        if batch:
            yield batch
        if left == 0:
            return


def _write_csv(
    columns: list[str], batches: Iterable[list[Row]], out: TextIO, nested: Sequence[int] = ()
) -> None:
    """A header row, then each row as it is fetched; a list, struct or map value (of the ``nested``
    columns, looked at alone: checking every value made CSV twice as slow) as its JSON text."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for batch in batches:
        if nested:
            batch = [_json_cells(row, nested) for row in batch]
        writer.writerows(batch)


def _json_cells(row: Row, nested: Sequence[int]) -> Row:
    """``row`` with the list and dict values of its ``nested`` columns as JSON text."""
    cells = list(row)
    for i in nested:
        if isinstance(cells[i], list | dict):
            cells[i] = json_text(cells[i])
    return tuple(cells)


def _keys(columns: list[str]) -> list[str]:
    """The column names as JSON keys, each its own: a name met again gets ``_1``, ``_2``, ... (as DuckDB
    names a subquery's columns), so a join's second ``id`` is not lost under the first."""
    keys: list[str] = []
    for name in columns:
        key, n = name, 0
        while key in keys:
            n += 1
            key = f"{name}_{n}"
        keys.append(key)
    return keys


def _write_json(columns: list[str], batches: Iterable[list[Row]], out: TextIO) -> None:
    """A list of objects, written as it is fetched: the text ``json_text(rows, indent=1)`` gives (NaN
    and infinities as null: bare ``NaN`` is not JSON)."""
    opened, keys = False, _keys(columns)
    for batch in batches:
        for row in batch:
            record = dict(zip(keys, row, strict=True))
            text = json_text(record, indent=1)
            out.write((",\n " if opened else "[\n ") + text.replace("\n", "\n "))
            opened = True
    out.write("\n]\n" if opened else "[]\n")


def _print_table(result: Rows, limit: int) -> None:
    """A rich table of the first ``limit`` rows, then the row count (the rest are counted as they are
    fetched, not kept); piped output is not wrapped to 80 columns, and a table wider than the terminal says
    that its values are cut and how to see them whole."""
    from rich.console import Console
    from rich.markup import escape
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not console.is_terminal:
        console = Console(width=100_000)  # a pipe or file: every value whole, one line per row
    columns = result.columns
    table = Table(*map(escape, columns), show_lines=False)  # names and values are text, never markup
    total = 0
    for batch in result.batches():
        for row in batch[: max(limit - total, 0)]:
            table.add_row(*(Text("NULL" if v is None else str(v)) for v in row))
        total += len(batch)
    console.print(table)
    shown = min(limit, total)
    console.print(f"{total} row(s)" + (f", {shown} shown" if shown < total else ""))
    needed = Measurement.get(console, console.options.update_width(100_000), table).maximum
    if needed > console.width:
        console.print(
            f"[yellow]{len(columns)} columns need {needed} characters, the terminal has {console.width}: "
            "values are cut. Select fewer columns, or use --format csv / --format json.[/yellow]",
            soft_wrap=True,
            highlight=False,
        )
