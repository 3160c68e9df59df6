"""The candidate index is carried across routing windows: each window starts from exactly the index a full
rebuild from the store gives, routes the same, and no text is embedded twice or node re-read in bulk."""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.embeddings.pool import VectorPool
from graphwalk_core.ingest import candidates, pipeline, routing, stages
from graphwalk_core.ingest.candidates import PREFILTER_BLOCK, Candidate, CandidateIndex, IndexEntry
from graphwalk_core.ingest.outputs import MentionDecision
from graphwalk_core.ingest.routing import Router
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.ingest.text import normalize_name
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import (
    RecordingEmbedder,
    ScriptedExtractor,
    graph_tables,
    same_entity_script,
    write_hotpotqa_paragraphs,
)

WINDOW = 16


def index_state(index: CandidateIndex) -> dict[str, Any]:
    """Everything routing reads from the index, order included where routing depends on it."""
    index._flush_vectors()
    rows = len(index._rows)
    return {
        "entries": {
            i: (e.name, e.type, list(e.aliases), e.summary, list(e.relations), e.stored)
            for i, e in index.entries.items()
        },
        "exact": {k: list(v) for k, v in index._exact.items() if v},
        "words": {w: sorted(v) for w, v in index._words.items() if v},
        "names": {i: sorted(e.words) for i, e in index.entries.items()},
        "rows": list(index._rows),
        "matrix": index.row_vectors(range(rows)).tobytes(),
    }


async def ingest_recorded(
    corpus: Path, *, rebuild: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], list[MentionDecision], RecordingEmbedder]:
    """Ingest ``corpus`` (nlp extractor, decider routing, hashing vectors) in windows of 16 documents;
    ``rebuild``: every window reloads the whole index from the store (what the pipeline did before)."""
    decisions: list[MentionDecision] = []
    route = pipeline.route_extractions

    async def recording_route(*args: Any, **kwargs: Any) -> Any:
        plan = await route(*args, **kwargs)
        decisions.extend(plan.mentions)
        return plan

    monkeypatch.setattr(pipeline, "route_extractions", recording_route)
    if rebuild:

        async def reload(self: Router, exclude_sources: set[str], written: set[str]) -> None:
            await self.reload(exclude_sources)

        monkeypatch.setattr(Router, "refresh", reload)
    store, index_embedder = MemoryGraphStore(), RecordingEmbedder()
    await pipeline.ingest(
        FileSource(corpus),
        store,
        decider=LocalDecisionBackend(HashingEmbedder()),
        embedder=index_embedder,
        routing="jev",
        window=WINDOW,
    )
    monkeypatch.undo()
    return await graph_tables(store, corpus.name), decisions, index_embedder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index") / "paragraphs"
    write_hotpotqa_paragraphs(root, 120)
    return root


async def test_incremental_and_rebuilt_index_route_identically(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    incremental = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    rebuilt = await ingest_recorded(corpus, rebuild=True, monkeypatch=monkeypatch)
    assert incremental[1] == rebuilt[1]  # every mention: target, action, via, probability, candidates
    assert incremental[0] == rebuilt[0]  # nodes, edges, provenance, ledger
    merged = [d for d in incremental[1] if d.action == "merge" and d.via == "decider"]
    assert len(incremental[1]) > 1000 and len(merged) > 50  # the windows do route against each other
    # neither the carried index nor a full reload (it keeps the run's vector pool) embeds a text twice
    texts = [t for call in incremental[2].calls for t in call]
    assert len(texts) == len(set(texts))
    again = [t for call in rebuilt[2].calls for t in call]
    assert len(again) == len(set(again)) == 1390


def check_every_window(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """After every refresh, compare the router's index with a full rebuild from the store; returns the
    index sizes compared and one entry per full reload the pipeline itself made."""
    refresh, reload = Router.refresh, Router.reload
    compared: list[int] = []
    reloads: list[int] = []

    async def counted_reload(self: Router, exclude_sources: set[str]) -> None:
        reloads.append(len(self.index))
        await reload(self, exclude_sources)

    async def checked_refresh(self: Router, exclude_sources: set[str], written: set[str]) -> None:
        await refresh(self, exclude_sources, written)
        reference = Router(self.store, self.decider, self.index.embedder, None, "jev")
        await reload(reference, exclude_sources)
        assert index_state(self.index) == index_state(reference.index)
        compared.append(len(self.index))

    monkeypatch.setattr(Router, "refresh", checked_refresh)
    monkeypatch.setattr(Router, "reload", counted_reload)
    return compared, reloads


async def test_each_window_starts_from_the_index_a_full_rebuild_gives(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared, reloads = check_every_window(monkeypatch)
    embedder = HashingEmbedder()
    await pipeline.ingest(
        FileSource(corpus),
        MemoryGraphStore(),
        decider=LocalDecisionBackend(embedder),
        embedder=embedder,
        routing="jev",
        window=WINDOW,
    )
    assert len(compared) == 8 and compared[0] == 0 and compared == sorted(compared) and compared[-1] > 500
    assert reloads == [0]  # one load of the (empty) graph; every later window was synced


SHARED_NAMES = {
    "c1.txt": "E Paris|city\nE Chris Nolan|person\nR Chris Nolan|lives_in|Paris",
    "c2.txt": "E Paris|person\nE Nolan|person\nE Inception|film\nR Inception|directed_by|Nolan",
    "c3.txt": "E Paris|film\nE Paris Hilton|person\nE Warner Bros|organization",
    "c4.txt": "E PARIS|person\nE Warner Bros. Pictures|organization\nE Kyoto|city",
    "c5.txt": "E Paris|organization\nE Kyoto|film\nE Emma Thomas|person\nR Emma Thomas|married|Nolan",
}
#: added later, with lower ids: their names come first, so the nodes they join are re-keyed
EARLIER = {
    "a1.txt": "E Nolan|person|born=1970\nE Hilton|person",
    "a2.txt": "E Warner|organization\nE Kyoto Prefecture|city\nE Paris|city",
    "a3.txt": "E Thomas|person\nE Paris|film",
}


async def test_shared_names_aliases_and_rekeys_keep_the_index_equal_to_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in SHARED_NAMES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    compared, reloads = check_every_window(monkeypatch)
    store, renames = MemoryGraphStore(), []
    canonicalize = stages.canonicalize

    async def recorded(store_: Any, node_ids: set[str], renamed: dict[str, str], *rest: Any) -> None:
        before = dict(renamed)
        await canonicalize(store_, node_ids, renamed, *rest)
        renames.extend(sorted(renamed.keys() - before.keys()))

    monkeypatch.setattr(stages, "canonicalize", recorded)
    decider = FakeDecisionBackend(script=same_entity_script)
    for step in (SHARED_NAMES, EARLIER):
        for name, text in step.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        await pipeline.ingest(
            FileSource(tmp_path),
            store,
            extractor=ScriptedExtractor(),
            decider=decider,
            embedder=HashingEmbedder(),
            routing="jev",
            window=1,
        )
    assert compared == [0, 2, 4, 6, 7, 10, 10, 11] and reloads == [0, 0]  # one load per run, then syncs
    paris = sorted((n.type, n.id) for n in await store.find_nodes(name="Paris"))
    assert [t for t, _ in paris] == ["city", "film", "organization", "person"]
    assert len(renames) == 3  # the earlier documents name the nodes they join (Nolan, Hilton, Thomas)


def cosine_over_every_row(index: CandidateIndex, names: Sequence[str]) -> list[list[Candidate]]:
    """The cosine tier's answer when every row is scored exactly (no prefilter, no near rows)."""
    rows = len(index._rows)
    vectors = index.embed(names).astype(np.float64)
    scores = (index.row_vectors(range(rows)).astype(np.float64) @ vectors.T).astype(np.float32)
    out = []
    for col in range(len(names)):
        hits = [
            Candidate(index._rows[row], float(scores[row, col]), "cosine")
            for row in range(rows)
            if scores[row, col] >= index.cosine_threshold
        ]
        out.append(sorted(hits, key=lambda c: (-c.score, c.node_id))[: index.max_candidates])
    return out


async def test_the_cosine_tier_scores_only_near_rows_and_finds_what_every_row_finds(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cosine = CandidateIndex._cosine
    calls: list[tuple[int, int, int, int]] = []  # names (all, prefiltered), rows (prefiltered near, all)

    def checked(self: CandidateIndex, names: Sequence[str]) -> list[list[Candidate]]:
        found = cosine(self, names)
        assert found == cosine_over_every_row(self, names)
        near = [self._near[k] for k in map(normalize_name, names) if k in self._near]
        calls.append((len(names), len(near), sum(map(len, near)), len(self._rows) * len(names)))
        return found

    monkeypatch.setattr(CandidateIndex, "_cosine", checked)
    filtered = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    names, prefiltered, near, rows = map(sum, zip(*calls, strict=True))
    # every queried name was prefiltered; 25 rows were near it, of 778,165 (name, row) pairs
    assert (len(calls), names, prefiltered, near, rows) == (123, 1322, 1322, 25, 778165)
    monkeypatch.setattr(CandidateIndex, "prefilter", lambda self, names: None)
    full = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    assert filtered[1] == full[1] and filtered[0] == full[0]
    cosine_found = [d for d in filtered[1] if d.candidates and d.via == "decider"]
    assert len(cosine_found) > 100


async def test_rows_scored_a_few_at_a_time_find_what_every_row_finds(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cosine = CandidateIndex._cosine
    blocks: list[int] = []  # rows in the index at each cosine call (blocks of 7)

    def checked(self: CandidateIndex, names: Sequence[str]) -> list[list[Candidate]]:
        found = cosine(self, names)
        assert found == cosine_over_every_row(self, names)
        blocks.append(len(self._rows))
        return found

    monkeypatch.setattr(candidates, "SCORE_ROWS", 7)  # blocks of 7 rows, the tail past them
    monkeypatch.setattr(CandidateIndex, "_cosine", checked)
    blockwise = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    whole = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    assert blockwise[1] == whole[1] and blockwise[0] == whole[0]
    assert len(blocks) == 123 and max(blocks) == 1140


def test_the_index_scores_the_pools_vectors_without_a_copy_of_its_own() -> None:
    """Rows are pool rows: indexing 30,000 names and scoring 256 names against them allocates scratch for a
    block of rows only, never a matrix of every row (the pool's blocks are the one copy of the vectors)."""
    embedder = HashingEmbedder(dim=256)
    names = [f"Name {n} {n * 7919 % 1000}" for n in range(30_000)]
    pool = VectorPool(embedder)
    pool.rows(names)
    queries = [f"Nome {n} {n * 7919 % 1000}" for n in range(PREFILTER_BLOCK)]
    pool.rows(queries)
    index = CandidateIndex(embedder, pool=pool)
    for n, name in enumerate(names):
        index.add(IndexEntry(id=f"n{n:05d}", name=name, type="thing"))
    tracemalloc.start()
    index._flush_vectors()
    index.prefilter(queries)
    found = index.candidates(queries[:8])
    scratch = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    block = candidates.SCORE_ROWS * 256 * 4  # one block of rows gathered, and 256 x that block's scores
    every_row = len(names) * 256 * 4
    assert scratch < 3 * block < every_row / 2
    assert [c[0].node_id for c in found] == [f"n{n:05d}" for n in range(8)]


def test_names_near_many_rows_are_scored_a_block_of_rows_at_a_time() -> None:
    """Names that each sit near thousands of rows (one spelling indexed 6,000 times) gather their rows a
    block at a time: the scratch is bounded by a block, not by names x near rows (a window of names on a
    grown graph)."""
    embedder = HashingEmbedder(dim=256)
    index = CandidateIndex(embedder, pool=VectorPool(embedder))
    for n in range(6000):
        index.add(IndexEntry(id=f"n{n:05d}", name="Warner Bros. Pictures", type="organization"))
    queries = [
        "Warner Bros Picture",
        "Warner Bros Pictures Inc",
        "Warner Bros. Picture",
        "Warner Bros Pictures.",
    ]
    index._flush_vectors()
    index.prefilter(queries)
    assert [len(index._near[normalize_name(q)]) for q in queries] == [6000, 6000, 6000, 6000]
    tracemalloc.start()
    found = index.candidates(queries)
    scratch = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    block = candidates.SCORE_ROWS * 256 * 4
    assert scratch < 4 * block < len(queries) * 6000 * 256 * 4
    assert [[c.node_id for c in hits] for hits in found] == [[f"n{n:05d}" for n in range(5)]] * 4


def test_a_name_near_thousands_of_rows_keeps_only_its_best_and_finds_what_every_row_finds() -> None:
    """6,000 names within the prefilter's bound of each query (dates among dates on 2Wiki): each query keeps
    the few rows that can still be among its best, not 6,000, and finds what scoring every row finds."""
    embedder = HashingEmbedder(dim=256)
    index = CandidateIndex(embedder, pool=VectorPool(embedder))
    for n in range(6000):
        name = f"Warner Bros. Pictures {n * 7919 % 6007:x}"
        index.add(IndexEntry(id=f"n{n:05d}", name=name, type="organization"))
    queries = ["Warner Bros Pictures", "Warner Bros Picture", "Warner Brothers Pictures"]
    index._flush_vectors()
    bound = index.cosine_threshold - candidates.COSINE_MARGIN
    within = (index.row_vectors(range(6000)) @ embedder.embed(queries).T >= bound).sum(axis=0)
    assert within.tolist() == [6000, 92, 15]  # the third under NEAR_KEPT: kept whole
    index.prefilter(queries)
    assert [len(index._near[normalize_name(q)]) for q in queries] == [17, 30, 15]
    found = index.candidates(queries)
    assert found == cosine_over_every_row(index, queries)
    assert [[c.node_id for c in hits][:2] for hits in found] == [
        ["n04499", "n00727"],
        ["n00013", "n01330"],
        ["n02156", "n04632"],
    ]


def test_a_cosine_score_depends_neither_on_the_index_size_nor_on_the_other_names_asked() -> None:
    index = CandidateIndex(HashingEmbedder(dim=256), cosine_threshold=0.75)
    index.add(IndexEntry(id="n1", name="Warner Bros. Pictures", type="organization"))
    alone = index.candidates(["Warner Bros Picture"])
    for n in range(3000):
        index.add(IndexEntry(id=f"x{n:05d}", name=f"Name {n} {n * 7919 % 1000}", type="thing"))
    crowded = index.candidates(["Warner Bros Picture", "Kyoto"])[:1]
    assert alone == crowded == [[Candidate("n1", alone[0][0].score, "cosine")]]


async def test_local_decider_routing_reads_no_neighbours_and_decides_the_same(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adjacent = MemoryGraphStore.adjacent
    reads: list[str] = []

    async def counted(self: MemoryGraphStore, node_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(node_id)
        return await adjacent(self, node_id, *args, **kwargs)

    monkeypatch.setattr(MemoryGraphStore, "adjacent", counted)
    lean = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    assert reads == []
    monkeypatch.setattr(MemoryGraphStore, "adjacent", counted)
    monkeypatch.setattr(routing, "reads_card_key", lambda decider, key: True)  # the cards as before
    full = await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    assert len(reads) == 72  # stored candidates' neighbours, read for cards the local decider skips
    assert lean[1] == full[1] and lean[0] == full[0]


async def test_the_look_ahead_keeps_no_finished_jobs(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight windows embed seven later windows' names ahead; a job done without error is dropped at the
    next one, so a corpus of any size leaves the last job or two (not one row list per window)."""
    close, look_ahead = Router.close, Router.look_ahead
    submitted: list[int] = []
    kept: list[int] = []

    def counted(self: Router, items: Any) -> None:
        look_ahead(self, items)
        submitted.append(len(self._ahead_jobs))

    def closing(self: Router) -> None:
        kept.append(len(self._ahead_jobs))
        close(self)

    monkeypatch.setattr(Router, "look_ahead", counted)
    monkeypatch.setattr(Router, "close", closing)
    await ingest_recorded(corpus, rebuild=False, monkeypatch=monkeypatch)
    assert len(submitted) == 7 and len(kept) == 1 and 1 <= kept[0] <= 2


def test_a_prefilter_reads_each_block_of_rows_from_the_pool_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names past ``PREFILTER_BLOCK`` are scored block by block against rows read once, not once per block
    of names (the pool keeps full blocks in a file)."""
    embedder = HashingEmbedder(dim=64)
    index = CandidateIndex(embedder, pool=VectorPool(embedder))
    for n in range(5000):
        index.add(IndexEntry(id=f"n{n:05d}", name=f"Name {n} {n * 7919 % 1000}", type="thing"))
    read: list[range] = []
    row_vectors = CandidateIndex.row_vectors

    def counted(self: CandidateIndex, rows: Any) -> np.ndarray:
        read.append(rows)
        return row_vectors(self, rows)

    monkeypatch.setattr(CandidateIndex, "row_vectors", counted)
    queries = [f"Name {n} {n * 7919 % 1000}" for n in range(0, 600, 2)]  # 300 names, indexed ones
    index.prefilter(queries)
    assert read == [range(0, 4096), range(4096, 5000)]
    near = [index._near[normalize_name(q)].tolist() for q in queries]
    assert all(n in rows for n, rows in zip(range(0, 600, 2), near, strict=True))  # its own row
    assert sum(map(len, near)) == 1488
