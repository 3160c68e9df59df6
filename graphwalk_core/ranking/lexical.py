"""BM25 over the corpus passages (``bm25s``: sparse-matrix BM25, English stopwords, no stemming)."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np

from graphwalk_core.traversal.name_vectors import top_k

#: Recorded with lexical seeds: the library, its variant and the tokenizer settings.
BM25_IDENTITY = "bm25s:lucene:k1=1.5:b=0.75:english-stopwords"


class BM25Index:
    """BM25 scores of a query against every passage text (in corpus order)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        tokens = bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)
        #: None when no passage holds a term (bm25s cannot index that): every score is 0
        self._bm25 = bm25s.BM25(method="lucene", k1=1.5, b=0.75) if any(tokens) else None
        if self._bm25 is not None:
            self._bm25.index(tokens, show_progress=False)

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of ``text`` for every passage (zeros when no query term is in the corpus)."""
        terms = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
        if not terms or self._bm25 is None:
            return np.zeros(self.size)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float64)

    def top(self, text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best-scoring passages with a positive score, best first; ties by corpus order."""
        scores = self.scores(text)
        return [(i, float(scores[i])) for i in top_k(scores, k, positive_only=True).tolist()]
