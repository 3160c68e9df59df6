"""``graphwalk graph``: import, export and inspect graphs.

A GRAPH is anything :func:`graphwalk_core.stores.open.open_store` opens: a SQLAlchemy URL, a
``.db``/``.sqlite`` file (SQL store) or a folder of Parquet tables (in-memory store).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphwalk_core.cli.failures import graph_failure, unavailable
from graphwalk_core.cli.options import guarded
from graphwalk_core.errors import InputError

if TYPE_CHECKING:
    from graphwalk_core.stores.memory import MemoryGraphStore

app = typer.Typer(no_args_is_help=True, help=__doc__)


class InputFormat(StrEnum):
    triples = "triples"
    parquet = "parquet"


class NodeTypes(StrEnum):
    generic = "generic"
    metaqa = "metaqa"


async def _write_graph(store: MemoryGraphStore, out: Path | str, *, replace: bool) -> tuple[int, int]:
    """Write an in-memory store to ``out`` (a Parquet folder, a SQLite file or a URL); a graph already
    there is an InputError unless ``replace``."""
    from graphwalk_core.stores.open import SQLITE_SUFFIXES, is_parquet_graph, open_store
    from graphwalk_core.stores.sql import SQLGraphStore
    from graphwalk_core.stores.sql_engine import redact_location

    text = str(out)
    if "://" not in text and Path(text).suffix.lower() not in SQLITE_SUFFIXES:
        _check_folder(Path(text), "import", f" (a SQLite graph is a {'/'.join(SQLITE_SUFFIXES)} file)")
        if is_parquet_graph(Path(text)) and not replace:
            raise _parquet_held(Path(text), "import")
        store.save(text)
        return await store.counts()
    new_file = "://" not in text and not Path(text).exists()
    target = open_store(text, create=True)
    assert isinstance(target, SQLGraphStore)
    written = False
    try:
        async with target.transaction():
            held, keys = await target.counts(), len(await target.metadata_keys())
            if not replace and (held != (0, 0) or keys):
                raise _held(redact_location(text), held, keys, "import")
            await target.clear()
            await target.upsert_many(
                [n async for n in store.iter_nodes()], [e async for e in store.iter_edges()]
            )
            for key in await store.metadata_keys():
                await target.set_metadata(key, await store.get_metadata(key))
        written = True
        return await target.counts()
    finally:
        await target.close()
        if new_file and not written:  # a failed first import leaves no empty graph file
            Path(text).unlink(missing_ok=True)


def _held(graph: str, counts: tuple[int, int], metadata: int, action: str) -> InputError:
    """The refusal to ``action`` (import, export) over what ``graph`` holds: nodes, edges and metadata
    entries (the ingest ledger among them; a graph whose documents gave no element holds only those)."""
    return InputError(
        f"{graph} already holds a graph ({counts[0]:,} nodes, {counts[1]:,} edges, {metadata:,} metadata "
        f"entries): pass --replace to replace it with the {action}"
    )


def _parquet_held(folder: Path, action: str) -> InputError:
    """:func:`_held` for the Parquet graph in ``folder``, counted from its tables' footers."""
    from graphwalk_core.stores.parquet import table_rows

    nodes, edges, metadata = (table_rows(folder, t) for t in ("nodes", "edges", "metadata"))
    return _held(str(folder), (nodes, edges), metadata, action)


@app.command("import")
@guarded
def import_graph(
    source: Annotated[Path, typer.Argument(help="a subject|relation|object triples file or Parquet folder")],
    out: Annotated[str, typer.Option("--out", "-o", help="GRAPH to write: Parquet folder, .db file or URL")],
    format: Annotated[InputFormat, typer.Option("--format", "-f", help="format of SOURCE")] = (
        InputFormat.triples
    ),
    source_id: Annotated[
        str | None, typer.Option(help="provenance source id of imported triples (default: file name)")
    ] = None,
    node_types: Annotated[
        NodeTypes, typer.Option(help="node types of imported triples: generic, or MetaQA's by relation")
    ] = NodeTypes.generic,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="replace the graph GRAPH holds (without it, a graph there is an error)"
        ),
    ] = False,
) -> None:
    """Import a graph from triples or Parquet tables into GRAPH (an empty or new one, or --replace)."""
    from graphwalk_core.stores.memory import MemoryGraphStore
    from graphwalk_core.stores.sql_engine import redact_location
    from graphwalk_core.stores.triples import read_triples

    try:
        _check_source(source, format)
        triples_only = (
            ("--source-id", source_id is not None),
            ("--node-types metaqa", node_types is NodeTypes.metaqa),
        )
        if format is InputFormat.parquet and (given := [flag for flag, on in triples_only if on]):
            raise InputError(
                f"{', '.join(given)} set what imported triples become: a Parquet graph keeps its own"
            )
        if format is InputFormat.triples:
            type_for = None
            if node_types is NodeTypes.metaqa:
                from graphwalk_core.eval.datasets.metaqa import metaqa_node_type as type_for
            store = MemoryGraphStore.from_triples(
                read_triples(source), source_id=source_id or source.name, node_type_for=type_for
            )
        else:
            store = MemoryGraphStore.load(source)
        nodes, edges = asyncio.run(_write_graph(store, out, replace=replace))
    except unavailable() as exc:  # the import is one transaction
        raise graph_failure(exc, out, "Nothing was imported; run the command again") from None
    typer.echo(f"wrote {nodes:,} nodes and {edges:,} edges to {redact_location(out)}")


def _check_source(source: Path, format: InputFormat) -> None:
    """An InputError when ``source`` is of the other kind than ``format`` reads (a folder for triples, a
    file for Parquet tables); one that is not there is the reader's error."""
    if format is InputFormat.triples and source.is_dir():
        raise InputError(f"{source} is a folder: pass --format parquet to import a Parquet graph folder")
    if format is InputFormat.parquet and source.is_file():
        raise InputError(
            f"{source} is a file: --format parquet imports a folder of Parquet tables (`graphwalk graph "
            "export` writes one from any graph)"
        )


@app.command("export")
@guarded
def export_graph(
    graph: Annotated[str, typer.Argument(help="GRAPH to read")],
    out: Annotated[Path, typer.Option("--out", "-o", help="a triples file or a Parquet folder")],
    format: Annotated[InputFormat, typer.Option("--format", "-f", help="format to write")] = (
        InputFormat.parquet
    ),
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="replace what OUT holds: a Parquet graph, or a file for triples (without it, either is an "
            "error)",
        ),
    ] = False,
) -> None:
    """Export GRAPH as Parquet tables or as a triples file."""
    from graphwalk_core.stores.base import named_triples, one_state
    from graphwalk_core.stores.open import open_store
    from graphwalk_core.stores.parquet import export_parquet
    from graphwalk_core.stores.triples import write_triples

    async def run() -> str:
        _check_export_target(graph, out, format, replace=replace)
        store = open_store(graph)
        try:
            async with one_state(store):  # what other processes commit meanwhile is not half in it
                if format is InputFormat.parquet:
                    await export_parquet(store, out)
                    nodes, edges = await store.counts()
                    return f"wrote {nodes:,} nodes and {edges:,} edges to {out}"
                triples = await named_triples(store)
            return f"wrote {write_triples(out, triples):,} triples to {out}"
        finally:
            await store.close()

    try:
        message = asyncio.run(run())
    except unavailable() as exc:
        raise graph_failure(exc, graph, "Run the command again") from None
    typer.echo(message)


def _check_folder(out: Path, action: str, hint: str = "") -> None:
    """An InputError when ``out``, where a Parquet ``action`` writes its folder of tables, is a file."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file: a Parquet {action} writes a folder of tables{hint}")


#: The first bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_export_target(graph: str, out: Path, format: InputFormat, *, replace: bool) -> None:
    """An InputError when ``out`` cannot take the export of ``graph``: a folder for triples, a file for
    Parquet tables, a graph database (the graph exported among them), which a triples file would replace;
    unless ``replace``, a file holding anything (for triples) or a folder holding another Parquet graph than
    ``graph``."""
    from graphwalk_core.stores.open import is_parquet_graph

    if format is InputFormat.parquet:
        _check_folder(out, "export")
        if replace or not is_parquet_graph(out):
            return
        if "://" in graph or not Path(graph).exists() or not out.samefile(graph):  # itself is no loss
            raise _parquet_held(out, "export")
        return
    if out.is_dir():
        raise InputError(f"{out} is a folder: a triples export writes a file")
    if out.is_file():
        with out.open("rb") as head:
            if head.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER:
                raise InputError(f"{out} is a graph database: export to another file")
        if not replace and out.stat().st_size:
            raise InputError(f"{out} holds a file already: pass --replace to replace it with the export")


async def graph_stats(graph: str, top: int) -> tuple[int, int, Counter[str], list[tuple[str, int]]]:
    """(nodes, edges, edges per relation, the ``top`` nodes by degree, named) of GRAPH."""
    from graphwalk_core.stores.base import edge_triples, node_names
    from graphwalk_core.stores.open import open_store

    store = open_store(graph)
    try:
        triples = await edge_triples(store)
        relations = Counter(relation for _, relation, _ in triples)
        degrees = Counter(source for source, _, _ in triples)
        degrees.update(target for _, _, target in triples)
        nodes, edges = await store.counts()
        ranked = sorted(degrees.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        names = await node_names(store, [node_id for node_id, _ in ranked])
    finally:
        await store.close()
    labels = [(_label(node_id, names.get(node_id, node_id)), degree) for node_id, degree in ranked]
    return nodes, edges, relations, labels


def _label(node_id: str, name: str) -> str:
    """A node as people read it: its name, with its id when that differs (an ingested graph's hash)."""
    return node_id if name == node_id else f"{name} ({node_id})"


@app.command("stats")
@guarded
def stats(
    graph: Annotated[str, typer.Argument(help="GRAPH to inspect")],
    top: Annotated[int, typer.Option(help="how many top-degree nodes to list", min=0)] = 10,
) -> None:
    """Node and edge counts, edges per relation and the highest-degree nodes of GRAPH."""
    try:
        nodes, edges, relations, ranked = asyncio.run(graph_stats(graph, top))
    except unavailable() as exc:
        raise graph_failure(exc, graph, "Run the command again") from None
    from graphwalk_core.stores.sql_engine import redact_url

    console = Console()
    # the graph on a line of its own (a table title wraps to the table's width), its password hidden
    console.print(f"graph {redact_url(graph)}", soft_wrap=True, highlight=False, markup=False)
    summary = Table()
    summary.add_column("measure")
    summary.add_column("value", justify="right")
    summary.add_row("nodes", f"{nodes:,}")
    summary.add_row("edges", f"{edges:,}")
    console.print(summary)
    by_relation = Table(title="edges per relation")
    by_relation.add_column("relation")
    by_relation.add_column("edges", justify="right")
    for relation, count in sorted(relations.items(), key=lambda kv: (-kv[1], kv[0])):
        by_relation.add_row(Text(relation), f"{count:,}")
    console.print(by_relation)
    hubs = Table(title=f"top {top} nodes by degree")
    hubs.add_column("node")
    hubs.add_column("degree", justify="right")
    for label, degree in ranked:
        hubs.add_row(Text(label), f"{degree:,}")
    console.print(hubs)
