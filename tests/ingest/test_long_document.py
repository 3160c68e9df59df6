"""A long document is extracted and routed a batch of chunks at a time, and still planned, written and
committed as one unit: the graph is the one its chunks routed in one batch give."""

from __future__ import annotations

import gc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import InputError
from graphwalk_core.ingest import pipeline
from graphwalk_core.ingest.outputs import ChunkExtraction, MentionDecision
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import graph_tables, write_hotpotqa_paragraphs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 16 kB single-line document of 60 HotpotQA paragraphs, between two short ones."""
    root = tmp_path_factory.mktemp("long")
    paragraphs = [p.read_text(encoding="utf-8") for p in write_hotpotqa_paragraphs(root / "p", 62)]
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(paragraphs[0], encoding="utf-8")
    (docs / "long.txt").write_text(" ".join(p.replace("\n", " ") for p in paragraphs[1:61]), encoding="utf-8")
    (docs / "z.txt").write_text(paragraphs[61], encoding="utf-8")
    return docs


async def decider_ingest(corpus: Path, store: MemoryGraphStore, **kwargs: Any) -> Any:
    """``corpus`` ingested into ``store`` with decider routing (the local decider, hashed embeddings) and
    1,000-character chunks; ``kwargs`` go to ``ingest``."""
    embedder = HashingEmbedder()
    return await pipeline.ingest(
        FileSource(corpus, source_id="docs"),
        store,
        decider=LocalDecisionBackend(embedder),
        embedder=embedder,
        routing="jev",
        max_chars=1_000,
        **kwargs,
    )


async def ingest_recorded(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> tuple[dict[str, Any], list[MentionDecision], list[tuple[int, int]], list[tuple[int, int, int]]]:
    """Ingest ``corpus`` with decider routing and 1,000-character chunks; returns the graph, every routing
    decision, per routing call (the chunks it routes, the chunk extractions alive then), and per document
    applied (the nodes, node ids and edges its plan holds)."""
    decisions: list[MentionDecision] = []
    calls: list[tuple[int, int]] = []
    route = pipeline.route_extractions

    gc.collect()
    # held, so that only this ingest's are counted (an earlier test's may live on) and no id is reused
    earlier = [o for o in gc.get_objects() if isinstance(o, ChunkExtraction)]
    known = {id(o) for o in earlier}

    async def recording_route(extractions: Any, *args: Any, **kw: Any) -> Any:
        gc.collect()  # alive: reachable
        alive = sum(isinstance(o, ChunkExtraction) and id(o) not in known for o in gc.get_objects())
        calls.append((len(extractions.items), alive))
        plan = await route(extractions, *args, **kw)
        decisions.extend(plan.mentions)
        return plan

    async def recording_apply(store: Any, part: Any, plan: Any, **kw: Any) -> Any:
        for doc in plan.documents:  # what the plan holds per document
            planned.append((len(doc.nodes), len({n.id for n in doc.nodes}), len(doc.edges)))
        return await apply(store, part, plan, **kw)

    planned: list[tuple[int, int, int]] = []
    apply = pipeline.apply_plan
    monkeypatch.setattr(pipeline, "route_extractions", recording_route)
    monkeypatch.setattr(pipeline, "apply_plan", recording_apply)
    store = MemoryGraphStore()
    report = await decider_ingest(corpus, store, **kwargs)
    monkeypatch.undo()
    assert report.chunks == 56 and report.mentions == len(decisions)
    return await graph_tables(store, "docs"), decisions, calls, planned


async def test_a_long_document_routed_in_batches_gives_the_graph_one_batch_gives(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = await ingest_recorded(corpus, monkeypatch)
    batched = await ingest_recorded(corpus, monkeypatch, route_chunks=16)
    assert batched[1] == whole[1]  # every mention: target, action, via, probability, candidates
    assert batched[0] == whole[0]  # every node, edge (all their data and provenance) and ledger entry
    assert [d[0] for d in whole[0]["ledger"]] == ["a.txt", "long.txt", "z.txt"]
    merged = [d for d in whole[1] if d.action == "merge" and d.via == "decider"]
    assert len(whole[1]) > 500 and len(merged) > 10  # the long document's chunks route against each other
    # 56 chunks (54 of them the long document's): one batch of all of them, or batches of 16, and alive at
    # once only the batch routed and the next one, extracted ahead (its names embed meanwhile)
    assert whole[2] == [(56, 56)]
    assert batched[2] == [(16, 32), (16, 32), (16, 24), (8, 8)]
    # a plan holds one node per id (the long document's 1,082 mentions folded into 733 nodes), not one
    # per mention, and one edge per id
    mentions = Counter(d.chunk_id.split("@")[0] for d in whole[1])
    assert mentions == {"a.txt": 16, "long.txt": 1_082, "z.txt": 21}
    assert whole[3] == batched[3] == [(14, 14, 35), (733, 733, 2034), (17, 17, 42)]


async def test_a_crash_in_a_long_documents_later_batch_writes_nothing_of_it(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, calls = MemoryGraphStore(), []
    route = pipeline.route_extractions

    async def failing_route(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[0].items))
        if len(calls) == 4:  # the long document's chunks 32-47: 32 of its 54 chunks are routed
            raise RuntimeError("killed")
        return await route(*args, **kwargs)

    monkeypatch.setattr(pipeline, "route_extractions", failing_route)
    with pytest.raises(RuntimeError, match="killed"):
        await decider_ingest(corpus, store, window=1, route_chunks=16)
    assert calls == [1, 16, 16, 16]
    tables = await graph_tables(store, "docs")
    assert [d[0] for d in tables["ledger"]] == ["a.txt"]  # committed in its own window, before the crash
    sources = {p["source_id"] for e in tables["nodes"] + tables["edges"] for p in e["provenance"]}
    assert sources == {"docs/a.txt"} and len(tables["nodes"]) > 5  # nothing of the long document


async def test_a_routing_batch_of_no_chunks_is_refused_before_anything_is_read(corpus: Path) -> None:
    store = MemoryGraphStore()
    with pytest.raises(InputError, match="the routing batch must be >= 1 chunk, got 0"):
        await pipeline.ingest(FileSource(corpus, source_id="docs"), store, routing="exact", route_chunks=0)
    assert await graph_tables(store, "docs") == {"nodes": [], "edges": [], "ledger": []}
