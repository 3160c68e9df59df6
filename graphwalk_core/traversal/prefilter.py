"""Embedding prefilter: keep the options (or frontier nodes) most similar to the query."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphwalk_core.embeddings.base import Embedder


class Prefilter:
    """Cosine top-N against the query. Option-text and query vectors are cached per text."""

    def __init__(self, embedder: Embedder, *, max_cache: int = 500_000) -> None:
        self.embedder = embedder
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

    def top_n(self, query: str, texts: Sequence[str], n: int) -> tuple[list[int], list[tuple[int, float]]]:
        """(kept indices in their original order, pruned (index, similarity) best first).

        Ties keep the earlier text.
        """
        sims = self.similarities(query, texts)
        order = np.argsort(-sims, kind="stable")
        kept = sorted(int(i) for i in order[:n])
        pruned = [(int(i), float(sims[i])) for i in order[n:]]
        return kept, pruned
