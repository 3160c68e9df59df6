"""CandidateIndex: exact names and aliases, Jaccard, cosine; the local decider as routing uses it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.ingest.candidates import Candidate, CandidateIndex, IndexEntry
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.routing import LOCAL_SKIP_KEYS, routing_decider
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.ingest.text import name_words, normalize_name
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


def test_an_indexed_node_costs_under_600_bytes_beyond_its_strings() -> None:
    """20,000 stored nodes (every fourth with an alias, 997 surnames): slotted entries, ids and name words in
    tuples and no per-node name list or words map cost 505 to 525 bytes a node here (a dict-backed entry and
    lists: 893; a frozenset of words per entry: 685)."""
    count = 20_000
    ids = [f"person:given_{n}_family_{n % 997}" for n in range(count)]
    names = [f"Given{n} Family{n % 997}" for n in range(count)]
    aliases = [(f"G. Family{n % 997}",) if n % 4 == 0 else () for n in range(count)]
    # the strings are not the index's: its names' normal forms and words are kept here, not word sets
    every = names + [a for pair in aliases for a in pair]
    strings = [(normalize_name(n), tuple(name_words(n))) for n in every]
    name_words.cache_clear()
    idx, summary = CandidateIndex(None), "a summary " * 12
    tracemalloc.start()
    for node_id, name, alias in zip(ids, names, aliases, strict=True):
        idx.add(IndexEntry(id=node_id, name=name, type="person", aliases=alias, summary=summary, stored=True))
    idx.dirty = set()
    name_words.cache_clear()  # what the cache took while indexing is not the index's
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(idx) == count and idx.word_df("family5") == 21
    assert idx.exact("G. Family5")[:2] == [ids[2996], ids[6984]]  # n = 5 (mod 997) and 0 (mod 4)
    assert len(strings) == 25_000 and held < 600 * count, held / count


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


def numpy_blas_threads() -> list[int]:
    """The thread count of numpy's BLAS (other libraries, such as scipy's, bring their own)."""
    libs = Path(np.__file__).parent.parent
    return [
        p["num_threads"]
        for p in threadpool_info()
        if p["user_api"] == "blas" and p["filepath"].startswith(f"{libs}/numpy")
    ]


def test_cosine_products_run_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Routing's matrix products take one BLAS thread (threads only wait on a busy 2-core machine), and the
    process's setting is back as it was after them."""
    idx = index()
    seen: list[list[int]] = []
    read = CandidateIndex.row_vectors

    def probe(self: CandidateIndex, rows: Iterable[int]) -> np.ndarray:  # read inside each product's block
        seen.append(numpy_blas_threads())
        return read(self, rows)

    monkeypatch.setattr(CandidateIndex, "row_vectors", probe)
    with threadpool_limits(limits=2, user_api="blas"):
        idx.prefilter(["Warner Bros Picture"])
        assert [
            (c.node_id, c.how) for c in idx.candidates(["Warner Bros Picture", "Christophe Nolan"])[0]
        ] == [("n2", "cosine")]
        after = numpy_blas_threads()
    assert seen == [[1], [1], [1]]  # the prefilter's block, the unseen name's block, the exact scores' gather
    assert after == [2]
