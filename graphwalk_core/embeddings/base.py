"""The Embedder protocol: texts in, L2-normalized float32 rows out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    @property
    def model_id(self) -> str:
        """Identity recorded in results (e.g. ``fastembed:sentence-transformers/all-MiniLM-L6-v2``)."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of L2-normalized rows."""
