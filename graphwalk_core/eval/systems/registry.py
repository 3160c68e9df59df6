"""``build_system``: a QA system by name for a dataset, or a SkippedSystem saying what is missing."""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, Unpack

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from graphwalk_core.decisions.base import DecisionBackend, close_decider
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.errors import InputError, OptionError
from graphwalk_core.eval.datasets.base import Dataset
from graphwalk_core.eval.systems.base import QASystem, SkippedSystem
from graphwalk_core.eval.systems.documents import document_index
from graphwalk_core.eval.systems.graph_reader import GraphReaderSystem, ReadFrom
from graphwalk_core.eval.systems.graphs import open_graph
from graphwalk_core.eval.systems.graphwalk import (
    PRESETS,
    GraphwalkSystem,
    Linking,
    metaqa_glosses,
    preset_config,
)
from graphwalk_core.eval.systems.iter_rag import IterRAGSystem
from graphwalk_core.eval.systems.rankers import (
    RANKERS,
    WALK_PPR,
    WALK_PPR_WALKER,
    GraphRankerOptions,
    RankerOptions,
    Routing,
    TypedPathOptions,
    WalkSeededSystem,
    build_ranker,
)
from graphwalk_core.eval.systems.vector_rag import VectorRAGSystem
from graphwalk_core.llm.base import LLMBackend
from graphwalk_core.ranking.ppr import PPRProfile
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.entry import NameEntryResolver

if TYPE_CHECKING:
    from graphwalk_core.eval.ingestion import PassageIngester  # ingestion stack: imported when used

SYSTEM_NAMES = (*PRESETS, "graph-reader", "vector-rag", "iter-rag", *RANKERS, WALK_PPR)
NEEDS_LLM = ("graph-reader", "vector-rag", "iter-rag")
NEEDS_DECIDER = (*PRESETS, "graph-reader", WALK_PPR)


def _known_preset(value: str) -> str:
    if value not in PRESETS:
        raise ValueError(f"choose a walk preset: {', '.join(PRESETS)}")
    return value


Preset = Annotated[str, AfterValidator(_known_preset)]


class WalkOptions(BaseModel):
    """A walk's ``--set`` options besides TraversalConfig fields (linking's default: see build)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    linking: Linking = "gold"
    routing: Routing = "exact"


class ReaderOptions(WalkOptions):
    """graph-reader's: also the walk preset it reads after and what it reads."""

    walker: Preset = "relation-greedy"
    read_from: ReadFrom = "facts"


class WalkPPROptions(GraphRankerOptions):
    """graph-ppr-walk's (with PPRProfile and TraversalConfig fields): the walk preset and its linking."""

    walker: Preset = WALK_PPR_WALKER
    linking: Linking = "gold"


class RAGOptions(BaseModel):
    """vector-rag's ``--set`` options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: documents retrieved
    k: int = Field(default=5, ge=1)


class IterRAGOptions(RAGOptions):
    """iter-rag's: also its reader calls, names looked up per step and documents in context."""

    max_calls: int = Field(default=5, ge=1)
    max_lookups: int = Field(default=8, ge=1)
    max_docs: int = Field(default=40, ge=1)


#: The models whose fields each system takes as ``--set`` options (a PPRProfile's ``name`` excepted).
OPTION_MODELS: dict[str, tuple[type[BaseModel], ...]] = {
    **{preset: (WalkOptions, TraversalConfig) for preset in PRESETS},
    "graph-reader": (ReaderOptions, TraversalConfig),
    "vector-rag": (RAGOptions,),
    "iter-rag": (IterRAGOptions,),
    "graph-ppr": (GraphRankerOptions, PPRProfile),
    "typed-path": (TypedPathOptions,),
    "dense": (RankerOptions,),
    WALK_PPR: (WalkPPROptions, PPRProfile, TraversalConfig),
}


def _check_name(name: str) -> None:
    if name not in SYSTEM_NAMES:
        raise InputError(f"unknown system {name!r}; choose one of {', '.join(SYSTEM_NAMES)}")


def option_keys(name: str) -> tuple[str, ...]:
    """The ``--set`` keys system ``name`` takes."""
    _check_name(name)
    fields = (f for model in OPTION_MODELS[name] for f in model.model_fields if f != "name")
    return tuple(dict.fromkeys(fields))


def _unknown_key(key: str, takes: Mapping[str, tuple[str, ...]]) -> OptionError:
    close = difflib.get_close_matches(key, [k for keys in takes.values() for k in keys], n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    if len(takes) == 1:
        ((name, keys),) = takes.items()
        return OptionError(
            "unknown {overrides} key {key!r}{hint}: {name} takes {keys}",
            key=key,
            hint=hint,
            name=name,
            keys=", ".join(keys),
        )
    each = "; ".join(f"{name} takes {', '.join(keys)}" for name, keys in takes.items())
    return OptionError(
        "unknown {overrides} key {key!r}{hint}: no system of this run takes it ({each})",
        key=key,
        hint=hint,
        each=each,
    )


def _bad_value(name: str, given: Mapping[str, Any], exc: ValidationError) -> OptionError:
    error = exc.errors()[0]
    key = error["loc"][0] if error["loc"] else None
    shown = ", ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in given.items() if key in (None, k)
    )
    return OptionError(
        "bad {overrides} {shown} for {name}: {why}",
        shown=shown,
        name=name,
        why=error["msg"].removeprefix("Value error, "),
    )


def system_options(name: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` checked as system ``name``'s ``--set`` options, parsed (``"5"`` -> 5).

    An unknown key, or a value the option does not take, is an InputError naming it.
    """
    keys = option_keys(name)
    for key in values:
        if key not in keys:
            raise _unknown_key(key, {name: keys})
    out: dict[str, Any] = {}
    for model in OPTION_MODELS[name]:
        given = {k: v for k, v in values.items() if k in model.model_fields}
        try:
            checked = model.model_validate(given)
        except ValidationError as exc:
            raise _bad_value(name, given, exc) from exc
        out |= {k: getattr(checked, k) for k in given}
    return out


def options_by_system(names: Sequence[str], values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each system's share of one run's ``--set`` options (one ``--set`` serves every system), checked
    before anything runs: a key no system of the run takes, or a bad value, is an InputError."""
    takes = {name: option_keys(name) for name in dict.fromkeys(names)}
    for key in values:
        if not any(key in keys for keys in takes.values()):
            raise _unknown_key(key, takes)
    return {
        name: system_options(name, {k: v for k, v in values.items() if k in keys})
        for name, keys in takes.items()
    }


async def dataset_graph(
    dataset: Dataset, *, decider: DecisionBackend | None, embedder: Embedder | None, routing: str = "exact"
) -> tuple[GraphStore, PassageIngester | None]:
    """The dataset's graph: its triples, else its passages ingested (NLP extractor, exact routing)."""
    if dataset.knowledge.graph == "triples":
        return await open_graph(dataset.knowledge), None
    from graphwalk_core.eval.ingestion import PassageIngester

    ingester = PassageIngester(
        source_id=dataset.knowledge.source,
        routing=routing,
        decider=decider,
        embedder=embedder,  # type: ignore[arg-type]
    )
    store = await open_graph(dataset.knowledge, ingest=ingester, ingest_key=ingester.key())
    return store, ingester


class SystemArgs(TypedDict, total=False):
    """What :func:`build_system` takes besides the name and dataset (a missing backend is None)."""

    decider: DecisionBackend | None
    embedder: Embedder | None
    llm: LLMBackend | None
    overrides: dict[str, Any] | None
    skip_reason: dict[str, str] | None
    #: the system's name in results (default: its preset), e.g. ``relation-greedy-trained``
    label: str | None


async def build_system_async(name: str, dataset: Dataset, **args: Unpack[SystemArgs]) -> QASystem:
    """Build system ``name`` (see ``SYSTEM_NAMES``) for ``dataset``.

    A system whose backend is missing (no LLM for vector-rag/iter-rag/graph-reader, no decider for the
    walks) comes back as a ``SkippedSystem`` with the reason (``skip_reason`` may word it, e.g. "no Jev
    key"). ``overrides`` holds TraversalConfig fields (``show_types=False``, ``beam_width=5``) and
    ``linking`` (gold, the default when any question has a start: each question walks from its own
    start, one without is linked from its text; resolve|resolve-best: every question is linked from
    its text), ``k``, ``read_from`` (facts|passages), ``walker``
    (graph-reader's preset), ``routing`` (exact|jev ingestion routing) and ``max_calls``,
    ``max_lookups``, ``max_docs`` (iter-rag); for the rankers ``k`` (passages returned, default 10),
    ``profile`` (typed-path: ``typed-path/v1-hybrid|-lexical|-vector``) and any ``PPRProfile`` field
    (graph-ppr: ``damping``, ``dense_k``, ``dense_weight``, ``title_weight``, ``relation_weight``;
    graph-ppr-walk also ``walk_weight``, ``walk_k`` and ``walker``, the walk preset). The system's
    keys are :func:`option_keys`; another key or a bad value is an InputError, also for a system
    that is then skipped (:func:`options_by_system` splits one run's options among its systems).
    """
    decider, embedder, llm = args.get("decider"), args.get("embedder"), args.get("llm")
    skip_reason, label = args.get("skip_reason"), args.get("label")
    checked = system_options(name, args.get("overrides") or {})
    options = dict(checked)
    reasons = skip_reason or {}
    if name in NEEDS_LLM and llm is None:
        return SkippedSystem(label or name, reasons.get("llm", "no LLM configured (set GRAPHWALK_LLM_MODEL)"))
    if name in NEEDS_DECIDER and decider is None:
        return SkippedSystem(label or name, reasons.get("decider", "no decider configured"))
    if name in ("vector-rag", "iter-rag", "dense") and embedder is None:
        return SkippedSystem(name, "no embedder configured")
    knowledge = dataset.knowledge
    if name in RANKERS or name == WALK_PPR:
        if not knowledge.passages:
            return SkippedSystem(name, f"{dataset.name} has no passages to rank")
        store, ingester = None, None
        if name != "dense":  # the rankers rank ingested passages (a triples KB has no passage provenance)
            text = knowledge.model_copy(update={"graph": "passages", "kb_path": None, "triples": ()})
            store, ingester = await dataset_graph(
                dataset.model_copy(update={"knowledge": text}),
                decider=decider,
                embedder=embedder,
                routing=options.pop("routing", "exact"),
            )
        ids = {
            "extractor": ingester.extractor.version if ingester is not None else None,
            "ingest": ingester.identity() if ingester is not None else None,
        }
        walker_preset = options.pop("walker", WALK_PPR_WALKER)
        ranker = await build_ranker(name, knowledge, store, embedder, options=options, ids=ids)
        if name != WALK_PPR:
            return ranker
        walk_args: SystemArgs = {**args, "label": None}
        walk_keys = option_keys(walker_preset)
        walk_args["overrides"] = {k: v for k, v in checked.items() if k in walk_keys}
        walker = await build_system_async(walker_preset, dataset, **walk_args)
        return WalkSeededSystem(ranker, walker)
    store: GraphStore | None = None
    extractor: dict[str, Any] = {}
    if name in NEEDS_DECIDER or not knowledge.passages:
        store, ingester = await dataset_graph(
            dataset, decider=decider, embedder=embedder, routing=options.pop("routing", "exact")
        )
        extractor = ingester.identity() if ingester is not None else {}
    if name in ("vector-rag", "iter-rag"):
        assert llm is not None and embedder is not None
        index = await document_index(knowledge, embedder, store=store)
        if name == "vector-rag":
            return VectorRAGSystem(index, llm, k=RAGOptions(**options).k)
        return IterRAGSystem(index, llm, **IterRAGOptions(**options).model_dump())
    assert decider is not None and store is not None
    # per question: one with a gold start walks from it, one without is linked from its text
    starts = [q.gold_start is not None for q in dataset.questions]
    linking = options.pop("linking", "gold" if any(starts) else "resolve")
    preset = options.pop("walker", "relation-greedy" if name == "graph-reader" else name)
    read_from = options.pop("read_from", "passages" if knowledge.passages else "facts")
    config = preset_config(preset, glosses=metaqa_glosses(knowledge.source), **options)
    best_only = linking == "resolve-best"
    entry = (
        None
        if linking == "gold" and all(starts)
        else await NameEntryResolver.from_store(store, embedder=embedder, best_only=best_only)
    )
    walker = GraphwalkSystem(
        label or (preset if name != "graph-reader" else f"graph-reader/{preset}"),
        store,
        decider,
        config=config,
        embedder=embedder,
        linking=linking,
        entry=entry,
        ingest=extractor,
        cites_passages=knowledge.graph != "triples",
    )
    if name == "graph-reader":
        assert llm is not None
        return GraphReaderSystem(walker, llm, knowledge, read_from=read_from)
    return walker


def build_system(name: str, dataset: Dataset, **args: Unpack[SystemArgs]) -> QASystem:
    """:func:`build_system_async` from synchronous code, in an event loop of its own: what the decider
    opened in it (ingesting passages with jev routing) is closed with it."""

    async def build() -> QASystem:
        try:
            return await build_system_async(name, dataset, **args)
        finally:
            await close_decider(args.get("decider"))

    return asyncio.run(build())
