"""The ``graphwalk`` command line. Each command group lives in its own module and imports lazily.

Other installed packages add commands through the ``graphwalk.commands`` entry point group
(``graphwalk demo`` comes from graphwalk_dagster that way).
"""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from graphwalk_core.cli import eval as eval_cli
from graphwalk_core.cli import graph, ingest, query, sql, train
from graphwalk_core.settings import SettingsError

COMMANDS_GROUP = "graphwalk.commands"
#: What every command's exit code means (``graphwalk --help`` ends with it).
EXIT_CODES = (
    "Exit codes: 0 done; 1 it ran but found a problem: a `query` whose walk ended in an error, an "
    "`ingest` that left documents incomplete (retried next run), a `demo` run or asset check that failed "
    "(its run named); 2 an error stopped it, named on stderr: bad input or usage, a setting, a graph or "
    "backend that failed; 130 interrupted (Ctrl-C)."
)

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Answer questions by walking a knowledge graph: ingest sources into it, query it, evaluate and "
    "train deciders, and read the results with SQL. `graphwalk COMMAND --help` for each command.",
    epilog=EXIT_CODES,
)
app.add_typer(graph.app, name="graph", help="Import, export and inspect graphs.")
app.command("query")(query.query)
app.command("ingest")(ingest.ingest)
app.add_typer(eval_cli.app, name="eval", help="Run evaluations and write Parquet results.")
app.add_typer(train.app, name="train", help="Train a decider from labeled questions and traces.")
app.command("sql")(sql.sql)
for _command in sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name):
    app.command(_command.name)(_command.load())


def main() -> None:
    """``graphwalk``: a GRAPHWALK_* variable holding an invalid value is one line naming it (exit 2)."""
    try:
        app()
    except SettingsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
