"""VectorPool: the vectors of one run's texts, each embedded once, in fixed blocks; shareable by threads.

Routing keeps every name's vector here (the candidate index's rows, the local decider's names and the
look-ahead thread that embeds the next window's names all read the one pool), so no vector is held twice.
A full block moves to a :class:`~graphwalk_core.scratch.ScratchFile` and is read back with ``pread``: the
pool holds one block in memory whatever the graph's size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.scratch import ScratchFile


@runtime_checkable
class UncachedEmbedding(Protocol):
    """An embedder with a cache of its own that can also embed past it (the pool is the cache then)."""

    def embed_uncached(self, texts: Sequence[str]) -> np.ndarray:
        """The rows ``embed`` gives, neither read from nor stored in the embedder's cache."""


def names_embedding(embedder: Embedder) -> Callable[[Sequence[str]], np.ndarray]:
    """How to embed graph names: past the embedder's memory cache when it has its own, so they are read
    from (and kept in) its disk cache across runs; else its ``embed``."""
    return embedder.embed_uncached if isinstance(embedder, UncachedEmbedding) else embedder.embed


class VectorPool:
    """Text -> float32 vector, each distinct text embedded once, stored in fixed-size blocks of rows (no
    over-allocation and no copy as it grows); full blocks in a temporary file, opened at the first one. An
    :class:`Embedder` itself (same model id and vectors).

    Thread-safe: a text being embedded by one thread is waited for, not embedded again, by another; the
    lock is never held while embedding. Row numbers depend on which thread stored a text first; vectors do
    not (an embedder's row never depends on its batch-mates).
    """

    BLOCK = 4096
    #: Filed rows read in one ``pread`` when at most this many rows apart (reading the rows between costs
    #: less than another call).
    GAP = 16
    #: Filed rows read at once at most (bounds the scratch buffer of a read).
    SPAN = 1024

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._compute = names_embedding(embedder)
        self._row: dict[str, int] = {}
        self._blocks: list[np.ndarray | None] = []  # None: the block is in the file
        self._file: ScratchFile | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, threading.Event] = {}  # text -> set once the thread embedding it is done
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, text: object) -> bool:
        return text in self._row

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array, as the embedder gives it."""
        return self.vectors(self.rows(texts))

    def rows(self, texts: Sequence[str]) -> list[int]:
        """Pool rows of ``texts``; the unseen ones are embedded in one batch (in first-seen order), those
        another thread is embedding are waited for."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._row and t not in self._pending]
            waits = list({id(e): e for e in (self._pending.get(t) for t in texts) if e is not None}.values())
            done = threading.Event()
            self._pending.update(dict.fromkeys(missing, done))
        if missing:
            try:
                vectors = np.asarray(self._compute(missing), dtype=np.float32)
                with self._lock:
                    self._store(missing, vectors)
            finally:
                with self._lock:
                    for text in missing:
                        del self._pending[text]
                done.set()
        for event in waits:
            event.wait()
        with self._lock:
            if all(t in self._row for t in texts):
                return [self._row[t] for t in texts]
        return self.rows(texts)  # another thread failed to embed some: embed them here (or raise)

    def _store(self, texts: list[str], vectors: np.ndarray) -> None:
        start = len(self._row)
        for offset in range(len(texts)):
            row = start + offset
            if row // self.BLOCK == len(self._blocks):
                self._blocks.append(np.zeros((self.BLOCK, vectors.shape[1]), np.float32))
            block = self._blocks[row // self.BLOCK]
            assert block is not None
            block[row % self.BLOCK] = vectors[offset]
            if row % self.BLOCK == self.BLOCK - 1:
                self._file_block(row // self.BLOCK, block)
        self._row.update(zip(texts, range(start, start + len(texts)), strict=True))
        self.embedded += len(texts)

    def _file_block(self, number: int, block: np.ndarray) -> None:
        """Write full block ``number`` to the file, then drop it from memory (a reader that took it first
        keeps its array; one that comes after reads the file)."""
        if self._file is None:  # lives as long as the pool
            self._file = ScratchFile("the vectors of names")
        self._file.write(block.tobytes(), number * block.nbytes)
        self._blocks[number] = None

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The vectors of pool ``rows`` (a new array)."""
        index = np.asarray(rows, dtype=np.intp)
        out = np.empty((len(index), self.embedder.dim), dtype=np.float32)
        block, offset = np.divmod(index, self.BLOCK)
        blocks = self._blocks  # appending a block never moves the ones before
        filed = np.zeros(len(index), dtype=bool)
        for b in np.unique(block).tolist():
            at = block == b
            vectors = blocks[b]
            if vectors is None:
                filed |= at
            else:
                out[at] = vectors[offset[at]]
        if filed.any():
            self._read(out, np.flatnonzero(filed), index[filed])
        return out

    def _read(self, out: np.ndarray, positions: np.ndarray, rows: np.ndarray) -> None:
        """``out[positions] =`` the filed ``rows``' vectors: one ``pread`` per run of rows at most
        :attr:`GAP` apart within an aligned :attr:`SPAN` (into one scratch buffer, the longest run's size)."""
        assert self._file is not None
        order = np.argsort(rows, kind="stable")
        rows, positions = rows[order], positions[order]
        cuts = (np.flatnonzero((np.diff(rows) > self.GAP) | (np.diff(rows // self.SPAN) != 0)) + 1).tolist()
        firsts, ends = [0, *cuts], [*cuts, len(rows)]
        lows, highs = rows[firsts], rows[np.asarray(ends) - 1] + 1
        scratch = np.empty((int((highs - lows).max()), out.shape[1]), dtype=np.float32)
        row_bytes = scratch[0].nbytes
        for first, end, low, high in zip(firsts, ends, lows.tolist(), highs.tolist(), strict=True):
            span = scratch[: high - low]
            self._file.read_into(span, low * row_bytes)
            out[positions[first:end]] = span[rows[first:end] - low]
