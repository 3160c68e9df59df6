"""Passage rankers as eval systems: ``graph-ppr``, ``typed-path`` and ``dense`` return ranked passages.

They answer nothing (no reader: F1/EM/hits@1 are null, not 0): a question's ``passages`` are the
ranked top ``k`` (10 by default, the budget every retrieval measure uses) and its trace records the
ranking profile, the seeds, the coverage and stop reasons, and each hit's score and proving path.
``graph-ppr-walk`` (opt-in) walks first and seeds graph-ppr also with the passages the walk reached.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.eval.datasets.base import Knowledge, Question
from graphwalk_core.eval.systems.base import QASystem, SystemAnswer
from graphwalk_core.eval.systems.documents import DocumentIndex, document_index
from graphwalk_core.eval.systems.graphs import passage_of
from graphwalk_core.ranking.base import PassageRanker
from graphwalk_core.ranking.dense import DenseRanker
from graphwalk_core.ranking.lexical import BM25_IDENTITY, BM25Index
from graphwalk_core.ranking.passage_graph import PassageGraph
from graphwalk_core.ranking.ppr import PPRProfile, PPRRanker
from graphwalk_core.ranking.typed_path import DEFAULT_PROFILE, PROFILES, TypedPathRanker
from graphwalk_core.stores.base import GraphStore

RANKERS = ("graph-ppr", "typed-path", "dense")
#: graph-ppr seeded also by an entity walk's passages: opt-in, a system of its own (needs a decider).
WALK_PPR = "graph-ppr-walk"
#: Its profile: the walk's first ``walk_k`` passages by reciprocal rank at ``walk_weight`` of the seed mass
#: (the least harmful setting measured on the 51 2Wiki questions and HotpotQA dev together; no setting
#: helped graph-ppr on either, see docs/results.md).
WALK_PPR_PROFILE = {"name": "graph-ppr-walk/v1", "walk_weight": 0.05, "walk_k": 10}
#: The walk preset it runs (``--set walker=...`` picks another).
WALK_PPR_WALKER = "entity-greedy"
#: ``ingest.outputs.RoutingMode``, named here so that checking options does not import the ingest stack.
Routing = Literal["exact", "jev"]
#: Passages every ranker returns (the largest retrieval budget measured).
DEFAULT_K = 10


class RankerOptions(BaseModel):
    """``--set`` options of every ranker (``graph-ppr`` also takes PPRProfile fields)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: passages returned
    k: int = Field(default=DEFAULT_K, ge=1)


class GraphRankerOptions(RankerOptions):
    """Options of a ranker over ingested passages (``graph-ppr``)."""

    routing: Routing = "exact"


class TypedPathOptions(GraphRankerOptions):
    """``typed-path``'s options: also its profile."""

    profile: str = DEFAULT_PROFILE

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value not in PROFILES:
            raise ValueError(f"choose one of {', '.join(PROFILES)}")
        return value


_GRAPHS: dict[tuple[int, str], tuple[GraphStore, PassageGraph]] = {}
_BM25: dict[str, BM25Index] = {}


class RankerSystem:
    """One passage ranker answering with its top ``k`` passages."""

    answers_question = False  # it retrieves: no answer scores, a failed question's included

    def __init__(self, name: str, ranker: PassageRanker, *, k: int = DEFAULT_K, ids: dict[str, Any]) -> None:
        self.name, self.ranker, self.k, self.ids = name, ranker, k, ids

    def identity(self) -> dict[str, Any]:
        return {"system": self.name, "profile": self.ranker.profile, "k": self.k, **self.ids}

    async def answer(self, question: Question) -> SystemAnswer:
        start = time.perf_counter()
        result = self.ranker.rank(question.text, self.k)
        return SystemAnswer(
            latency_s=time.perf_counter() - start,
            passages=result.passage_ids,
            answers_question=self.answers_question,
            trace=result.model_dump(mode="json", exclude_none=True),
        )


class WalkSeededSystem:
    """``graph-ppr-walk``: the walk answers first; graph-ppr then ranks with its passages as extra seeds."""

    name = WALK_PPR
    answers_question = False

    def __init__(self, ranker: RankerSystem, walker: QASystem) -> None:
        assert isinstance(ranker.ranker, PPRRanker)
        self.ranker, self.ppr, self.walker = ranker, ranker.ranker, walker

    def identity(self) -> dict[str, Any]:
        return {**self.ranker.identity(), "system": self.name, "walker": self.walker.identity()}

    async def answer(self, question: Question) -> SystemAnswer:
        start = time.perf_counter()
        walked = await self.walker.answer(question)
        result = self.ppr.rank(question.text, self.ranker.k, walk=walked.passages)
        trace = result.model_dump(mode="json", exclude_none=True)
        failed = walked.status == "error"  # the decider failed (an outage, a refused key): no walk seeds
        return walked.model_copy(
            update={
                "answers": [],
                "answers_question": self.answers_question,
                "latency_s": time.perf_counter() - start,
                "passages": result.passage_ids,
                "cites_passages": True,  # ranked passages, whatever graph the walk read
                "trace": {**trace, "walk": walked.trace, "walk_status": walked.status},
                "status": "error" if failed else "ok",
                "error": walked.error if failed else None,
            }
        )


def tuned(profile: PPRProfile, chosen: dict[str, Any]) -> PPRProfile:
    """``profile`` with the ``chosen`` parameters, named after those that differ from it (a profile's name
    pins its parameters): ``graph-ppr/v1+damping=0.7``."""
    changed = PPRProfile(**profile.model_dump() | chosen)
    diff = [f"{k}={v}" for k, v in sorted(changed.model_dump().items()) if v != getattr(profile, k)]
    return changed.model_copy(update={"name": f"{profile.name}+{','.join(diff)}"}) if diff else profile


async def passage_graph(store: GraphStore, knowledge: Knowledge) -> PassageGraph:
    """The ranking graph of ``store`` over ``knowledge``'s passages, built once per store."""
    key = (id(store), knowledge.key())
    if key not in _GRAPHS:
        ids, titles = [p.id for p in knowledge.passages], [p.title for p in knowledge.passages]
        graph = await PassageGraph.from_store(store, ids, titles, passage_of=passage_of)
        _GRAPHS[key] = (store, graph)
    return _GRAPHS[key][1]


async def bm25_index(knowledge: Knowledge) -> BM25Index:
    """BM25 over ``title text`` of every passage, built once per knowledge."""
    key = knowledge.key()
    if key not in _BM25:
        texts = [f"{p.title} {p.text}" for p in knowledge.passages]
        _BM25[key] = await asyncio.to_thread(BM25Index, texts)
    return _BM25[key]


async def build_ranker(
    name: str,
    knowledge: Knowledge,
    store: GraphStore | None,
    embedder: Embedder | None,
    *,
    options: dict[str, Any],
    ids: dict[str, Any],
) -> RankerSystem:
    """``graph-ppr`` (``options``: PPRProfile fields), ``typed-path`` (``profile``) or ``dense``.

    ``options`` are the ranker's own, validated (see ``registry.system_options``).
    """
    k = int(options.pop("k", DEFAULT_K))
    dense: DocumentIndex | None = (
        await document_index(knowledge, embedder, kind="passages") if embedder is not None else None
    )
    ids = {**ids, "embedder": embedder.model_id if embedder is not None else None}
    passage_ids = [p.id for p in knowledge.passages]
    if name == "dense":
        assert dense is not None
        return RankerSystem(name, DenseRanker(passage_ids, dense), k=k, ids=ids)
    assert store is not None
    graph = await passage_graph(store, knowledge)
    if name in ("graph-ppr", WALK_PPR):
        chosen = {key: v for key, v in options.items() if key in PPRProfile.model_fields}
        profile = tuned(PPRProfile(**(WALK_PPR_PROFILE if name == WALK_PPR else {})), chosen)
        ranker: PassageRanker = await asyncio.to_thread(PPRRanker, graph, dense, profile)
        return RankerSystem(name, ranker, k=k, ids={**ids, "ppr": profile.model_dump()})
    profile_name = str(options.pop("profile", DEFAULT_PROFILE))
    lexical = (
        await bm25_index(knowledge)
        if PROFILES.get(profile_name, PROFILES[DEFAULT_PROFILE]).seed_mode != "vector"
        else None
    )
    ranker = TypedPathRanker(graph, profile=profile_name, lexical=lexical, dense=dense)
    return RankerSystem(name, ranker, k=k, ids={**ids, "bm25": BM25_IDENTITY if lexical else None})
