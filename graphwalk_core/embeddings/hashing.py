"""HashingEmbedder: deterministic word + character n-gram feature hashing (tests, last fallback)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np

from graphwalk_core.errors import InputError

_WORD = re.compile(r"\w+", re.UNICODE)
#: Weight of a whole word relative to one of its character n-grams.
_WORD_WEIGHT = 2.0


@lru_cache(maxsize=200_000)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """The (index, sign) of one feature: stable across processes and platforms (blake2b)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)


def _features(text: str, ngram: int) -> Iterator[tuple[str, float]]:
    """Lower-cased words (``w:``) and character n-grams of each padded word (``c:``) with weights, of
    ``text`` in NFC (an accent composed or not is one letter)."""
    for word in _WORD.findall(unicodedata.normalize("NFC", text).lower()):
        yield "w:" + word, _WORD_WEIGHT
        padded = f"<{word}>"
        if len(padded) <= ngram:
            yield "c:" + padded, 1.0
            continue
        for i in range(len(padded) - ngram + 1):
            yield "c:" + padded[i : i + ngram], 1.0


class HashingEmbedder:
    """Signed feature hashing of words and character n-grams into L2-normalized float32 rows.

    Deterministic and dependency-free: strings sharing words or spellings get a high cosine,
    unrelated strings a cosine near 0. A text with no word characters embeds as a zero row.
    """

    def __init__(self, dim: int = 256, ngram: int = 3) -> None:
        if dim < 8:
            raise InputError(f"HashingEmbedder dim must be >= 8, got {dim}")
        if ngram < 2:
            raise InputError(f"HashingEmbedder ngram must be >= 2, got {ngram}")
        self._dim = dim
        self._ngram = ngram

    @property
    def model_id(self) -> str:
        return f"hashing:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of L2-normalized rows."""
        if isinstance(texts, str):
            raise InputError("embed() takes a sequence of texts, not a single str")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"embed() text #{row} is {type(text).__name__}, not str")
            vec = out[row]
            for feature, weight in _features(text, self._ngram):
                index, sign = _slot(feature, self._dim)
                vec[index] += sign * weight
            norm = float(np.linalg.norm(vec))
            if norm > 0.0:
                vec /= norm
        return out
