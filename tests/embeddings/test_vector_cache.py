"""VectorCache: repeated texts are computed once, LRU bounded."""

from __future__ import annotations

import numpy as np
import pytest

from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.errors import InputError


class Counting:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_computes_only_distinct_misses() -> None:
    cache, compute = VectorCache(), Counting()
    out = cache.embed_through(["ab", "c", "ab"], 2, compute)
    assert out.tolist() == [[2.0, 1.0], [1.0, 1.0], [2.0, 1.0]]
    assert compute.calls == [["ab", "c"]]
    out = cache.embed_through(["c", "xyz"], 2, compute)
    assert out.tolist() == [[1.0, 1.0], [3.0, 1.0]]
    assert compute.calls == [["ab", "c"], ["xyz"]]
    assert (cache.hits, cache.misses, len(cache)) == (1, 3, 3)
    cache.embed_through(["ab", "c"], 2, compute)
    assert len(compute.calls) == 2


def test_lru_eviction() -> None:
    cache, compute = VectorCache(maxsize=2), Counting()
    cache.embed_through(["a", "b"], 2, compute)
    cache.get("a")  # a is now most recent
    cache.embed_through(["c"], 2, compute)
    assert "a" in cache and "c" in cache and "b" not in cache


def test_bad_shape_and_size() -> None:
    with pytest.raises(InputError, match="maxsize must be >= 1, got 0"):
        VectorCache(maxsize=0)
    with pytest.raises(ValueError, match=r"shape \(1, 2\), expected \(1, 3\)"):
        VectorCache().embed_through(["a"], 3, Counting())


def test_lock_is_not_held_while_computing() -> None:
    """One thread computes (blocked here) while another is served from the cache: routing's look-ahead."""
    import threading

    cache = VectorCache()
    cache.embed_through(["cached"], 2, Counting())
    started, release = threading.Event(), threading.Event()

    def slow(texts: list[str]) -> np.ndarray:
        started.set()
        assert release.wait(5)
        return np.array([[9.0, 9.0]] * len(texts), dtype=np.float32)

    worker = threading.Thread(target=cache.embed_through, args=(["slow"], 2, slow))
    worker.start()
    assert started.wait(5)
    assert cache.embed_through(["cached"], 2, Counting()).tolist() == [[6.0, 1.0]]  # not blocked
    release.set()
    worker.join(5)
    assert cache.embed_through(["slow"], 2, Counting()).tolist() == [[9.0, 9.0]]
    assert (cache.hits, cache.misses) == (2, 2)
