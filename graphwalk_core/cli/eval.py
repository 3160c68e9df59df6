"""graphwalk eval: run QA systems over datasets, write Parquet results, summary.md and plots."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from graphwalk_core.errors import GraphwalkError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)

Systems = Annotated[
    list[str],
    typer.Option(
        "--system",
        help="relation-greedy|relation-beam|entity-greedy|entity-beam|graph-reader|vector-rag|iter-rag",
    ),
]
Split = Annotated[str, typer.Option(help="dev | test (tune on dev only)")]
N = Annotated[int | None, typer.Option("--n", help="seeded subset size per dataset")]
Seed = Annotated[int, typer.Option(help="subset seed")]
Decider = Annotated[str | None, typer.Option(help="jev | local | fake (default: settings)")]
DataDir = Annotated[
    Path | None, typer.Option(help="data folder (default: $GRAPHWALK_DATA_DIR or ../shared/data)")
]
Hub = Annotated[
    str | None,
    typer.Option(
        "--hub",
        help="REPO@SHA: a Hugging Face dataset repo at a full commit sha, laid out like ../shared/data "
        "(instead of --data-dir)",
    ),
]
HubEndpoint = Annotated[
    str | None, typer.Option(help="hub endpoint for --hub (default: $HF_ENDPOINT, else the public hub)")
]
Out = Annotated[Path, typer.Option(help="output folder (results.parquet, summary.md, runs/)")]
Concurrency = Annotated[int, typer.Option(help="questions in flight")]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="system option KEY=VALUE (TraversalConfig field, linking, k, ...); repeatable"
    ),
]
EmbedPath = Annotated[
    Path | None, typer.Option(help="local fastembed model folder (default: the shared MiniLM)")
]
LLMModel = Annotated[
    str | None, typer.Option(help="litellm model for readers/RAG (default: GRAPHWALK_LLM_MODEL)")
]
LLMBase = Annotated[str | None, typer.Option(help="LLM api base (default: GRAPHWALK_LLM_API_BASE)")]
Quiet = Annotated[bool, typer.Option(help="no progress bar")]


def parse_sets(items: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values parse as JSON when they can (``true``, ``3``, ``0.5``), else strings."""
    import json

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"--set expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _backends(decider: str | None, embed_path: Path | None, llm_model: str | None, llm_base: str | None):  # type: ignore[no-untyped-def]
    """(decider or None, embedder, llm or None, skip reasons) from settings and options."""
    from graphwalk_core.decisions.factory import make_decider
    from graphwalk_core.embeddings.factory import default_model_path, make_embedder
    from graphwalk_core.embeddings.hashing import HashingEmbedder
    from graphwalk_core.errors import ConfigError
    from graphwalk_core.llm.factory import make_llm
    from graphwalk_core.settings import get_settings

    settings = get_settings()
    update: dict[str, Any] = {}
    hashing = embed_path is not None and str(embed_path) == "hashing"
    if not hashing and (embed_path is not None or settings.embed_model_path is None):
        update["embed_model_path"] = embed_path or default_model_path()
    if llm_model:
        update["llm_model"] = llm_model
    if llm_base:
        update["llm_api_base"] = llm_base
    settings = settings.model_copy(update=update)
    embedder = HashingEmbedder() if hashing else make_embedder(settings)
    reasons: dict[str, str] = {}
    try:
        chosen = make_decider(settings, embedder=embedder, name=decider)
    except ConfigError as exc:
        chosen = None
        reasons["decider"] = str(exc)
    llm = make_llm(settings)
    if llm is None:
        reasons["llm"] = "no LLM configured (set GRAPHWALK_LLM_MODEL or --llm-model)"
    return chosen, embedder, llm, reasons


@dataclass(frozen=True)
class RunOptions:
    """The options every QA command (metaqa, hotpotqa, 2wiki, custom) hands to :func:`evaluate`."""

    out: Path
    decider: str | None
    embed_path: Path | None
    llm_model: str | None
    llm_base: str | None
    concurrency: int
    overrides: dict[str, Any]
    quiet: bool


def evaluate(datasets: list[Any], systems: list[str], options: RunOptions) -> Path:
    """Run every system on every dataset, then write the report into ``options.out``; returns summary.md."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from graphwalk_core.eval.report import results_table, write_report
    from graphwalk_core.eval.runner import run_eval
    from graphwalk_core.eval.systems.registry import build_system

    out, quiet, concurrency, overrides = options.out, options.quiet, options.concurrency, options.overrides
    console = Console(stderr=True)
    chosen, embedder, llm, reasons = _backends(
        options.decider, options.embed_path, options.llm_model, options.llm_base
    )
    tables, metas = [], []
    for ds in datasets:
        for name in systems:
            system = build_system(
                name, ds, decider=chosen, embedder=embedder, llm=llm, overrides=overrides, skip_reason=reasons
            )
            # a short-lived process: the graphs just built live until exit, so the cyclic GC need not
            # rescan them during the walks (~0.5 s per 1,000 MetaQA walks) or at exit (~1 s)
            gc.freeze()
            with Progress(
                TextColumn(f"{ds.name} · {name}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("F1 {task.fields[f1]}"),
                console=console,
                disable=quiet,
            ) as progress:
                task = progress.add_task("run", total=len(ds.questions), f1="—")
                scores: list[float] = []

                def tick(
                    record: Any, task: Any = task, scores: list[float] = scores, progress: Any = progress
                ) -> None:
                    if record.f1 is not None:
                        scores.append(record.f1)
                    progress.update(task, advance=1, f1=f"{sum(scores) / len(scores):.3f}" if scores else "—")

                run = run_eval(ds, system, out_dir=out, concurrency=concurrency, progress=tick)
            tables.append(results_table(run.results))
            metas.append(run.metadata.model_dump(mode="json"))
    paths = write_report(out, tables, run_metadata=metas)
    typer.echo(paths["summary_md"].read_text(encoding="utf-8"))
    console.print(f"wrote {out}/results.parquet, summary.parquet, summary.md and plots")
    return paths["summary_md"]


def _guard(fn: Any) -> Any:
    """Turn graphwalk errors into a clean exit with the message."""
    try:
        return fn()
    except GraphwalkError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _load(name: str, **kwargs: Any) -> Any:
    from graphwalk_core.eval.datasets import load_dataset

    return load_dataset(name, **kwargs)


@app.command("metaqa")
def metaqa(
    system: Systems,
    out: Out,
    hops: Annotated[list[int] | None, typer.Option("--hops", help="1, 2 and/or 3 (repeatable)")] = None,
    split: Split = "dev",
    n: N = None,
    seed: Seed = 0,
    decider: Decider = None,
    data_dir: DataDir = None,
    hub: Hub = None,
    hub_endpoint: HubEndpoint = None,
    kb: Annotated[Path | None, typer.Option(help="the KB file (default: metaqa/kb.txt)")] = None,
    concurrency: Concurrency = 4,
    set_: Sets = None,
    embed_model_path: EmbedPath = None,
    llm_model: LLMModel = None,
    llm_api_base: LLMBase = None,
    quiet: Quiet = False,
) -> None:
    """MetaQA vanilla questions by hop count over kb.txt (the topic entity is the start)."""
    names = [f"metaqa-{h}hop" for h in hops or [1]]

    def run() -> Any:
        from graphwalk_core.eval.datasets.hub import resolve_data_dir

        root = resolve_data_dir(data_dir, hub, hub_endpoint, names, split)
        return evaluate(
            [_load(name, split=split, n=n, seed=seed, data_dir=root, kb=kb) for name in names],
            system,
            RunOptions(
                out, decider, embed_model_path, llm_model, llm_api_base, concurrency, parse_sets(set_), quiet
            ),
        )

    _guard(run)


def _text_command(dataset: str, doc: str) -> Any:
    def command(
        system: Systems,
        out: Out,
        file: Annotated[
            Path | None, typer.Option("--file", help="question file (default: the shared sample)")
        ] = None,
        split: Split = "dev",
        n: N = None,
        seed: Seed = 0,
        decider: Decider = None,
        data_dir: DataDir = None,
        hub: Hub = None,
        hub_endpoint: HubEndpoint = None,
        concurrency: Concurrency = 4,
        set_: Sets = None,
        embed_model_path: EmbedPath = None,
        llm_model: LLMModel = None,
        llm_api_base: LLMBase = None,
        quiet: Quiet = False,
    ) -> None:
        def run() -> Any:
            from graphwalk_core.eval.datasets.hub import resolve_data_dir

            root = resolve_data_dir(data_dir, hub, hub_endpoint, [dataset], split)
            return evaluate(
                [_load(dataset, split=split, n=n, seed=seed, data_dir=root, path=file)],
                system,
                RunOptions(
                    out,
                    decider,
                    embed_model_path,
                    llm_model,
                    llm_api_base,
                    concurrency,
                    parse_sets(set_),
                    quiet,
                ),
            )

        _guard(run)

    command.__doc__ = doc
    return command


app.command("hotpotqa")(
    _text_command(
        "hotpotqa", "HotpotQA distractor (IRCoT JSONL or original JSON) over its ingested paragraphs."
    )
)
app.command("2wiki")(
    _text_command("2wiki", "2WikiMultihopQA (official JSON) over the pooled evidence graph and passages.")
)


@app.command("custom")
def custom(
    system: Systems,
    out: Out,
    questions: Annotated[Path, typer.Option(help="CSV or JSONL: question, answers[, start, id, hops]")],
    kb: Annotated[Path | None, typer.Option(help="subject|relation|object triples file")] = None,
    corpus: Annotated[Path | None, typer.Option(help="[{title, text}] passage JSON (ingested)")] = None,
    n: N = None,
    seed: Seed = 0,
    decider: Decider = None,
    concurrency: Concurrency = 4,
    set_: Sets = None,
    embed_model_path: EmbedPath = None,
    llm_model: LLMModel = None,
    llm_api_base: LLMBase = None,
    quiet: Quiet = False,
) -> None:
    """Your own questions over a triples file (--kb) or a passage corpus (--corpus)."""
    _guard(
        lambda: evaluate(
            [_load("custom", n=n, seed=seed, path=questions, kb=kb, corpus=corpus)],
            system,
            RunOptions(
                out, decider, embed_model_path, llm_model, llm_api_base, concurrency, parse_sets(set_), quiet
            ),
        )
    )


@app.command("2wiki-retrieval")
def twowiki_retrieval(
    out: Out,
    corpus: Annotated[Path | None, typer.Option(help="passage corpus (default: 2wiki/corpus.json)")] = None,
    questions: Annotated[Path | None, typer.Option(help="questions with supporting_titles")] = None,
    corpus_subset: Annotated[
        int | None, typer.Option(help="passages kept: every supporting one + seeded distractors")
    ] = None,
    preset: Annotated[str, typer.Option(help="graphwalk preset for the walk")] = "entity-beam",
    n: N = None,
    seed: Seed = 0,
    decider: Decider = None,
    data_dir: DataDir = None,
    hub: Hub = None,
    hub_endpoint: HubEndpoint = None,
    concurrency: Concurrency = 4,
    set_: Sets = None,
    embed_model_path: EmbedPath = None,
    quiet: Quiet = False,
) -> None:
    """All-supporting-passages-retrieved rate of graphwalk (via provenance) vs dense top-k."""

    def run() -> None:
        import asyncio

        from graphwalk_core.eval.datasets.hub import resolve_data_dir
        from graphwalk_core.eval.retrieval import corpus_subset as subset
        from graphwalk_core.eval.retrieval import run_retrieval, write_retrieval_report

        root = resolve_data_dir(data_dir, hub, hub_endpoint, ["2wiki-retrieval"])
        ds = _load("2wiki-retrieval", n=n, seed=seed, data_dir=root, path=questions, corpus=corpus)
        ds = subset(ds, corpus_subset, seed)
        chosen, embedder, _, reasons = _backends(decider, embed_model_path, None, None)
        if chosen is None:
            raise typer.BadParameter(reasons.get("decider", "no decider"))
        report = asyncio.run(
            run_retrieval(
                ds,
                decider=chosen,
                embedder=embedder,
                preset=preset,
                concurrency=concurrency,
                overrides=parse_sets(set_),
                progress=None if quiet else lambda msg: typer.echo(msg, err=True),
            )
        )
        path = write_retrieval_report(report, out)
        typer.echo(path.read_text(encoding="utf-8"))

    _guard(run)


@app.command("report")
def report(out: Out) -> None:
    """Rebuild results.parquet, summary.md and plots from every run checkpointed under OUT/runs."""

    def run() -> None:
        from graphwalk_core.eval.report import report_from_runs

        paths = report_from_runs(out)
        typer.echo(paths["summary_md"].read_text(encoding="utf-8"))

    _guard(run)
