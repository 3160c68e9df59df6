"""``graphwalk query GRAPH QUESTION``: walk a graph to answer one question."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, get_args

import typer
from rich.console import Console
from rich.markup import escape

from graphwalk_core.cli.options import check_decider_model, choice
from graphwalk_core.errors import GraphwalkError, InputError
from graphwalk_core.files import write_text_atomic
from graphwalk_core.model import NodeId
from graphwalk_core.settings import DeciderName, get_settings
from graphwalk_core.traversal.answers import WalkResult
from graphwalk_core.traversal.config import HopMode, Strategy, TraversalConfig
from graphwalk_core.traversal.trace import render_trace


async def _run(
    graph: str,
    question: str,
    start: list[NodeId],
    config: TraversalConfig,
    decider_name: str | None,
    decider_model: Path | None = None,
) -> tuple[WalkResult, dict[NodeId, str]]:
    """The walk's result and the names of its start and witness nodes (an ingested graph's ids are
    hashes, so the printout names them)."""
    from graphwalk_core.backends import Backends, settings_with
    from graphwalk_core.decisions.base import close_decider
    from graphwalk_core.stores.base import node_names
    from graphwalk_core.training.graphs import walk_note
    from graphwalk_core.traversal.ask import answer
    from graphwalk_core.traversal.engine import Traverser

    backends = Backends(settings_with(decider_model=decider_model))
    store = backends.store(graph)
    decider = None
    try:
        embedder = backends.embedder
        decider = backends.decider(decider_name, embedder=embedder)
        if note := await walk_note(decider, graph, store):
            Console(stderr=True).print(f"[yellow]warning:[/yellow] {escape(note)}", soft_wrap=True)
        walker = Traverser(store, decider, embedder, config)
        asked = await answer(walker, question, start)
        if asked.result is None:
            if (await store.counts())[0] == 0:
                from graphwalk_core.stores.sql_engine import redact_location

                raise InputError(
                    f"the graph {redact_location(graph)} holds no nodes: import or ingest into it first"
                )
            raise InputError("no graph node is named in the question: pass --start NODE_ID")
        result = asked.result
        hops = [hop for found in result.answers for hop in found.witness]
        ids = list(dict.fromkeys([*result.start, *(n for hop in hops for n in (hop.source, hop.target))]))
        return result, await node_names(store, ids)
    finally:
        await close_decider(decider)
        await store.close()


def print_result(result: WalkResult, console: Console, names: Mapping[NodeId, str] | None = None) -> None:
    """How each start was found (when resolved from the question), answers with their witness paths,
    then the readable trace; nodes by their ``names`` (by id where a name is missing)."""
    named = names or {}
    start = [named.get(node, node) for node in result.start]
    head = f"{result.status}  decider={result.decider}  start={start}"
    console.print(f"[bold]status[/bold] {escape(head)}")
    for link in result.trace.links:
        guess = link.how in ("fuzzy", "embedding")
        line = escape(f"start: {named.get(link.node_id, link.name)} ({link.explain()})")
        console.print(f"[yellow]{line}[/yellow]" if guess else line, soft_wrap=True)
    if result.abort_reason:
        console.print(f"[yellow]aborted:[/yellow] {escape(result.abort_reason)}")
    if result.error:
        console.print(f"[red]error:[/red] {escape(result.error)}")
    for rank, answer in enumerate(result.answers, start=1):
        shown = ", ".join(answer.names[:10]) + (
            f" ... ({len(answer.names)})" if len(answer.names) > 10 else ""
        )
        console.print(
            f"{rank}. [green]{escape(shown)}[/green] score={answer.score:.3f} votes={answer.votes} "
            f"({answer.terminated_by})"
        )
        for hop in answer.witness:
            arrow = f"--{hop.relation}-->" if hop.direction == "out" else f"<--{hop.relation}--"
            source, target = named.get(hop.source, hop.source), named.get(hop.target, hop.target)
            console.print(
                f"     {escape(f'{source} {arrow} {target}')}  [dim]{hop.edge_id} "
                f"{escape(str(hop.source_ids))}[/dim]"
            )
    render_trace(result.trace, console, start=start)


def _config(
    preset: str | None,
    strategy: str | None,
    hop_mode: str | None,
    beam_width: int | None,
    glosses: str | None,
) -> TraversalConfig:
    """The walk's config: an eval preset's (see ``eval.systems.graphwalk.preset_config``), or the engine's
    defaults with ``strategy`` and ``hop_mode``. The eval package (~0.7 s of imports) loads only for
    a preset or glosses. A ``beam_width`` a walk other than beam would not use is an InputError."""
    relation_glosses: dict[str, str] = {}
    if glosses:
        from graphwalk_core.eval.systems.graphwalk import metaqa_glosses

        relation_glosses = metaqa_glosses(choice(glosses, ("metaqa",), "--glosses"))
    width = {} if beam_width is None else {"beam_width": beam_width}
    if preset is None:
        config = TraversalConfig(
            strategy=choice(strategy or "greedy", get_args(Strategy), "--strategy"),  # type: ignore[arg-type]
            hop_mode=choice(hop_mode or "entity", get_args(HopMode), "--hop-mode"),  # type: ignore[arg-type]
            relation_glosses=relation_glosses,
            **width,
        )
    else:
        if strategy is not None or hop_mode is not None:
            raise InputError("--preset sets the strategy and the hop mode: drop --strategy and --hop-mode")
        from graphwalk_core.eval.systems.graphwalk import PRESETS, preset_config

        config = preset_config(choice(preset, tuple(PRESETS), "--preset"), glosses=relation_glosses, **width)
    if beam_width is not None and config.strategy != "beam":
        raise InputError(
            f"--beam-width sets a beam walk's width: this walk is {config.strategy} (--strategy beam, or a "
            "-beam --preset)"
        )
    return config


def _check_trace(path: Path, graph: str) -> None:
    """An InputError, before any walk, when ``--trace`` cannot be a file (a folder, or under a file) or
    is the graph's own file (a SQLite URL's too), or in its folder."""
    from graphwalk_core.stores.sql_engine import parse_url, sqlite_file

    if path.is_dir():
        raise InputError(f"--trace {path} is a folder, not a file")
    if taken := next((p for p in path.parents if p.exists() and not p.is_dir()), None):
        raise InputError(f"--trace {path}: {taken} is a file")
    held = sqlite_file(parse_url(graph, "graph store")) if "://" in graph else Path(graph)
    if (
        held is not None
        and held.exists()
        and any(p.exists() and p.samefile(held) for p in (path, *path.parents))
    ):
        raise InputError(f"--trace {path} would write over the graph {graph}")


def query(
    graph: Annotated[str, typer.Argument(help="graph: triples .txt, Parquet folder, .db file or URL")],
    question: Annotated[str, typer.Argument(help="the question to answer")],
    start: Annotated[
        list[str] | None,
        typer.Option(
            "--start",
            help="start node: its id, or a node's exact name or alias (repeatable); "
            "default: from the question",
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help="an eval system's whole walk config: relation-greedy | relation-beam | entity-greedy | "
            "entity-beam (instead of --strategy and --hop-mode)"
        ),
    ] = None,
    strategy: Annotated[str | None, typer.Option(help="greedy | beam | sample (default: greedy)")] = None,
    beam_width: Annotated[
        int | None, typer.Option("--beam-width", min=1, help="beams a beam walk keeps per depth (default: 3)")
    ] = None,
    hop_mode: Annotated[
        str | None, typer.Option("--hop-mode", help="entity | relation (default: entity)")
    ] = None,
    glosses: Annotated[
        str | None,
        typer.Option(
            help="relation glosses the decider reads: metaqa (MetaQA's relations, as its evals use)"
        ),
    ] = None,
    decider: Annotated[
        str | None, typer.Option(help="jev | local | trained | fake (default: settings)")
    ] = None,
    decider_model: Annotated[
        Path | None,
        typer.Option(
            "--decider-model",
            help="trained decider folder (default: GRAPHWALK_DECIDER_MODEL, else the warehouse's newest)",
        ),
    ] = None,
    trace: Annotated[Path | None, typer.Option("--trace", help="write the trace as JSON here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Answer QUESTION by walking GRAPH; prints answers, witness paths and the trace."""
    console = Console()
    try:
        config = _config(preset, strategy, hop_mode, beam_width, glosses)
        if trace is not None:
            _check_trace(trace, graph)
        if decider is not None:
            choice(decider, get_args(DeciderName), "--decider")
        check_decider_model(decider_model, decider, get_settings().resolved_decider())
        result, names = asyncio.run(_run(graph, question, list(start or []), config, decider, decider_model))
    except (GraphwalkError, ValueError) as err:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(code=2) from err
    if trace is not None:
        write_text_atomic(result.trace.model_dump_json(indent=2), trace)  # a traces folder is read whole
    if as_json:
        typer.echo(result.model_dump_json())
    else:
        print_result(result, console, names)
    if result.status == "error":
        raise typer.Exit(code=1)
