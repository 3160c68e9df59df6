"""``graphwalk demo``: the whole Dagster asset graph offline, then where the results are.

Registered as a ``graphwalk.commands`` entry point (pyproject.toml), so graphwalk_core's command line
offers it without importing this package.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Annotated

import typer


def demo(
    warehouse: Annotated[
        Path | None,
        typer.Option(help="Parquet, DuckDB and graph root (default: GRAPHWALK_WAREHOUSE or ./warehouse)"),
    ] = None,
    n: Annotated[int, typer.Option(min=1, help="questions per benchmark eval partition")] = 20,
    fresh: Annotated[
        bool,
        typer.Option(help="delete the warehouse first (a folder holding its warehouse.duckdb or objects/)"),
    ] = False,
    dagster_home: Annotated[
        Path | None,
        typer.Option(help="Dagster instance folder for the runs (default: $DAGSTER_HOME, else .dagster)"),
    ] = None,
    questions: Annotated[
        Path | None,
        typer.Option(help="custom questions over the sample graph (default: data/questions.jsonl)"),
    ] = None,
) -> None:
    """Ingest data/sources.yaml, publish the graph, run small evals, print a DuckDB summary (offline)."""
    from rich.console import Console
    from rich.markup import escape

    from graphwalk_core.errors import GraphwalkError, InputError
    from graphwalk_core.eval.partition_dataset import CUSTOM_QUESTIONS
    from graphwalk_core.files import file_in_the_way
    from graphwalk_core.settings import get_settings
    from graphwalk_dagster import demo as runs  # Dagster: only here
    from graphwalk_dagster.demo_report import demo_plan, print_report

    warehouse = warehouse or get_settings().warehouse
    console = Console()
    if not console.is_terminal:
        console = Console(width=140)  # piped output: no 80-column wrapping of the tables
    start = time.perf_counter()
    chosen = questions or CUSTOM_QUESTIONS
    plan = demo_plan(questions=chosen)
    home = dagster_home or Path(os.environ.get("DAGSTER_HOME") or ".dagster")
    try:
        if questions is not None and not questions.is_file():  # the default one missing: left out
            raise InputError(f"--questions {questions}: no such file")
        for folder, option in ((warehouse, "--warehouse"), (home, "--dagster-home")):
            if taken := file_in_the_way(folder):
                raise InputError(f"{option} {folder}: {taken} is a file, not a folder")
        # before --fresh deletes anything: its storage may be out of reach
        instance = runs.demo_instance(home, lambda note: typer.echo(note, err=True))
        if fresh:
            check_fresh(warehouse)
            shutil.rmtree(warehouse, ignore_errors=True)
        runs.run_demo(
            warehouse,
            plan,
            n=n,
            questions=chosen,
            instance=instance,
            log=lambda msg: console.print(f"[dim]materialize[/dim] {escape(msg)}"),
        )
    except GraphwalkError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        if isinstance(exc, runs.RunFailed):  # it ran and found a problem: where its events are
            typer.echo(f"See run {exc.run_id} in the UI: {ui_command(home)}", err=True)
            raise typer.Exit(1) from None
        raise typer.Exit(2) from None
    except runs.INTERRUPTS:
        typer.echo(
            f"interrupted: what finished is kept; the runs so far in the UI: {ui_command(home)}", err=True
        )
        raise typer.Exit(130) from None
    graph = runs.offline_resources(warehouse)["graph_store"].resolved_url()  # GRAPHWALK_GRAPH_URL when set
    print_report(warehouse.resolve(), console, plan=plan, seconds=time.perf_counter() - start, graph=graph)
    console.print(f"See the runs in the UI: {ui_command(home)}", soft_wrap=True)


def ui_command(home: Path) -> str:
    """The command that starts the Dagster UI on the demo's instance ``home``."""
    from graphwalk_dagster.demo_report import command

    return f"DAGSTER_HOME={home.resolve()} {command('dagster')} dev -w workspace.yaml"


def check_fresh(warehouse: Path) -> None:
    """Refuse ``--fresh`` on a folder that holds files but neither the warehouse database nor ``objects``
    (the JSON IO manager's folder, written by a demo's first step): a mistyped ``--warehouse`` or
    GRAPHWALK_WAREHOUSE (``.``, a project folder) was deleted whole."""
    from graphwalk_core.errors import InputError
    from graphwalk_core.warehouse import DB_NAME

    marks = (DB_NAME, "objects")
    if warehouse.is_dir() and any(warehouse.iterdir()) and not any((warehouse / m).exists() for m in marks):
        raise InputError(
            f"--fresh deletes the warehouse folder {warehouse}, but it holds neither {DB_NAME} nor objects/: "
            "not a warehouse, so nothing was deleted; remove it yourself or give another --warehouse"
        )
