"""``build_system``: a QA system by name for a dataset, or a SkippedSystem saying what is missing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from graphwalk_core.decisions.base import DecisionBackend
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Dataset
from graphwalk_core.eval.systems.base import QASystem, SkippedSystem
from graphwalk_core.eval.systems.documents import document_index
from graphwalk_core.eval.systems.graph_reader import GraphReaderSystem
from graphwalk_core.eval.systems.graphs import open_graph
from graphwalk_core.eval.systems.graphwalk import PRESETS, GraphwalkSystem, metaqa_glosses, preset_config
from graphwalk_core.eval.systems.iter_rag import IterRAGSystem
from graphwalk_core.eval.systems.rankers import (
    RANKER_OPTIONS,
    RANKERS,
    WALK_PPR,
    WALK_PPR_WALKER,
    WalkSeededSystem,
    build_ranker,
)
from graphwalk_core.eval.systems.vector_rag import VectorRAGSystem
from graphwalk_core.llm.base import LLMBackend
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.traversal.entry import NameEntryResolver

if TYPE_CHECKING:
    from graphwalk_core.eval.ingestion import PassageIngester  # ingestion stack: imported when used

SYSTEM_NAMES = (*PRESETS, "graph-reader", "vector-rag", "iter-rag", *RANKERS, WALK_PPR)
NEEDS_LLM = ("graph-reader", "vector-rag", "iter-rag")
NEEDS_DECIDER = (*PRESETS, "graph-reader", WALK_PPR)


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
    graph-ppr-walk also ``walk_weight``, ``walk_k`` and ``walker``, the walk preset).
    """
    decider, embedder, llm = args.get("decider"), args.get("embedder"), args.get("llm")
    overrides, skip_reason, label = args.get("overrides"), args.get("skip_reason"), args.get("label")
    if name not in SYSTEM_NAMES:
        raise InputError(f"unknown system {name!r}; choose one of {', '.join(SYSTEM_NAMES)}")
    options = dict(overrides or {})
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
        if walker_preset not in PRESETS:
            raise InputError(f"{WALK_PPR} walks with a preset ({', '.join(PRESETS)}), not {walker_preset!r}")
        walk_args: SystemArgs = {**args, "label": None}
        walk_args["overrides"] = {k: v for k, v in (overrides or {}).items() if k != "walker"}
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
            return VectorRAGSystem(index, llm, k=int(options.get("k", 5)))
        return IterRAGSystem(
            index,
            llm,
            k=int(options.get("k", 5)),
            max_calls=int(options.get("max_calls", 5)),
            max_lookups=int(options.get("max_lookups", 8)),
            max_docs=int(options.get("max_docs", 40)),
        )
    assert decider is not None and store is not None
    # per question: one with a gold start walks from it, one without is linked from its text
    starts = [q.gold_start is not None for q in dataset.questions]
    linking = options.pop("linking", "gold" if any(starts) else "resolve")
    preset = options.pop("walker", "relation-greedy" if name == "graph-reader" else name)
    read_from = options.pop("read_from", "passages" if knowledge.passages else "facts")
    for key in ("k", "max_calls", "max_lookups", "max_docs", *RANKER_OPTIONS):
        options.pop(key, None)
    config = preset_config(preset, glosses=metaqa_glosses(knowledge.source), **options)
    if linking not in ("gold", "resolve", "resolve-best"):
        raise InputError(f"unknown linking {linking!r}; use gold, resolve or resolve-best")
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
    )
    if name == "graph-reader":
        assert llm is not None
        return GraphReaderSystem(walker, llm, knowledge, read_from=read_from)
    return walker


def build_system(name: str, dataset: Dataset, **args: Unpack[SystemArgs]) -> QASystem:
    """:func:`build_system_async` from synchronous code."""
    return asyncio.run(build_system_async(name, dataset, **args))
