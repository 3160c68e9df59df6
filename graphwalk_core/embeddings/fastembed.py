"""FastEmbedEmbedder: ONNX sentence embeddings via fastembed, offline only, cached by text."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.errors import ConfigError, InputError

if TYPE_CHECKING:
    from fastembed import TextEmbedding

DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@contextmanager
def _quiet_fastembed() -> Iterator[None]:
    """Silence fastembed's own (loguru) error lines while probing its cache: we report the outcome once."""
    try:
        from loguru import logger
    except ImportError:  # pragma: no cover - loguru comes with fastembed
        yield
        return
    logger.disable("fastembed")
    try:
        yield
    finally:
        logger.enable("fastembed")


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or an InputError naming the first bad item."""
    if isinstance(texts, str):
        raise InputError("embed() takes a sequence of texts, not a single str")
    items = list(texts)
    for row, text in enumerate(items):
        if not isinstance(text, str):
            raise InputError(f"embed() text #{row} is {type(text).__name__}, not str")
    return items


def _normalize(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0.0, norms, 1.0)).astype(np.float32, copy=False)


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding`` that never downloads.

    With ``model_path`` the model loads from that folder (``model_name`` names the architecture, e.g.
    ``sentence-transformers/all-MiniLM-L6-v2`` for the shared MiniLM folder). Without it, the model must
    already be in fastembed's cache (``FASTEMBED_CACHE_PATH``/``cache_dir``); otherwise a ConfigError.
    Texts are embedded in length order (less padding) and cached, so repeated texts cost nothing.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        model_path: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        batch_size: int = 256,
        cache_size: int = 100_000,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        self.model_name = model_name
        self.model_path = Path(model_path) if model_path is not None else None
        self.batch_size = batch_size
        self.cache = VectorCache(cache_size)
        self._lock = threading.Lock()
        self._model = self._load(cache_dir, threads)
        self._dim = int(self._model.embedding_size)

    def _load(self, cache_dir: str | Path | None, threads: int | None) -> TextEmbedding:
        if self.model_path is not None and not (self.model_path / "tokenizer.json").is_file():
            raise ConfigError(f"embedding model folder {self.model_path} has no tokenizer.json")
        try:
            from fastembed import TextEmbedding
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ConfigError("fastembed is not installed: pip install 'graphwalk[embed]'") from err
        kwargs: dict[str, Any] = {"cache_dir": str(cache_dir) if cache_dir else None, "threads": threads}
        if self.model_path is not None:
            kwargs["specific_model_path"] = str(self.model_path)
        else:
            kwargs["local_files_only"] = True  # never touch the network
        try:
            with _quiet_fastembed():
                return TextEmbedding(self.model_name, **kwargs)
        except Exception as err:
            where = str(self.model_path) if self.model_path else "fastembed's cache (offline, no download)"
            raise ConfigError(f"cannot load embedding model {self.model_name!r} from {where}: {err}") from err

    @property
    def model_id(self) -> str:
        return f"fastembed:{self.model_name}"

    @property
    def dim(self) -> int:
        return self._dim

    def _compute(self, texts: list[str]) -> np.ndarray:
        """Embed distinct texts, shortest first (batches pad to their longest text), in input order."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = self._model.embed([texts[i] for i in order], batch_size=self.batch_size)
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        out[order] = np.asarray(list(rows), dtype=np.float32)
        return _normalize(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of L2-normalized rows."""
        items = check_texts(texts)
        with self._lock:
            return self.cache.embed_through(items, self._dim, self._compute)
