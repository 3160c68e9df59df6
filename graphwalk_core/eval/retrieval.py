"""2Wiki retrieval benchmark: is every supporting passage among the passages a system retrieves?

graphwalk retrieves the passages its walk reached via provenance (``Provenance.source_id`` names the
passage): the walk's witness-path edges first, then the start and answer nodes. Dense retrieval
retrieves its top-k passages by cosine. A question is *solved* when all its supporting passages are
retrieved, *solved@10* when they are all among the first 10 (the same budget for every system; a walk
can reach dozens of passages); recall@k is the share of supporting passages among the first k retrieved.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graphwalk_core.decisions.base import DecisionBackend
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.eval.datasets.base import Dataset, Passage, Question
from graphwalk_core.eval.ingestion import PassageIngester
from graphwalk_core.eval.systems.documents import DocumentIndex, passage_documents
from graphwalk_core.eval.systems.graphs import passage_of
from graphwalk_core.eval.systems.graphwalk import GraphwalkSystem, passages_of, preset_config
from graphwalk_core.files import write_text_atomic
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.traversal.name_vectors import NameVectors

#: Published fast-graphrag numbers on these 51 questions (their easier ~800-passage setting).
PUBLISHED = {"VectorDB": 0.49, "LightRAG": 0.47, "GraphRAG": 0.75, "fast-graphrag": 0.96}


def corpus_subset(dataset: Dataset, n_passages: int | None, seed: int = 0) -> Dataset:
    """Every supporting passage of the questions plus seeded distractors: ``n_passages`` in all."""
    passages = list(dataset.knowledge.passages)
    if n_passages is None or n_passages >= len(passages):
        return dataset
    needed = {pid for q in dataset.questions for pid in q.extra.get("supporting", [])}
    keep = [p for p in passages if p.id in needed]
    others = sorted(
        (p for p in passages if p.id not in needed),
        key=lambda p: hashlib.sha256(f"{seed}\x00{p.id}".encode()).hexdigest(),
    )
    keep += others[: max(0, n_passages - len(keep))]
    order = {p.id: i for i, p in enumerate(passages)}
    keep.sort(key=lambda p: order[p.id])
    knowledge = dataset.knowledge.model_copy(update={"passages": tuple(keep)})
    info = {**dataset.info, "passages": len(keep), "corpus_subset_seed": seed}
    return dataset.model_copy(update={"knowledge": knowledge, "info": info})


class RetrievalRow(BaseModel):
    question_id: str
    question: str
    system: str
    supporting: list[str]
    retrieved: list[str]
    solved: bool
    solved_at_10: bool
    recall_at_2: float
    recall_at_5: float
    latency_s: float
    decision_calls: int = 0
    error: str | None = None


def score_retrieval(question: Question, system: str, retrieved: list[str], **extra: Any) -> RetrievalRow:
    """Solved (all supporting passages retrieved; within the first 10) and recall@2/@5 of one question."""
    support = list(question.extra.get("supporting", []))
    got = list(dict.fromkeys(retrieved))

    def recall(k: int) -> float:
        return sum(s in got[:k] for s in support) / len(support) if support else 1.0

    return RetrievalRow(
        question_id=question.id,
        question=question.text,
        system=system,
        supporting=support,
        retrieved=got,
        solved=all(s in got for s in support),
        solved_at_10=all(s in got[:10] for s in support),
        recall_at_2=recall(2),
        recall_at_5=recall(5),
        **extra,
    )


async def walk_passages(
    system: GraphwalkSystem, store: GraphStore, question: Question
) -> tuple[list[str], int]:
    """Passages a walk reached: witness-path edge sources, then start and answer node provenance."""
    result, _ = await system.walk(question)
    if result is None:
        return [], 0
    ranked = passages_of(result)
    node_ids = [*result.start, *(n for a in result.answers for n in a.node_ids)]
    nodes = await store.get_nodes(list(dict.fromkeys(node_ids)))
    for node_id in dict.fromkeys(node_ids):
        node = nodes.get(node_id)
        if node is not None:
            ranked += [passage_of(p.source_id) for p in node.provenance]
    return list(dict.fromkeys(ranked)), result.trace.totals.decision_calls


class RetrievalReport(BaseModel):
    n_questions: int
    n_passages: int
    ingest_seconds: float
    graph_nodes: int
    graph_edges: int
    extractor: str
    decider: str
    embedder: str
    preset: str
    rows: list[RetrievalRow]

    def summary(self) -> list[dict[str, Any]]:
        """Per system: solved share (any budget, top 10), recall@2/@5, mean passages retrieved, p50."""
        out = []
        for name in dict.fromkeys(r.system for r in self.rows):
            rows = [r for r in self.rows if r.system == name]
            lat = sorted(r.latency_s for r in rows)
            out.append(
                {
                    "system": name,
                    "solved": sum(r.solved for r in rows) / len(rows),
                    "solved@10": sum(r.solved_at_10 for r in rows) / len(rows),
                    "recall@2": sum(r.recall_at_2 for r in rows) / len(rows),
                    "recall@5": sum(r.recall_at_5 for r in rows) / len(rows),
                    "passages/q": sum(len(r.retrieved) for r in rows) / len(rows),
                    "p50 s": lat[len(lat) // 2],
                    "errors": sum(r.error is not None for r in rows),
                }
            )
        return out

    def markdown(self) -> str:
        lines = [
            f"2wiki-retrieval: {self.n_questions} questions over {self.n_passages} passages; graph "
            f"{self.graph_nodes} nodes / {self.graph_edges} edges, ingested in {self.ingest_seconds:.1f} s "
            f"({self.extractor}); decider {self.decider}; embedder {self.embedder}; walk {self.preset}.",
            "",
            "| system | solved (all supporting found) | solved@10 | recall@2 | recall@5 | passages/q | p50 s "
            "| errors |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for s in self.summary():
            lines.append(
                f"| {s['system']} | {s['solved']:.3f} | {s['solved@10']:.3f} | {s['recall@2']:.3f} "
                f"| {s['recall@5']:.3f} "
                f"| {s['passages/q']:.1f} | {s['p50 s']:.2f} | {s['errors']} |"
            )
        lines += ["", "Published (fast-graphrag README, ~800-passage setting): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in PUBLISHED.items())]  # fmt: skip
        return "\n".join(lines) + "\n"


async def run_retrieval(
    dataset: Dataset,
    *,
    decider: DecisionBackend,
    embedder: Embedder,
    preset: str = "entity-beam",
    dense_k: tuple[int, ...] = (2, 5, 10),
    linking: str = "resolve",
    concurrency: int = 4,
    overrides: dict[str, Any] | None = None,
    progress: Callable[[str], Any] | None = None,
) -> RetrievalReport:
    """Ingest the corpus (NLP extractor, exact routing), then score graphwalk and dense top-k.

    ``progress`` receives one line per stage (ingest, index, each question).
    """
    say = progress or (lambda _msg: None)
    from graphwalk_core.traversal.entry import NameEntryResolver

    passages: list[Passage] = list(dataset.knowledge.passages)
    store = MemoryGraphStore()
    ingester = PassageIngester(source_id=dataset.knowledge.source)
    start = time.perf_counter()
    await ingester(store, passages)
    ingest_s = time.perf_counter() - start
    nodes, edges = await store.counts()
    say(f"ingested {len(passages)} passages in {ingest_s:.1f}s: {nodes} nodes, {edges} edges")
    resolver = await NameEntryResolver.from_store(
        store, embedder=embedder, best_only=linking == "resolve-best"
    )
    names = NameVectors(store, embedder)
    start = time.perf_counter()
    await names.warm()  # every node name embedded once, before the walks
    say(f"embedded {names.embedded} node names in {time.perf_counter() - start:.1f}s")
    config = preset_config(preset, **(overrides or {}))
    walker = GraphwalkSystem(
        preset,
        store,
        decider,
        config=config,
        embedder=embedder,
        linking="resolve",
        entry=resolver,
        names=names,
    )
    index = await asyncio.to_thread(DocumentIndex.build, passage_documents(dataset.knowledge), embedder)
    say(f"embedded {len(index.docs)} passages for dense retrieval")
    semaphore = asyncio.Semaphore(concurrency)

    async def graph_row(q: Question) -> RetrievalRow:
        async with semaphore:
            t0 = time.perf_counter()
            try:
                got, calls = await walk_passages(walker, store, q)
                error = None
            except Exception as exc:  # recorded, never dropped
                got, calls, error = [], 0, f"{type(exc).__name__}: {exc}"
            return score_retrieval(
                q,
                f"graphwalk {preset}",
                got,
                latency_s=time.perf_counter() - t0,
                decision_calls=calls,
                error=error,
            )

    rows = list(await asyncio.gather(*(graph_row(q) for q in dataset.questions)))
    for k in dense_k:
        for q in dataset.questions:
            t0 = time.perf_counter()
            got = [d.id for d, _ in index.search(q.text, k)]
            rows.append(score_retrieval(q, f"dense top-{k}", got, latency_s=time.perf_counter() - t0))
    return RetrievalReport(
        n_questions=len(dataset.questions),
        n_passages=len(passages),
        ingest_seconds=ingest_s,
        graph_nodes=nodes,
        graph_edges=edges,
        extractor=ingester.extractor.version,
        decider=decider.model_id,
        embedder=embedder.model_id,
        preset=preset,
        rows=rows,
    )


def write_retrieval_report(report: RetrievalReport, out_dir: Path) -> Path:
    """retrieval.json (every row) and retrieval.md (the summary table) in ``out_dir``."""
    write_text_atomic(report.model_dump_json(indent=1), Path(out_dir) / "retrieval.json")
    return write_text_atomic(report.markdown(), Path(out_dir) / "retrieval.md")
