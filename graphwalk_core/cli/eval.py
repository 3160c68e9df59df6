"""graphwalk eval: run QA systems over datasets, write Parquet results, summary.md and plots."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from graphwalk_core.cli.options import check_decider_model, check_folder, check_hops, choice, guarded
from graphwalk_core.errors import InputError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)

#: The systems ``--system`` takes (``eval.systems.registry.SYSTEM_NAMES``, named here so that ``--help``
#: does not import every system).
SYSTEM_CHOICES = (
    "relation-greedy",
    "relation-beam",
    "entity-greedy",
    "entity-beam",
    "graph-reader",
    "vector-rag",
    "iter-rag",
    "graph-ppr",
    "typed-path",
    "dense",
    "graph-ppr-walk",
)
Systems = Annotated[
    list[str],
    typer.Option("--system", help=f"repeatable; one of: {', '.join(SYSTEM_CHOICES)}"),
]
Out = Annotated[Path, typer.Option(help="output folder (results.parquet, summary.md, runs/)")]
N = Annotated[int | None, typer.Option("--n", help="seeded subset size per dataset (default: all)")]
Seed = Annotated[int, typer.Option(help="subset seed")]

#: The options the eval commands share, declared once: name -> (annotation, default).
OPTIONS: dict[str, tuple[Any, Any]] = {
    "split": (Annotated[str, typer.Option(help="dev | test (tune on dev only)")], "dev"),
    "decider": (
        Annotated[str | None, typer.Option(help="jev | local | trained | fake (default: settings)")],
        None,
    ),
    "decider_model": (
        Annotated[
            Path | None,
            typer.Option(
                help="trained decider folder (default: GRAPHWALK_DECIDER_MODEL, else the warehouse's newest)"
            ),
        ],
        None,
    ),
    "data_dir": (
        Annotated[
            Path | None, typer.Option(help="data folder (default: $GRAPHWALK_DATA_DIR or ../shared/data)")
        ],
        None,
    ),
    "hub": (
        Annotated[
            str | None,
            typer.Option(
                "--hub",
                help="REPO@SHA: a Hugging Face dataset repo at a full commit sha, laid out like "
                "../shared/data (instead of --data-dir)",
            ),
        ],
        None,
    ),
    "hub_endpoint": (
        Annotated[
            str | None,
            typer.Option(help="Hugging Face hub endpoint (default: $HF_ENDPOINT, else the public hub)"),
        ],
        None,
    ),
    "concurrency": (Annotated[int, typer.Option(min=1, help="questions in flight")], 4),
    "overrides": (
        Annotated[
            list[str] | None,
            typer.Option(
                "--set", help="system option KEY=VALUE (TraversalConfig field, linking, k, ...); repeatable"
            ),
        ],
        None,
    ),
    "embed_model_path": (
        Annotated[
            Path | None,
            typer.Option(
                help="local fastembed model folder (default: GRAPHWALK_EMBED_MODEL_PATH, else "
                "GRAPHWALK_EMBED_MODEL or the shared MiniLM; 'hashing': none)"
            ),
        ],
        None,
    ),
    "llm_model": (
        Annotated[
            str | None, typer.Option(help="litellm model for readers/RAG (default: GRAPHWALK_LLM_MODEL)")
        ],
        None,
    ),
    "llm_api_base": (
        Annotated[str | None, typer.Option(help="LLM api base (default: GRAPHWALK_LLM_API_BASE)")],
        None,
    ),
    "quiet": (Annotated[bool, typer.Option(help="no progress bar")], False),
}
#: Option groups: where the data comes from, and the backends and run settings.
DATA = ("split", "data_dir", "hub", "hub_endpoint")
RUN = (
    "decider",
    "decider_model",
    "concurrency",
    "overrides",
    "embed_model_path",
    "llm_model",
    "llm_api_base",
    "quiet",
)


@dataclass(frozen=True)
class Shared:
    """The shared options of one eval command (those it does not offer keep their defaults)."""

    split: str = "dev"
    decider: str | None = None
    decider_model: Path | None = None
    data_dir: Path | None = None
    hub: str | None = None
    hub_endpoint: str | None = None
    concurrency: int = 4
    overrides: list[str] | None = None
    embed_model_path: Path | None = None
    llm_model: str | None = None
    llm_api_base: str | None = None
    quiet: bool = False

    def data_root(self, names: list[str]) -> Path | None:
        from graphwalk_core.eval.datasets.hub import resolve_data_dir

        return resolve_data_dir(self.data_dir, self.hub, self.hub_endpoint, names, self.split)

    def backends(self, systems: list[str]) -> Any:
        """Decider, embedder and LLM from the settings and these options (see graphwalk_core.backends)."""
        from graphwalk_core.backends import Backends, settings_with
        from graphwalk_core.decisions.factory import DECIDER_NAMES

        settings = settings_with(
            embed_model_path=self.embed_model_path,
            llm_model=self.llm_model,
            llm_api_base=self.llm_api_base,
            decider_model=self.decider_model,
        )
        # a typo is an error; a decider named right but not configured (no Jev key) records skipped rows
        if self.decider is not None:
            choice(self.decider, DECIDER_NAMES, "--decider")
        check_decider_model(self.decider_model, self.decider, settings.resolved_decider())
        return Backends(settings, llm_setting="GRAPHWALK_LLM_MODEL or --llm-model").for_systems(
            systems, self.decider
        )

    def check_trained(self, datasets: list[Any]) -> None:
        """With a trained decider (``--decider-model``, else the warehouse's newest model), refuse to score
        questions that model learned from, and warn when it learned over another graph than theirs."""
        from graphwalk_core.backends import settings_with
        from graphwalk_core.training.graphs import datasets_note
        from graphwalk_core.training.store import learned_questions
        from graphwalk_core.warehouse import Warehouse
        from graphwalk_core.warehouse.models import latest_model

        settings = settings_with(decider_model=self.decider_model)
        if (self.decider or settings.resolved_decider()) != "trained":
            return
        warehouse = Warehouse(settings.warehouse)
        model = settings.decider_model
        seen = learned_questions(warehouse, datasets, model)
        if seen:
            which = f"the model {model}" if model is not None else f"the newest model of {warehouse.root}"
            raise InputError(
                f"{len(seen)} of these questions are ones {which} learned from (first: {seen[0]}): score "
                "questions it has not learned from (--split test)"
            )
        if note := datasets_note(model or latest_model(warehouse), datasets):
            typer.echo(f"warning: {note}", err=True)

    def run(self, out: Path) -> Any:
        from graphwalk_core.eval.evaluate import EvalRun

        check_folder(out, "--out")
        return EvalRun(out, self.concurrency, parse_sets(self.overrides), self.quiet)


def shared_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the ``OPTIONS`` named (after its own); it receives them as ``shared: Shared``."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "shared"]
        added = [
            inspect.Parameter(
                n, inspect.Parameter.KEYWORD_ONLY, annotation=OPTIONS[n][0], default=OPTIONS[n][1]
            )
            for n in names
        ]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            shared = Shared(**{n: kwargs.pop(n) for n in names})
            return fn(**kwargs, shared=shared)

        command.__signature__ = inspect.Signature([*own, *added])  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in (*own, *added)}
        return command

    return decorate


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


def _evaluate(datasets: list[Any], systems: list[str], out: Path, shared: Shared) -> None:
    from graphwalk_core.eval.evaluate import evaluate

    shared.check_trained(datasets)
    summary = evaluate(datasets, systems, shared.backends(systems), shared.run(out))
    typer.echo(summary.read_text(encoding="utf-8"))


def _load(name: str, **kwargs: Any) -> Any:
    from graphwalk_core.eval.datasets import load_dataset

    return load_dataset(name, **kwargs)


@app.command("metaqa")
@guarded
@shared_options(*DATA, *RUN)
def metaqa(
    system: Systems,
    out: Out,
    shared: Shared,
    hops: Annotated[
        list[int] | None, typer.Option("--hops", help="1, 2 and/or 3 (repeatable; default: 1)")
    ] = None,
    n: N = None,
    seed: Seed = 0,
    kb: Annotated[Path | None, typer.Option(help="the KB file (default: metaqa/kb.txt)")] = None,
    templates_from: Annotated[
        Path | None,
        typer.Option(
            help="keep, of the --n subset, the questions of the templates this trained decider was "
            "trained without"
        ),
    ] = None,
) -> None:
    """MetaQA vanilla questions by hop count over kb.txt (the topic entity is the start)."""
    names = [f"metaqa-{h}hop" for h in dict.fromkeys(hops or [1])]  # --hops 1 --hops 1: once

    check_hops(hops)
    root = shared.data_root(names)
    datasets = [_load(name, split=shared.split, n=n, seed=seed, data_dir=root, kb=kb) for name in names]
    if templates_from is not None:
        from graphwalk_core.training.templates import held_out_questions

        datasets = [held_out_questions(ds, templates_from) for ds in datasets]
    _evaluate(datasets, system, out, shared)


def _text_command(dataset: str, doc: str) -> Any:
    @guarded
    @shared_options(*DATA, *RUN)
    def command(
        system: Systems,
        out: Out,
        shared: Shared,
        path: Annotated[
            Path | None, typer.Option("--file", help="question file (default: the shared sample)")
        ] = None,
        n: N = None,
        seed: Seed = 0,
    ) -> None:
        root = shared.data_root([dataset])
        datasets = [_load(dataset, split=shared.split, n=n, seed=seed, data_dir=root, path=path)]
        _evaluate(datasets, system, out, shared)

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


@app.command("hf")
@guarded
@shared_options("hub_endpoint", *RUN)
def hf(
    system: Systems,
    out: Out,
    shared: Shared,
    repo: Annotated[str, typer.Argument(help="REPO@SHA: a Hugging Face dataset repo at a full commit sha")],
    split: Annotated[str, typer.Option(help="the dataset's split (e.g. validation)")] = "validation",
    config: Annotated[str | None, typer.Option(help="the dataset's config name, if it has several")] = None,
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            help="FIELD=COLUMN (question, answers, id, passages, supporting, title, text); repeatable",
        ),
    ] = None,
    stream: Annotated[
        bool, typer.Option(help="stream rows over HTTP (large splits; --n keeps the first N)")
    ] = False,
    n: N = None,
    seed: Seed = 0,
) -> None:
    """Any hub dataset (questions, answers, passages, supporting titles) via HF datasets and a column map."""

    from graphwalk_core.eval.datasets.hf import HubDatasetSpec

    spec = HubDatasetSpec.from_options(
        repo, split=split, config_name=config, columns=column, streaming=stream
    )
    ds = spec.load(n=n, seed=seed, endpoint=shared.hub_endpoint)
    _evaluate([ds], system, out, shared)


@app.command("custom")
@guarded
@shared_options(*RUN)
def custom(
    system: Systems,
    out: Out,
    shared: Shared,
    path: Annotated[
        Path, typer.Option("--questions", help="CSV or JSONL: question, answers[, start, id, hops]")
    ],
    kb: Annotated[Path | None, typer.Option(help="subject|relation|object triples file")] = None,
    corpus: Annotated[Path | None, typer.Option(help="[{title, text}] passage JSON (ingested)")] = None,
    n: N = None,
    seed: Seed = 0,
) -> None:
    """Your own questions over a triples file (--kb) or a passage corpus (--corpus)."""
    _evaluate([_load("custom", n=n, seed=seed, path=path, kb=kb, corpus=corpus)], system, out, shared)


@app.command("2wiki-retrieval")
@guarded
@shared_options(
    "data_dir",
    "hub",
    "hub_endpoint",
    "decider",
    "decider_model",
    "concurrency",
    "overrides",
    "embed_model_path",
    "quiet",
)
def twowiki_retrieval(
    out: Out,
    shared: Shared,
    system: Annotated[
        list[str] | None,
        typer.Option(
            "--system", help="systems to compare (default: the --preset walk, graph-ppr, typed-path, dense)"
        ),
    ] = None,
    corpus: Annotated[Path | None, typer.Option(help="passage corpus (default: 2wiki/corpus.json)")] = None,
    path: Annotated[Path | None, typer.Option("--questions", help="questions with supporting_titles")] = None,
    corpus_subset: Annotated[
        int | None, typer.Option(min=1, help="passages kept: every supporting one + seeded distractors")
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(help="the walk run when no --system is given (default: entity-beam)"),
    ] = None,
    n: N = None,
    seed: Seed = 0,
) -> None:
    """Recall@2/5/10 and all-supporting@10 of every retrieval system: a walk, the rankers, dense."""

    from graphwalk_core.eval.retrieval import corpus_subset as subset
    from graphwalk_core.eval.systems.graphwalk import PRESETS
    from graphwalk_core.eval.systems.rankers import RANKERS

    if preset is not None:
        choice(preset, tuple(PRESETS), "--preset")
    if system and preset is not None:
        raise InputError("--preset picks the walk run without --system: name the walk with --system")

    root = shared.data_root(["2wiki-retrieval"])
    ds = _load("2wiki-retrieval", n=n, seed=seed, data_dir=root, path=path, corpus=corpus)
    systems = system or [preset or "entity-beam", *RANKERS]
    _evaluate([subset(ds, corpus_subset, seed)], systems, out, shared)


@app.command("report")
@guarded
def report(out: Out) -> None:
    """Rebuild results.parquet, summary.md and plots from every run checkpointed under OUT/runs."""

    from graphwalk_core.eval.report import report_from_runs

    paths = report_from_runs(out)
    typer.echo(paths["summary_md"].read_text(encoding="utf-8"))
