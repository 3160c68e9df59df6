"""NameVectors: each name embedded once per graph, rows by node id, the vectorized top-k, and the
engine's prefilter ranking a hub from them without embedding one text per neighbour."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.model import Node
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.engine import Traverser
from graphwalk_core.traversal.name_vectors import NameVectors, top_k
from graphwalk_core.traversal.prefilter import Prefilter, split_top

from .conftest import graph


class CountingEmbedder(HashingEmbedder):
    """A HashingEmbedder that records every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        return super().embed(texts)


HUB = [("H", "r", f"n{i:02d}") for i in range(60)] + [("H", "r", "golden retriever")]


def test_top_k_is_best_first_and_keeps_the_earlier_of_ties() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.9, 0.5, 0.2], dtype=np.float32)
    assert top_k(scores, 3).tolist() == [1, 3, 2]
    assert top_k(scores, 4).tolist() == [1, 3, 2, 4]
    assert top_k(scores, 10).tolist() == [1, 3, 2, 4, 5, 0]
    assert top_k(scores, 0).tolist() == []
    assert top_k(np.array([0.0, 0.3, 0.0, -1.0]), 3, positive_only=True).tolist() == [1]
    kept, pruned = split_top(scores, 2)
    assert kept == [1, 3] and [i for i, _ in pruned] == [2, 4, 5, 0]


async def test_warm_embeds_each_distinct_name_once_and_rows_match_the_embedder() -> None:
    store = graph([("A", "r", "B"), ("B", "r", "C")])
    await store.upsert_node(Node(id="A2", name="A"))  # a second node with a name already seen
    emb = CountingEmbedder()
    names = NameVectors(store, emb)
    assert await names.warm() == 3
    assert sorted(emb.seen) == ["A", "B", "C"]
    assert await names.warm() == 0 and len(emb.seen) == 3
    rows = await names.vectors(["C", "A2", "missing", "A"])
    expected = HashingEmbedder().embed(["C", "A", "A"])
    assert np.array_equal(rows[[0, 1, 3]], expected)
    assert not rows[2].any()  # a node not in the graph: a zero row
    assert len(emb.seen) == 3


async def test_vectors_embed_unseen_nodes_on_demand_once() -> None:
    store = graph([("A", "r", "B")])
    emb = CountingEmbedder()
    names = NameVectors(store, emb)
    await names.vectors(["A"])
    await store.upsert_node(Node(id="Z", name="Zed"))
    await names.vectors(["A", "Z", "Z"])
    await names.vectors(["Z", "B"])
    assert emb.seen == ["A", "Zed", "B"]


async def test_node_similarities_mix_relation_and_name_vectors() -> None:
    store = graph([("A", "born_in", "B")])
    emb = HashingEmbedder()
    prefilter = Prefilter(emb, names=NameVectors(store, emb))
    sims = await prefilter.node_similarities("born in B", ["B", "A"], ["born_in", "born_in"])
    q, rel, b, a = emb.embed(["born in B", "born in", "B", "A"])
    mix = np.stack([rel + b, rel + a])
    mix /= np.linalg.norm(mix, axis=1, keepdims=True)
    assert sims == pytest.approx(mix @ q, abs=1e-6)
    plain = await prefilter.node_similarities("born in B", ["B"])
    assert plain == pytest.approx([float(b @ q)], abs=1e-6)


async def test_engine_prefilter_ranks_a_hub_from_name_vectors() -> None:
    store = graph(HUB)
    emb = CountingEmbedder()
    names = NameVectors(store, emb)
    await names.warm()
    warmed = len(emb.seen)
    decider = FakeDecisionBackend(script=lambda q, s: {k: float(k == "STOP") for k in q.options})
    config = TraversalConfig(prefilter_threshold=50, prefilter_top_n=5)
    traverser = Traverser(store, decider, embedder=emb, config=config, names=names)
    step = (await traverser.walk("which golden retriever", ["H"])).trace.steps[0]
    assert len(step.options) == 6 and (len(step.pruned), step.pruned_reason) == (56, "prefilter")
    assert "golden retriever" in [o["node"] for o in step.options.values() if isinstance(o, dict)]
    assert step.pruned_similarity == sorted(step.pruned_similarity, reverse=True)
    # only the query and the relation were embedded: no per-neighbour "r <name>" texts
    assert emb.seen[warmed:] == ["r", "which golden retriever"]
    await traverser.walk("which golden retriever", ["H"])
    assert len(emb.seen) == warmed + 2
