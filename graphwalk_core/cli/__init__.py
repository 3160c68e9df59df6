"""The ``graphwalk`` command line. Each command group lives in its own module and imports lazily."""

from __future__ import annotations

import typer

from graphwalk_core.cli import demo, graph, ingest, query, sql
from graphwalk_core.cli import eval as eval_cli

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(graph.app, name="graph", help="Import, export and inspect graphs.")
app.command("query")(query.query)
app.command("ingest")(ingest.ingest)
app.add_typer(eval_cli.app, name="eval", help="Run evaluations and write Parquet results.")
app.command("sql")(sql.sql)
app.command("demo")(demo.demo)


def main() -> None:
    app()
