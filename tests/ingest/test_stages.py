"""The stages one by one (as the Dagster assets call them), each output round-tripped through JSON."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from sqlalchemy import event

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.ingest import stages
from graphwalk_core.ingest.chunking import Chunk
from graphwalk_core.ingest.extraction.base import ExtractorResult
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.ingest.outputs import ChunkSet, DocumentDiff, ExtractionSet, RoutingPlan
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources import FileSource, SourceProfile, load_sources, open_source
from graphwalk_core.ingest.sources.base import SkippedItem, SourceDocument
from graphwalk_core.ingest.spool import DocumentSpool
from graphwalk_core.ingest.stages import (
    apply_plan,
    chunk_documents,
    collector_paused,
    diff_documents,
    document_windows,
    extract_chunks,
    kept_by_skips,
    profile_source,
    route_extractions,
)
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.sql import SQLGraphStore

from .conftest import ScriptedExtractor, graph_tables, same_entity_script

REPO = Path(__file__).resolve().parents[2]
M = TypeVar("M", bound=BaseModel)


def roundtrip(value: M) -> M:
    again = type(value).model_validate_json(value.model_dump_json())
    assert again == value
    return again


async def test_stages_compose_like_the_pipeline() -> None:
    films = open_source(load_sources(REPO / "data" / "sources.yaml")[0])
    store, extractor = MemoryGraphStore(), NLPExtractor()
    profile: SourceProfile = roundtrip(await profile_source(films))
    assert (profile.documents, profile.rows) == (11, 8)
    diff: DocumentDiff = roundtrip(await diff_documents(films, store, extractor=extractor))
    assert len(diff.new) == 11 and len(diff.documents) == 11
    chunks: ChunkSet = roundtrip(chunk_documents(diff))
    assert len(chunks.chunks) == 11 and len(chunks.preset) == 8  # 3 text files fit in one chunk each
    extractions: ExtractionSet = roundtrip(await extract_chunks(chunks, extractor))
    assert extractions.failures == 0 and extractions.cost.calls == 0
    plan: RoutingPlan = roundtrip(await route_extractions(extractions, store, None, None, None, "exact"))
    assert len(plan.documents) == 11
    update = roundtrip(await apply_plan(store, diff, plan))
    assert (update.ledger_written, update.nodes_added, update.edges_added) == (11, 29, 42)
    reference = MemoryGraphStore()
    await ingest(films, reference, extractor=extractor, routing="exact")
    assert await graph_tables(store, "films") == await graph_tables(reference, "films")


@pytest.mark.parametrize("spooled", [False, True])
def test_windows_after_a_crash_are_the_uninterrupted_run_s_later_windows(spooled: bool) -> None:
    """Windows are cut from the documents left to process: once the first two windows committed, a
    rerun (which sees them as unchanged) cuts exactly the windows the uninterrupted run cut next;
    whether the diff holds the documents or a spool does."""

    def windows(ids: list[str], changed: set[str]) -> list[tuple[list[str], list[str], list[str]]]:
        docs = [SourceDocument(id=i, text=i, content_hash=i) for i in ids]
        diff = DocumentDiff(
            source_id="s",
            extractor="nlp:2",
            new=[i for i in ids if i not in changed],
            changed=sorted(changed & set(ids)),
            deleted=["gone"],
            documents=[] if spooled else docs,
        )
        with DocumentSpool() as spool:
            for doc in docs:
                spool.add(doc)
            return [
                ([d.id for d in part.documents], part.changed, sorted(pending))
                for part, pending in document_windows(diff, 3, spool if spooled else None)
            ]

    ids = [f"d{i:02d}" for i in range(10)]
    full = windows(ids, {"d01", "d07"})
    assert full == [
        (["d00", "d01", "d02"], ["d01"], ["d01", "d07"]),
        (["d03", "d04", "d05"], [], ["d07"]),
        (["d06", "d07", "d08"], ["d07"], ["d07"]),
        (["d09"], [], []),
    ]
    assert windows(ids[6:], {"d07"}) == full[2:]


def test_the_collector_is_off_during_an_apply_and_back_after() -> None:
    older = [[i] for i in range(1_000)]
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    with collector_paused():
        assert gc.get_freeze_count() >= len(older)
        assert not gc.isenabled()
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed window")
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_what_a_window_keeps_is_not_left_to_the_young_collection() -> None:
    """A window's survivors (the graph it wrote, a hub's grown provenance) go to the oldest generation
    unscanned: a young collection after each window would traverse hub-sized containers every time."""
    with collector_paused():
        kept = [[i] for i in range(1_000)]
    young = {id(o) for o in gc.get_objects(generation=0)}
    assert sum(id(x) in young for x in kept) == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert sum(id(x) in oldest for x in kept) == len(kept)


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_overlapping_applies_restore_the_collector_when_the_last_one_ends() -> None:
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the other apply still runs: still paused
    assert not gc.isenabled() and gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_an_apply_leaves_no_cyclic_garbage(backend: str, tmp_path: Path) -> None:
    """The collector is off while a window applies: that costs nothing only while merges and writes create
    no reference cycles (garbage that reference counting alone cannot free)."""
    films = open_source(load_sources(REPO / "data" / "sources.yaml")[0])
    store = MemoryGraphStore() if backend == "memory" else SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    extractor = NLPExtractor()
    diff = await diff_documents(films, store, extractor=extractor)
    extractions = await extract_chunks(chunk_documents(diff), extractor)
    plan = await route_extractions(extractions, store, None, None, None, "exact")
    await store.counts()  # the store's connections and statements exist before the apply
    gc.collect()
    # held, so what only dies meanwhile (an earlier test's HTTP thread ending) is not counted as the apply's
    existing = gc.get_objects()
    gc.disable()
    try:
        update = await apply_plan(store, diff, plan)
        assert gc.collect() == 0
    finally:
        gc.enable()
        del existing
        await store.close()
    assert (update.ledger_written, update.nodes_added, update.edges_added) == (11, 29, 42)


async def _routed_before_deletion(folder: Path, store: GraphStore) -> tuple[DocumentDiff, RoutingPlan]:
    """As Dagster's assets do it: ``a.txt`` deleted and ``c.txt`` added, the plan routed before
    ``graph_updates`` retracts ``a.txt``; ``c.txt``'s "Nolan" joins the node "Chris Nolan" (of ``a.txt``,
    which a retraction of ``a.txt`` re-keys to "Nolan")."""
    (folder / "a.txt").unlink()
    (folder / "c.txt").write_text("E Nolan|person\nE Inception|film\nR Inception|directed_by|Nolan")
    extractor = ScriptedExtractor()
    diff = await diff_documents(FileSource(folder, source_id="notes"), store, extractor=extractor)
    extractions = await extract_chunks(chunk_documents(diff), extractor)
    decider = FakeDecisionBackend(script=same_entity_script)
    plan = await route_extractions(extractions, store, decider, HashingEmbedder(), None, "jev")
    return diff, plan


async def test_a_plan_routed_before_a_retraction_lands_on_the_re_keyed_node_after_a_crash(
    new_store: Callable[[], GraphStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """graph_updates retracts the deleted documents and writes the plan routed before them as one
    transaction: a crash in between leaves neither, so the retried step learns the retraction's re-keys
    again and writes into the re-keyed node, as the uninterrupted step does (it used to commit the
    retraction alone, and the retry, with no re-key left to learn, created a second "Nolan" node)."""
    graphs = []
    for crash in (False, True):
        folder = tmp_path / ("crashed" if crash else "plain")
        folder.mkdir()
        (folder / "a.txt").write_text("E Chris Nolan|person")
        (folder / "b.txt").write_text("E Nolan|person")
        store = new_store()
        await ingest(
            FileSource(folder, source_id="notes"),
            store,
            extractor=ScriptedExtractor(),
            decider=FakeDecisionBackend(script=same_entity_script),
            embedder=HashingEmbedder(),
            routing="jev",
        )
        assert [n.name for n in await store.find_nodes(type="person")] == ["Chris Nolan"]
        diff, plan = await _routed_before_deletion(folder, store)
        if crash:
            write = stages.write_elements

            async def crashing(*args: object, **kwargs: object) -> object:
                raise RuntimeError("the step's process died")

            monkeypatch.setattr(stages, "write_elements", crashing)
            with pytest.raises(RuntimeError, match="died"):
                await apply_plan(store, diff, plan)
            monkeypatch.setattr(stages, "write_elements", write)
        await apply_plan(store, diff, plan)
        people = await store.find_nodes(type="person")
        assert [(n.name, sorted(p.source_id for p in n.provenance)) for n in people] == [
            ("Nolan", ["notes/b.txt", "notes/c.txt"])
        ]
        graphs.append(await graph_tables(store, "notes"))
    assert graphs[0] == graphs[1]


def _kept_pair_by_pair(skipped: list[SkippedItem], doc_id: str) -> bool:
    """What a skip keeps, skip by skip (the rule ``kept_by_skips`` looks up by id and prefix)."""
    for item in skipped:
        if item.kind == "mapping":
            continue
        if item.document_id is not None:
            if item.document_id == doc_id:
                return True
        elif doc_id == item.path or doc_id.startswith((item.path + "#", item.path + "/")):
            return True
    return False


_PART = st.sampled_from(["a", "ab", "b", "a.csv", "x"])
_ID = st.lists(st.tuples(_PART, st.sampled_from(["", "#", "/"])), min_size=1, max_size=4).map(
    lambda parts: "".join(p + s for p, s in parts).rstrip("#/") or "a"
)


@settings(max_examples=300, deadline=None)
@given(
    skips=st.lists(st.tuples(_ID, st.booleans(), st.sampled_from(["input", "mapping"])), max_size=6),
    doc_ids=st.lists(_ID, max_size=8),
)
def test_what_skips_keep_is_the_skip_by_skip_rule(
    skips: list[tuple[str, bool, str]], doc_ids: list[str]
) -> None:
    skipped = [
        SkippedItem(path=path.split("#")[0], reason="r", document_id=path if own else None, kind=kind)
        for path, own, kind in skips
    ]
    kept = kept_by_skips(skipped)
    assert [kept(d) for d in doc_ids] == [_kept_pair_by_pair(skipped, d) for d in doc_ids]


async def _jaws_routed(folder: Path, store: GraphStore, director: str) -> tuple[DocumentDiff, RoutingPlan]:
    """``jaws.txt`` naming ``director``, diffed and routed against ``store`` as graph_updates' inputs."""
    (folder / "jaws.txt").write_text(f"E Jaws|film\nE {director}|person\nR Jaws|directed_by|{director}")
    extractor = ScriptedExtractor()
    diff = await diff_documents(FileSource(folder, source_id="notes"), store, extractor=extractor)
    extractions = await extract_chunks(chunk_documents(diff), extractor)
    return diff, await route_extractions(extractions, store, None, None, None, "exact")


async def test_a_plan_made_before_another_ingest_of_the_source_applied_is_refused(
    new_store: Callable[[], GraphStore], tmp_path: Path
) -> None:
    """Two runs of one source partition in flight at once (a schedule tick while a manual run goes): the
    earlier reader's plan, applied after the later reader's, wrote its older facts beside the newer
    ones (a "new" document retracts nothing) and its older hash into the ledger, and both runs
    succeeded; the graph held a fact no file holds until the next day's re-ingest. Now it is refused
    and writes nothing; so is a plan routed from another run's diff than the one it is applied with."""
    folder = tmp_path / "notes"
    folder.mkdir()
    store = new_store()
    older = await _jaws_routed(folder, store, "Steven Spielberg")
    newer = await _jaws_routed(folder, store, "Richard Donner")
    with pytest.raises(stages.StaleDiffError) as mixed:
        await apply_plan(store, newer[0], older[1])
    assert str(mixed.value) == (
        "source 'notes': the plan to write does not come from this diff (document 'jaws.txt': "
        f"{older[1].documents[0].content_hash[:12]} in the plan, {newer[0].documents[0].content_hash[:12]} "
        "in the diff): another run of the source rewrote one of them; nothing is written, ingest the "
        "source again"
    )
    await apply_plan(store, *newer)
    applied = await graph_tables(store, "notes")
    with pytest.raises(stages.StaleDiffError) as stale:
        await apply_plan(store, *older)
    assert str(stale.value) == (
        "source 'notes': document 'jaws.txt' was written by another ingest of the source since this one "
        "read the ledger; nothing is written, ingest the source again (it reads the source as it is now)"
    )
    assert await graph_tables(store, "notes") == applied
    names = sorted(n.name for n in await store.find_nodes(type="person"))
    assert names == ["Richard Donner"]


async def test_a_chunk_that_fails_the_extraction_cancels_the_others_in_flight() -> None:
    """A chunk failing with an error that is not a backend's (a cache write, a bug) failed the stage but
    left the other chunks' extractions running, paying for calls whose results nothing would read. They
    are cancelled with it now."""

    class Crashing(ScriptedExtractor):
        def __init__(self) -> None:
            super().__init__()
            self.started: list[str] = []
            self.finished: list[str] = []

        async def extract(self, text: str) -> ExtractorResult:
            self.started.append(text)
            if text == "CRASH":
                raise RuntimeError("not a backend error")
            await asyncio.sleep(0.05)
            self.finished.append(text)
            return await super().extract(text)

    extractor = Crashing()
    texts = ["a", "CRASH", "b", "c", "d"]
    chunks = ChunkSet(
        source_id="s",
        chunks=[Chunk(document_id=t, index=0, text=t, start=0, end=len(t), content_hash=t) for t in texts],
    )
    with pytest.raises(RuntimeError, match="not a backend error"):
        await extract_chunks(chunks, extractor, concurrency=2)
    await asyncio.sleep(0.3)  # what was left running would extract the rest meanwhile
    # b took the slot CRASH freed as it failed
    assert (extractor.started, extractor.finished) == (["a", "CRASH", "b"], [])


async def test_a_window_reads_what_it_merges_into_in_a_few_statements(tmp_path: Path) -> None:
    """The SQL store reads the nodes and edges a window's documents fold into up front, in one statement
    per table and batch (``Prefetch``), not in a few statements per document; the graph is the same."""
    films = open_source(load_sources(REPO / "data" / "sources.yaml")[0])
    store = SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    extractor = NLPExtractor()
    diff = await diff_documents(films, store, extractor=extractor)
    plan = await route_extractions(
        await extract_chunks(chunk_documents(diff), extractor), store, None, None, None, "exact"
    )
    reads: list[str] = []

    def record(_c: object, _cur: object, statement: str, *_: object) -> None:
        words = statement.split()
        if words[0] == "SELECT" and " WHERE id IN (" in statement:  # a batch read by id
            reads.append(words[words.index("FROM") + 1])

    event.listen(store._engine, "before_cursor_execute", record)
    try:
        update = await apply_plan(store, diff, plan)
    finally:
        event.remove(store._engine, "before_cursor_execute", record)
        await store.close()
    assert (update.ledger_written, update.nodes_added, update.edges_added) == (11, 29, 42)
    assert reads == ["nodes", "edges"]
