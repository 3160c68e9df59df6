"""graphwalk graph commands (placeholder until its issue lands)."""

import typer

app = typer.Typer(no_args_is_help=True)
