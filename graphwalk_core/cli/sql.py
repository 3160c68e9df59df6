"""graphwalk sql: run a query against the warehouse's DuckDB views and print a table, CSV or JSON."""

from __future__ import annotations

import csv
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from graphwalk_core.errors import InputError

#: Rows a table prints unless ``--limit`` says otherwise (CSV and JSON print every row by default).
TABLE_ROWS = 200


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

    from graphwalk_core.settings import get_settings
    from graphwalk_core.warehouse import query as run_query

    root = warehouse or get_settings().warehouse
    try:
        result = run_query(root, query)
    except InputError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc
    if output_format is Format.table:
        _print_table(result.columns, result.rows, TABLE_ROWS if limit is None else limit)
        return
    rows = result.rows if limit is None else result.rows[:limit]
    if output_format is Format.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(rows)
    else:
        records = [dict(zip(result.columns, row, strict=True)) for row in rows]
        sys.stdout.write(json.dumps(records, default=str, ensure_ascii=False, indent=1) + "\n")


def _print_table(columns: list[str], rows: list[tuple[object, ...]], limit: int) -> None:
    """A rich table of at most ``limit`` rows, then the row count; piped output is not wrapped to 80
    columns, and a table wider than the terminal says that its values are cut and how to see them whole."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=100_000)  # a pipe or file: every value whole, one line per row
    table = Table(*columns, show_lines=False)
    for row in rows[:limit]:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(table)
    shown = min(limit, len(rows))
    console.print(f"{len(rows)} row(s)" + (f", {shown} shown" if shown < len(rows) else ""))
    needed = Measurement.get(console, console.options.update_width(100_000), table).maximum
    if needed > console.width:
        console.print(
            f"[yellow]{len(columns)} columns need {needed} characters, the terminal has {console.width}: "
            "values are cut. Select fewer columns, or use --format csv / --format json.[/yellow]",
            soft_wrap=True,
            highlight=False,
        )
