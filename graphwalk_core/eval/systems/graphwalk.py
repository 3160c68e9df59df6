"""graphwalk as a QA system: presets (relation/entity × greedy/beam) with the v2 prompt knobs."""

from __future__ import annotations

import time
from typing import Any, Literal

from graphwalk_core.decisions.base import DecisionBackend, model_fingerprint
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Question
from graphwalk_core.eval.systems.base import SystemAnswer
from graphwalk_core.eval.systems.graphs import passage_of
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.traversal import ask
from graphwalk_core.traversal.answers import WalkResult
from graphwalk_core.traversal.config import METAQA_RELATION_GLOSSES, Budget, TraversalConfig
from graphwalk_core.traversal.engine import Traverser
from graphwalk_core.traversal.entry import EntryResolver
from graphwalk_core.traversal.name_vectors import NameVectors

#: gold: the dataset's start; resolve: every name mention; resolve-best: the top name candidate.
Linking = Literal["gold", "resolve", "resolve-best"]

#: The four walk presets: (hop mode, strategy).
PRESETS: dict[str, tuple[str, str]] = {
    "relation-greedy": ("relation", "greedy"),
    "relation-beam": ("relation", "beam"),
    "entity-greedy": ("entity", "greedy"),
    "entity-beam": ("entity", "beam"),
}

#: The v2 knobs, all on by default; each can be switched off through ``overrides``.
V2_KNOBS: dict[str, Any] = {"show_types": True, "stop_style": "literal", "answer_type": "hint"}


def preset_config(preset: str, *, glosses: dict[str, str] | None = None, **overrides: Any) -> TraversalConfig:
    """The TraversalConfig of a preset: v2 knobs on, no STOP at the start, 3 hops + STOP, 12 calls.

    ``glosses`` are relation glosses (MetaQA's by default when the graph is MetaQA); ``overrides`` are
    any TraversalConfig fields, e.g. ``show_types=False`` or ``beam_width=5``.
    """
    if preset not in PRESETS:
        raise InputError(f"unknown graphwalk preset {preset!r}; choose one of {', '.join(PRESETS)}")
    hop_mode, strategy = PRESETS[preset]
    fields: dict[str, Any] = {
        "hop_mode": hop_mode,
        "strategy": strategy,
        "allow_stop_at_start": False,
        # Capping a frontier ranks every name by query similarity (one embedding each): on MetaQA's hubs
        # that cost ~20 s a question and changed no dev answer, so presets leave frontiers whole (the
        # engine's node budget still bounds them).
        "max_frontier": 100_000,
        "budget": Budget(max_depth=4, max_decision_calls=12),
        **V2_KNOBS,
        "relation_glosses": glosses or {},
    }
    fields.update(overrides)
    try:
        return TraversalConfig(**fields)
    except ValueError as exc:
        raise InputError(f"invalid graphwalk config override: {exc}") from exc


def answers_of(result: WalkResult) -> list[str]:
    """The predicted answer names: the best answer's node set (one node in entity mode)."""
    return list(result.answers[0].names) if result.answers else []


def passages_of(result: WalkResult) -> list[str]:
    """Passage ids the walk reached via provenance: witness-path edge sources, best answer first."""
    seen: dict[str, None] = {}
    for answer in result.answers:
        paths = [answer.witness, *answer.witnesses.values()]
        for path in paths:
            for hop in path:
                for source_id in hop.source_ids:
                    seen.setdefault(passage_of(source_id), None)
    return list(seen)


class GraphwalkSystem:
    """Walks the graph from the question's gold start (``linking="gold"``; a question without one is
    linked by ``entry`` when given) or from resolved ones (``resolve*``)."""

    def __init__(
        self,
        name: str,
        store: GraphStore,
        decider: DecisionBackend,
        *,
        config: TraversalConfig,
        embedder: Embedder | None = None,
        linking: Linking = "gold",
        entry: EntryResolver | None = None,
        ingest: dict[str, Any] | None = None,
        names: NameVectors | None = None,
        cites_passages: bool = True,
    ) -> None:
        """``cites_passages``: the graph was ingested from passages, so the sources a walk reaches are
        passages (not over a triples KB)."""
        if linking != "gold" and entry is None:
            raise InputError(f"linking={linking!r} needs an entry resolver")
        self.name = name
        self.store = store
        self.decider = decider
        self.embedder = embedder
        self.config = config
        self.linking = linking
        self.entry = entry
        self.ingest = ingest or {}
        self.cites_passages = cites_passages
        self.traverser = Traverser(store, decider, embedder, config, names=names)

    def identity(self) -> dict[str, Any]:
        return {
            "system": self.name,
            "decider": self.decider.model_id,
            "decider_model": model_fingerprint(self.decider),
            "embedder": self.embedder.model_id if self.embedder is not None else None,
            "linking": self.linking,
            "config": self.config.model_dump(mode="json"),
            "extractor": self.ingest.get("extractor"),
            "ingest": self.ingest or None,
        }

    async def walk(self, question: Question) -> tuple[WalkResult | None, list[str] | None]:
        """The walk (None when no entry node was found) and the linked start's names (None when the
        gold start was given)."""
        if self.linking == "gold" and question.gold_start is not None:
            return (await ask.answer(self.traverser, question.text, [question.gold_start])).result, None
        if self.entry is None:
            raise InputError(f"question {question.id} has no gold start: use --set linking=resolve")
        asked = await ask.answer(self.traverser, question.text, resolver=self.entry)
        nodes = await self.store.get_nodes(asked.start)
        return asked.result, [nodes[s].name if s in nodes else s for s in asked.start]

    async def answer(self, question: Question) -> SystemAnswer:
        start = time.perf_counter()
        cites = self.cites_passages
        try:
            result, linked = await self.walk(question)
        except InputError as exc:
            return SystemAnswer(
                status="error", error=str(exc), latency_s=time.perf_counter() - start, cites_passages=cites
            )
        if result is None:
            latency = time.perf_counter() - start
            return SystemAnswer(linked_start=linked, latency_s=latency, cites_passages=cites)
        answer = walk_answer(result, linked=linked, latency_s=time.perf_counter() - start)
        passages = await reached_passages(self.store, result)
        update = {"passages": passages, "latency_s": time.perf_counter() - start, "cites_passages": cites}
        return answer.model_copy(update=update)


async def reached_passages(store: GraphStore, result: WalkResult) -> list[str]:
    """Passages a walk reached: its witness-path edge sources, then the start and answer nodes' sources."""
    ranked = passages_of(result)
    node_ids = list(dict.fromkeys([*result.start, *(n for a in result.answers for n in a.node_ids)]))
    nodes = await store.get_nodes(node_ids)
    for node_id in node_ids:
        node = nodes.get(node_id)
        if node is not None:
            ranked += [passage_of(p.source_id) for p in node.provenance]
    return list(dict.fromkeys(ranked))


def walk_answer(result: WalkResult, *, linked: list[str] | None, latency_s: float) -> SystemAnswer:
    """A SystemAnswer from a walk: answers, calls, tokens, reported cost, passages and the trace."""
    totals = result.trace.totals
    return SystemAnswer(
        answers=answers_of(result),
        latency_s=latency_s,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        cost_usd=totals.cost_usd,
        decision_calls=totals.decision_calls,
        linked_start=linked,
        passages=passages_of(result),
        trace=compact_trace(result),
        status=result.status,
        error=result.error or result.abort_reason,
    )


def compact_trace(result: WalkResult) -> dict[str, Any]:
    """The walk in brief for the results file: start, answers' relation paths and each step's choice.

    (The full trace, with every option, is too large to keep per question; ``graphwalk query --trace``
    shows it.)
    """
    return {
        "start": result.start,
        "status": result.status,
        "terminated_by": result.terminated_by,
        "answers": [
            {"names": a.names[:10], "n": len(a.names), "score": a.score, "path": a.relation_path}
            for a in result.answers[:3]
        ],
        "steps": [
            {
                "depth": s.depth,
                "beam": s.beam_id,
                "at": s.current_names[:3] or s.current[:3],
                "chosen": s.chosen,
                "option": s.options.get(s.chosen) if s.chosen else None,
                "p": s.distribution.get(s.chosen) if s.chosen else None,
                "forced": s.forced,
            }
            for s in result.trace.steps
        ],
    }


def metaqa_glosses(source: str) -> dict[str, str]:
    """Relation glosses for a graph source (MetaQA's nine relations; none elsewhere)."""
    return dict(METAQA_RELATION_GLOSSES) if source == "metaqa" else {}
