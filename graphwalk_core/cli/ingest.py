"""graphwalk ingest: bring a graph up to date with a source (files or a SQL database)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from graphwalk_core.cli.failures import graph_failure, unavailable
from graphwalk_core.errors import BackendError, GraphwalkError, InputError
from graphwalk_core.stores.base import GraphStore

if TYPE_CHECKING:
    from graphwalk_core.backends import Backends

ExtractorName = Literal["llm", "nlp"]
DeciderChoice = Literal["jev", "local", "fake"]
RoutingChoice = Literal["jev", "exact"]


async def _open_store(backends: Backends, graph: str) -> GraphStore:
    """The graph store (created when missing): a SQL URL, a SQLite file, or a Parquet folder. It must
    be writable: a read-only graph fails here, before any work."""
    from graphwalk_core.stores.open import TRIPLES_SUFFIXES, check_writable

    if "://" not in graph and Path(graph).suffix.lower() in TRIPLES_SUFFIXES:
        raise InputError(f"cannot ingest into a triples file ({graph}): use a SQLite file or a folder")
    store = backends.store(graph, create=True)
    try:
        await check_writable(store, graph)
    except GraphwalkError:
        await store.close()
        raise
    return store


def _graph_failure(exc: Exception, graph: str) -> BackendError:
    """A database error during the run (a lost connection, a restarted server, a lock never released) as an
    error naming the graph and the cause, instead of a traceback."""
    return graph_failure(
        exc, graph, "What was committed stays (every window before this one); run the command again to go on"
    )


async def _save_if_in_memory(store: GraphStore, graph: str) -> None:
    """A Parquet-folder graph lives in memory during the run: write it back."""
    from graphwalk_core.stores.memory import MemoryGraphStore

    if isinstance(store, MemoryGraphStore):
        try:
            store.save(graph)
        except OSError as exc:
            raise InputError(f"cannot write the graph folder {graph}: {exc.strerror or exc}") from None


async def _discard_if_empty(store: GraphStore) -> bool:
    """Whether ``store`` holds nothing at all (no element, no ledger): a failed first run leaves no file.
    A database that cannot tell (failing too) keeps its file, and the run's own error stays the one shown."""
    try:
        return await store.counts() == (0, 0) and not await store.metadata_keys()
    except unavailable():
        return False


def default_cache_path(graph: str) -> Path:
    """The extraction cache: ``<graph folder>/.graphwalk/extractions.sqlite``, else in ~/.cache."""
    if "://" in graph:
        from graphwalk_core.stores.sql_engine import parse_url

        url = parse_url(graph, "graph store")
        if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
            return Path(url.database).resolve().parent / ".graphwalk" / "extractions.sqlite"
        return Path.home() / ".cache" / "graphwalk" / "extractions.sqlite"
    return Path(graph).resolve().parent / ".graphwalk" / "extractions.sqlite"


async def _run(
    source_arg: str,
    graph: str,
    *,
    source_id: str | None,
    mapping: str | None,
    extractor_name: ExtractorName | None,
    decider_name: DeciderChoice | None,
    routing: RoutingChoice,
    chunk_chars: int,
    window: int | None,
    cache_path: Path | None,
    quiet: bool,
    allow_empty: bool = False,
) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from graphwalk_core.backends import Backends
    from graphwalk_core.decisions.base import close_decider
    from graphwalk_core.ingest.extraction.cache import ExtractionCache
    from graphwalk_core.ingest.extraction.choose import choose_extractor
    from graphwalk_core.ingest.pipeline import DEFAULT_WINDOW
    from graphwalk_core.ingest.pipeline import ingest as run_ingest
    from graphwalk_core.ingest.sources.specs import source_from_arg

    console = Console(quiet=quiet)
    backends = Backends()
    source = source_from_arg(source_arg, source_id=source_id, mapping=mapping)
    # the LLM extracts when asked to, or by default with jev routing (which escalates to it)
    wants_llm = extractor_name == "llm" or (extractor_name is None and routing == "jev")
    llm = backends.llm if wants_llm else None
    if extractor_name == "llm" and llm is None:
        raise typer.BadParameter("--extractor llm needs GRAPHWALK_LLM_MODEL", param_hint="--extractor")
    extractor = choose_extractor(extractor_name, llm)
    if routing == "exact" and decider_name is not None:
        raise InputError("--decider picks who routes with --routing jev: --routing exact uses none")
    if cache_path is not None and not extractor.cacheable:
        raise InputError(
            "--cache holds the llm extractor's answers: the nlp extractor this run uses caches nothing"
        )
    decider = embedder = None
    if routing == "jev":
        embedder = backends.embedder
        decider = backends.decider(decider_name, embedder=embedder)
    new_file = "://" not in graph and not Path(graph).exists()
    store = await _open_store(backends, graph)
    cache = ExtractionCache(cache_path or default_cache_path(graph)) if extractor.cacheable else None
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    failed = True
    try:
        with Progress(*columns, console=console, transient=True) as bar:
            tasks: dict[str, int] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            report = await run_ingest(
                source,
                store,
                extractor=extractor,
                decider=decider,
                embedder=embedder,
                llm=llm,
                routing=routing,
                cache=cache,
                max_chars=chunk_chars,
                window=window or DEFAULT_WINDOW,
                progress=progress,
                exclusive_origin=source_id is None,  # an id from the path: another folder may share it
                allow_empty=allow_empty,
            )
        await _save_if_in_memory(store, graph)
        failed = False
    except unavailable() as exc:  # the database, not the data: a bug (an IntegrityError) keeps its traceback
        raise _graph_failure(exc, graph) from None
    finally:
        if cache is not None:
            cache.close()
        await close_decider(decider)
        discard = failed and new_file and await _discard_if_empty(store)
        await store.close()
        if discard and Path(graph).is_file():
            Path(graph).unlink()
    routed = f"routing {report.routing}" + (f" with {decider.model_id}" if decider is not None else "")
    table = Table(title=escape(f"ingest {source.source_id} ({report.extractor}, {routed})"))
    table.add_column("")
    table.add_column("")
    for label, value in report.summary_rows():
        table.add_row(label, value)
    console.print(table)
    for item in report.skipped:
        console.print(f"[yellow]skipped[/yellow] {escape(item.describe())}", highlight=False)
    for doc_id in report.failed:
        console.print(f"[red]incomplete[/red] {escape(doc_id)} (retried next run)", highlight=False)
    return 1 if report.failed else 0


def ingest(
    source: Annotated[
        str, typer.Argument(help="a folder or file (.txt .md .json .jsonl .csv), or a SQLAlchemy URL")
    ],
    graph: Annotated[
        str,
        typer.Option(
            "--graph",
            "-g",
            help="graph store: a SQL URL, a SQLite file or a Parquet folder (created when missing)",
        ),
    ],
    source_id: Annotated[str | None, typer.Option(help="source id (default: from the path)")] = None,
    mapping: Annotated[str | None, typer.Option(help="YAML mapping for records / tables")] = None,
    extractor: Annotated[
        ExtractorName | None,
        typer.Option(
            help="llm | nlp (default: llm when GRAPHWALK_LLM_MODEL is set and --routing is jev, else nlp)"
        ),
    ] = None,
    decider: Annotated[
        DeciderChoice | None, typer.Option(help="jev | local | fake (default: jev with a key, else local)")
    ] = None,
    routing: Annotated[RoutingChoice, typer.Option(help="jev (decisions) | exact (names only)")] = "jev",
    chunk_chars: Annotated[int, typer.Option(min=50, help="chunk size in characters")] = 2000,
    window: Annotated[
        int | None,
        typer.Option(min=1, help="documents routed and committed together (default 256; docs/guarantees.md)"),
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            help="the llm extractor's cache file (default: .graphwalk/extractions.sqlite beside GRAPH, "
            "under ~/.cache/graphwalk for a database server)"
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no output")] = False,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="a SOURCE listing nothing retracts all its documents (else an error: an unmounted share?)",
        ),
    ] = False,
) -> None:
    """Ingest SOURCE into GRAPH: unchanged documents are skipped, changed/deleted ones retracted."""
    try:
        code = asyncio.run(
            _run(
                source,
                graph,
                source_id=source_id,
                mapping=mapping,
                extractor_name=extractor,
                decider_name=decider,
                routing=routing,
                chunk_chars=chunk_chars,
                window=window,
                cache_path=cache,
                quiet=quiet,
                allow_empty=allow_empty,
            )
        )
    except GraphwalkError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


if __name__ == "__main__":  # ``python -m graphwalk_core.cli.ingest``: the command without the rest of the CLI
    typer.run(ingest)
