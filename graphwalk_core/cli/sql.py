"""graphwalk sql: run a query against the warehouse's DuckDB views and print a table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graphwalk_core.errors import InputError


def sql(
    query: Annotated[str, typer.Argument(help="SQL over the warehouse views, e.g. 'select * from nodes'")],
    warehouse: Annotated[
        Path | None,
        typer.Option(help="warehouse root (default: GRAPHWALK_WAREHOUSE, else ./warehouse)"),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="print at most this many rows")] = 200,
) -> None:
    """Run QUERY read-only against <warehouse>/warehouse.duckdb and print the result."""
    from rich.console import Console
    from rich.table import Table

    from graphwalk_core.settings import get_settings
    from graphwalk_core.warehouse import query as run_query

    root = warehouse or get_settings().warehouse
    console = Console()
    try:
        result = run_query(root, query)
    except InputError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc
    table = Table(*result.columns, show_lines=False)
    for row in result.rows[:limit]:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(table)
    shown = min(limit, len(result.rows))
    console.print(f"{len(result.rows)} row(s)" + (f", {shown} shown" if shown < len(result.rows) else ""))
