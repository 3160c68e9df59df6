"""A bounded LRU cache of vectors by text, so repeated texts are embedded once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from graphwalk_core.errors import InputError


class VectorCache:
    """Text -> vector, least recently used evicted beyond ``maxsize`` entries.

    ``hits`` counts rows served from the cache, ``misses`` distinct texts that had to be computed.
    Thread-safe: ``embed_through`` holds the lock for lookups and stores only, never while computing, so
    one thread can embed ahead (e.g. routing's look-ahead) while another is served from the cache.
    """

    def __init__(self, maxsize: int = 100_000) -> None:
        if maxsize < 1:
            raise InputError(f"VectorCache maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, text: object) -> bool:
        return text in self._data

    def get(self, text: str) -> np.ndarray | None:
        vec = self._data.get(text)
        if vec is not None:
            self._data.move_to_end(text)
        return vec

    def put(self, text: str, vec: np.ndarray) -> None:
        self._data[text] = vec
        self._data.move_to_end(text)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def embed_through(
        self, texts: Sequence[str], dim: int, compute: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        """Rows for ``texts``; ``compute`` is called once with the distinct uncached texts only."""
        out = np.empty((len(texts), dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for row, text in enumerate(texts):
                vec = self.get(text)
                if vec is None:
                    missing.setdefault(text, []).append(row)
                else:
                    out[row] = vec
            self.hits += len(texts) - sum(len(rows) for rows in missing.values())
            self.misses += len(missing)
        if missing:
            todo = list(missing)
            computed = np.asarray(compute(todo), dtype=np.float32)
            if computed.shape != (len(todo), dim):
                raise ValueError(f"embedder returned shape {computed.shape}, expected {(len(todo), dim)}")
            with self._lock:
                for text, vec in zip(todo, computed, strict=True):
                    self.put(text, vec.copy())
                    out[missing[text]] = vec
        return out
