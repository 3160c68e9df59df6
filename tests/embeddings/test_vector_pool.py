"""VectorPool: each text embedded once, across threads; a failed embedding leaves nothing pending."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphwalk_core.embeddings import Embedder, HashingEmbedder
from graphwalk_core.embeddings.pool import VectorPool
from graphwalk_core.errors import ConfigError


class GatedEmbedder(HashingEmbedder):
    """A hashing embedder that records its calls; a call including ``gate_text`` waits for ``release``."""

    def __init__(self, gate_text: str = "", fail_text: str = "") -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.gate_text, self.fail_text = gate_text, fail_text
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self.gate_text in texts:
            assert self.release.wait(10)
        if self.fail_text in texts:
            raise RuntimeError(f"cannot embed {self.fail_text}")
        return super().embed(texts)


def test_the_pool_is_an_embedder_with_the_same_vectors() -> None:
    inner = HashingEmbedder()
    pool = VectorPool(inner)
    assert isinstance(pool, Embedder) and pool.model_id == inner.model_id and pool.dim == inner.dim
    texts = ["Kyoto", "Paris", "Kyoto"] + [f"name {n}" for n in range(VectorPool.BLOCK + 3)]
    assert pool.embed(texts).tobytes() == inner.embed(texts).tobytes()
    assert len(pool) == pool.embedded == VectorPool.BLOCK + 5 and "Paris" in pool


def test_a_text_another_thread_is_embedding_is_waited_for_not_embedded_again() -> None:
    embedder = GatedEmbedder(gate_text="b")
    pool = VectorPool(embedder)
    rows: dict[str, list[int]] = {}
    first = threading.Thread(target=lambda: rows.update(first=pool.rows(["a", "b"])))
    first.start()
    while not embedder.calls:  # the first thread is embedding "a" and "b"
        threading.Event().wait(0.001)
    second = threading.Thread(target=lambda: rows.update(second=pool.rows(["b", "c"])))
    second.start()
    while len(embedder.calls) < 2:  # the second thread embeds "c" only, then waits for "b"
        threading.Event().wait(0.001)
    assert second.is_alive()
    embedder.release.set()
    first.join(10)
    second.join(10)
    assert embedder.calls == [["a", "b"], ["c"]]
    assert rows["second"][0] == rows["first"][1]
    assert pool.embed(["a", "b", "c"]).tobytes() == HashingEmbedder().embed(["a", "b", "c"]).tobytes()


def test_a_failed_embedding_leaves_nothing_pending() -> None:
    embedder = GatedEmbedder(fail_text="x")
    pool = VectorPool(embedder)
    with pytest.raises(RuntimeError, match="cannot embed x"):
        pool.rows(["w", "x"])
    assert len(pool) == 0 and not pool._pending
    embedder.fail_text = "nothing"
    assert pool.rows(["x", "w"]) == [0, 1]
    assert embedder.calls == [["w", "x"], ["x", "w"]]


def test_full_blocks_are_read_back_from_the_file_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every full block leaves memory for the pool's file; any rows (shuffled, repeated, across filed
    blocks and the block being filled) come back byte for byte, read in runs of nearby rows."""
    monkeypatch.setattr(VectorPool, "BLOCK", 4)
    monkeypatch.setattr(VectorPool, "GAP", 2)
    monkeypatch.setattr(VectorPool, "SPAN", 8)
    inner = HashingEmbedder()
    pool = VectorPool(inner)
    pool.rows([f"name {n}" for n in range(3)])
    assert pool._file is None and all(b is not None for b in pool._blocks)  # nothing full: no file
    texts = [f"name {n}" for n in range(30)]
    assert pool.rows(texts) == list(range(30))
    assert [b is None for b in pool._blocks] == [True] * 7 + [False]
    rows = [29, 0, 17, 3, 3, 28, 9, 10, 11, 25, 0, 16]
    assert pool.vectors(rows).tobytes() == inner.embed([texts[r] for r in rows]).tobytes()
    assert pool.embed(texts).tobytes() == inner.embed(texts).tobytes()
    assert pool.vectors([]).shape == (0, inner.dim)


def test_no_room_for_the_file_is_a_clear_error_that_loses_no_vector(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(VectorPool, "BLOCK", 4)
    missing = tmp_path / "no-such-folder"
    monkeypatch.setattr(tempfile, "tempdir", str(missing))
    inner = HashingEmbedder()
    pool = VectorPool(inner)
    assert pool.rows(["a", "b", "c"]) == [0, 1, 2]
    with pytest.raises(ConfigError) as error:
        pool.rows(["d", "e"])  # fills the first block: it cannot move to a file
    assert str(error.value) == (
        f"cannot create a file for the vectors of names in the temporary folder {missing}: "
        "No such file or directory (set TMPDIR to a folder with room)"
    )
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    texts = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    assert pool.rows(texts) == list(range(9)) and [b is None for b in pool._blocks] == [True, True, False]
    assert pool.embed(texts).tobytes() == inner.embed(texts).tobytes()
