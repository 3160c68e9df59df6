"""graphwalk train decider: decision examples from labeled questions and traces, then a trained decider."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from graphwalk_core.cli.options import check_folder, check_hops, guarded
from graphwalk_core.errors import InputError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)


def _summary(report: Any, unlabeled: int, seconds: float) -> str:
    """The fit's summary: example counts, accuracy per decision kind, seconds."""

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    lines = ["| decision | train accuracy | validation accuracy |", "|---|---|---|"]
    for kind in ("first", "later", "stop", "all"):
        lines.append(
            f"| {kind} | {pct(report.train_accuracy[kind])} | {pct(report.validation_accuracy[kind])} |"
        )
    counts = ", ".join(f"{k}={v}" for k, v in report.examples.items())
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in report.seconds.items())
    return "\n".join(
        [
            f"examples: {counts}; questions without a path to a gold answer: {unlabeled}",
            *lines,
            f"seconds: {seconds:.1f} in all ({timing})",
            f"model: {report.model_dir}",
        ]
    )


@app.command("decider")
@guarded
def decider(
    out: Annotated[Path, typer.Option(help="model folder to write (weights, manifest, questions.json)")],
    graph: Annotated[
        str | None, typer.Option(help="graph: triples .txt, Parquet folder, .db file or URL")
    ] = None,
    path: Annotated[  # the core names the question file by the key "path", as eval custom's --questions
        Path | None,
        typer.Option("--questions", help="labeled questions, CSV or JSONL: question, answers, start[, id]"),
    ] = None,
    dataset: Annotated[str | None, typer.Option(help="a built-in labeled dataset: metaqa")] = None,
    split: Annotated[str, typer.Option(help="dataset split to learn from (dev; never test)")] = "dev",
    hops: Annotated[
        list[int] | None, typer.Option("--hops", help="MetaQA hop counts (default 1 2 3)")
    ] = None,
    n: Annotated[
        int | None, typer.Option("--n", help="seeded subset size per dataset (default: all)")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="data folder (default: $GRAPHWALK_DATA_DIR or ../shared/data)")
    ] = None,
    traces: Annotated[
        Path | None, typer.Option(help="folder of walk traces (*.json) to learn from as soft labels")
    ] = None,
    hold_out_templates: Annotated[
        float,
        typer.Option(help="share of question templates (text with the entity masked) kept out of training"),
    ] = 0.0,
    examples_out: Annotated[
        Path | None, typer.Option(help="also write the decision_examples table (Parquet) here")
    ] = None,
    max_depth: Annotated[int, typer.Option(help="longest relation path searched for labels")] = 3,
    max_iter: Annotated[int, typer.Option(help="training epochs (MLP)")] = 60,
    embed_model_path: Annotated[
        Path | None,
        typer.Option(
            help="local fastembed model folder (default: GRAPHWALK_EMBED_MODEL_PATH, else "
            "GRAPHWALK_EMBED_MODEL or the shared MiniLM)"
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Train a decider from labeled questions (weak supervision over relation paths) and/or traces."""
    _train(out, graph, path, dataset, split, hops, n, data_dir, traces, hold_out_templates,
           examples_out, max_depth, max_iter, embed_model_path, quiet)  # fmt: skip


def _train(
    out: Path,
    graph: str | None,
    questions: Path | None,
    dataset: str | None,
    split: str,
    hops: list[int] | None,
    n: int | None,
    data_dir: Path | None,
    traces: Path | None,
    hold_out: float,
    examples_out: Path | None,
    max_depth: int,
    max_iter: int,
    embed_path: Path | None,
    quiet: bool,
) -> None:
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from graphwalk_core.training.build import folder_trace_examples, labeled_sources
    from graphwalk_core.training.examples import weak_examples, write_examples
    from graphwalk_core.training.fit import FitConfig, fit_decider
    from graphwalk_core.training.graphs import GRAPH
    from graphwalk_core.training.templates import hold_out_templates

    if split == "test":
        raise InputError("train on dev (or your own) questions, never on test: --split test is refused")
    if dataset is None and questions is None and traces is None:
        raise InputError("nothing to learn from: give --dataset, --questions (with --graph) or --traces")
    config = FitConfig(max_iter=max_iter, name=out.name)
    check_folder(out, "--out")
    check_hops(hops)
    if not 0 <= hold_out < 1:
        raise InputError(f"--hold-out-templates must be at least 0 and below 1, got {hold_out}")
    if max_depth < 1:
        raise InputError(f"--max-depth must be at least 1, got {max_depth}")
    if dataset is None and (
        given := [f for f, v in (("--hops", hops), ("--n", n), ("--data-dir", data_dir)) if v is not None]
    ):
        verb = "picks" if len(given) == 1 else "pick"
        raise InputError(
            f"{', '.join(given)} {verb} questions of --dataset: a --questions file is read whole"
        )
    started = time.perf_counter()
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    examples = []
    unlabeled = 0
    graph_id = None
    with Progress(*columns, console=console, disable=quiet) as progress:
        if dataset is not None or questions is not None:

            async def label() -> tuple[list[Any], int, str | None]:
                store, labeled_questions, graph_id = await labeled_sources(
                    dataset=dataset,
                    questions=questions,
                    graph=graph,
                    split=split,
                    hops=hops,
                    n=n,
                    data_dir=data_dir,
                )
                task = progress.add_task("labeling questions", total=len(labeled_questions))
                found, unlabeled = await weak_examples(
                    store,
                    labeled_questions,
                    max_depth=max_depth,
                    progress=lambda k: progress.advance(task, k),
                )
                return found, unlabeled, graph_id

            # only the graph reads in the event loop: under asyncio.run a Ctrl-C waits for the next await,
            # so the fit below ran to its end (model written) before the command stopped
            found, unlabeled, graph_id = asyncio.run(label())
            examples += found
        if traces is not None:
            examples += folder_trace_examples(traces)
        if not examples and unlabeled:
            raise InputError(
                f"no decision examples to train on: none of the {unlabeled} questions has a path from its "
                f"start to a gold answer within {max_depth} hops of the graph"
            )
        held: list[str] = []
        if hold_out > 0:
            examples, held = hold_out_templates(examples, hold_out)
        if examples_out is not None:
            write_examples(examples, examples_out)
        embed_task = progress.add_task("embedding texts", total=None)
        fit_task = progress.add_task("fitting", total=max_iter)

        def tick(stage: str, done: int, total: int) -> None:
            progress.update(embed_task if stage == "embed" else fit_task, completed=done, total=total)

        report = fit_decider(
            examples,
            _embedder(embed_path),
            config=config,
            out=out,
            progress=tick,
            extra_manifest={GRAPH: graph_id, **({"held_out_templates": held} if held else {})},
        )
    typer.echo(_summary(report, unlabeled, time.perf_counter() - started))


def _embedder(embed_path: Path | None) -> Any:
    """The embedder the settings and ``--embed-model-path`` give (the shared MiniLM by default)."""
    from graphwalk_core.backends import Backends, settings_with

    return Backends(settings_with(embed_model_path=embed_path)).embedder
