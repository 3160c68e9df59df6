"""CandidateIndex: exact names and aliases, Jaccard, cosine; the local decider as routing uses it."""

from __future__ import annotations

from pathlib import Path

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.ingest.candidates import Candidate, CandidateIndex, IndexEntry
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.routing import LOCAL_SKIP_KEYS, routing_decider
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import ScriptedExtractor


def index() -> CandidateIndex:
    idx = CandidateIndex(HashingEmbedder(dim=256), cosine_threshold=0.75)
    idx.add(IndexEntry(id="n1", name="Christopher Nolan", type="person"))
    idx.add(IndexEntry(id="n2", name="Warner Bros. Pictures", type="organization"))
    idx.add(IndexEntry(id="n3", name="1999", type="year"), embed=False)
    idx.add_name("n1", "Chris Nolan")
    return idx


def test_exact_alias_jaccard_and_cosine() -> None:
    idx = index()
    exact, jac, cos, none = idx.candidates(["chris  NOLAN", "Nolan", "Warner Bros Picture", "Kyoto"])
    assert exact == [Candidate("n1", 1.0, "exact")]
    assert jac == [Candidate("n1", 0.5, "jaccard")]
    assert [(c.node_id, c.how) for c in cos] == [("n2", "cosine")] and cos[0].score > 0.75
    assert none == []
    assert idx.entries["n1"].aliases == ("Chris Nolan",)
    assert idx.exact("1999") == ["n3"] and len(idx) == 3
    assert idx.candidates(["Nolan"], fuzzy=False) == [[]]


def test_local_decider_compares_names_only(tmp_path: Path) -> None:
    local = LocalDecisionBackend(HashingEmbedder())
    routed = routing_decider(local)
    assert isinstance(routed, LocalDecisionBackend) and routed is not local
    assert routed.skip_keys >= LOCAL_SKIP_KEYS and "passage" not in local.skip_keys
    assert routing_decider(routed) is routed


async def test_local_decider_merges_a_short_name(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("E Christopher Nolan|person", encoding="utf-8")
    (tmp_path / "b.txt").write_text("E Nolan|person\nE Kyoto|city", encoding="utf-8")
    store, embedder = MemoryGraphStore(), HashingEmbedder()
    report = await ingest(
        FileSource(tmp_path),
        store,
        extractor=ScriptedExtractor(),
        decider=LocalDecisionBackend(embedder),
        embedder=embedder,
        routing="jev",
    )
    assert report.routing_cost.calls == 1
    assert sorted([(n.name, n.aliases) async for n in store.iter_nodes()]) == [
        ("Christopher Nolan", ("Nolan",)),
        ("Kyoto", ()),
    ]
