"""Embedding prefilter: keep the options (or frontier nodes) most similar to the query."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.model import NodeId
from graphwalk_core.traversal.name_vectors import NameVectors, top_k


class Prefilter:
    """Cosine top-N against the query. Text vectors are cached per text; nodes are ranked from the
    graph's cached name vectors (``names``), never re-embedded."""

    def __init__(self, embedder: Embedder, *, names: NameVectors, max_cache: int = 500_000) -> None:
        self.embedder = embedder
        self.names = names
        self._cache: dict[str, np.ndarray] = {}
        self._max_cache = max_cache

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            if len(self._cache) + len(missing) > self._max_cache:
                self._cache.clear()
            for text, vec in zip(missing, self.embedder.embed(missing), strict=True):
                self._cache[text] = np.asarray(vec, dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def similarities(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each text to the query (vectors are L2-normalized)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self._vectors([query])[0]
        return self._vectors(texts) @ q

    async def node_similarities(
        self, query: str, node_ids: Sequence[NodeId], relations: Sequence[str] | None = None
    ) -> np.ndarray:
        """Cosine of the query with each node's name vector (from ``names``), or, with ``relations``
        (one per node: edge options), with the normalized sum of the relation's and the name's vectors."""
        if not node_ids:
            return np.zeros(0, dtype=np.float32)
        vecs = await self.names.vectors(node_ids)
        if relations is not None:
            distinct = list(dict.fromkeys(relations))
            rel_vecs = self._vectors([r.replace("_", " ") for r in distinct])
            at = {r: i for i, r in enumerate(distinct)}
            vecs += rel_vecs[[at[r] for r in relations]]
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs @ self._vectors([query])[0]

    def top_n(self, query: str, texts: Sequence[str], n: int) -> tuple[list[int], list[tuple[int, float]]]:
        """(kept indices in their original order, pruned (index, similarity) best first).

        Ties keep the earlier text.
        """
        return split_top(self.similarities(query, texts), n)


def split_top(sims: np.ndarray, n: int) -> tuple[list[int], list[tuple[int, float]]]:
    """(the ``n`` best indices in their original order, the rest as (index, similarity) best first)."""
    order = top_k(sims, len(sims))
    kept = sorted(int(i) for i in order[:n])
    return kept, [(int(i), float(sims[i])) for i in order[n:]]
