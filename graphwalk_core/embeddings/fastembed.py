"""FastEmbedEmbedder: ONNX sentence embeddings via fastembed, offline only, cached by text (in memory, and
across runs in an optional :class:`~graphwalk_core.embeddings.disk_cache.DiskVectorCache`)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.embeddings.disk_cache import DiskVectorCache
from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.files import remembered_sha256

if TYPE_CHECKING:
    from fastembed import TextEmbedding

DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Texts a model's disk-cache key is derived from: its row for the first, alone and beside the second.
KEY_PROBE = "graphwalk vector cache probe"
KEY_PROBE_MATE = "a longer batch-mate, so that the probe's batch is padded: " + "words " * 24
#: The sha256 of ONNX files that a bare model id stands for, by model name: those of the shared MiniLM folder
#: (its SHA256SUMS). A folder's other weights (a fine-tuned copy, say) add their digest to the model id.
REFERENCE_WEIGHTS = {
    "1604f7b34b1ae90bdebeb04c2a4d543b7918251ee8e3c50673a96d10721c1a66": MINILM_MODEL,  # model.onnx
    "1587bfb9cdaec3fec66624e6897ac40511cbadc9ff6201cd4d24a7b719288c26": MINILM_MODEL,  # model_qint8_dynamic
}

#: Texts tokenized per call to count their tokens: the tokenizer pads a call's texts to its longest, so one
#: long text among 43,000 names padded them all to 256 tokens (+1 GB at the peak; 256: +7 MB, and faster).
COUNT_BATCH = 256
#: Padded tokens per text of ``batch_size`` a batch holds at most: names (up to 64 tokens) go 32 a batch,
#: 256-token passages 8. 32 such passages grew ONNX Runtime's arena by 620 MB, 8 by 150 MB, as fast.
TOKENS_PER_TEXT = 64
#: Tokens a tokenizer adds to a text at most ([CLS] and [SEP]; <s>, </s> and a leading "▁").
SPECIAL_TOKENS = 4
#: A lone surrogate: what Python decodes bytes that are not UTF-8 to (a command-line argument, say).
_SURROGATE = re.compile("[\ud800-\udfff]")

log = logging.getLogger(__name__)


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
    """``texts`` as a list, or an InputError naming the first bad item (a lone surrogate too: the
    tokenizer and the disk cache take UTF-8, which has no form for one)."""
    if isinstance(texts, str):
        raise InputError("embed() takes a sequence of texts, not a single str")
    items = list(texts)
    for row, text in enumerate(items):
        if not isinstance(text, str):
            raise InputError(f"embed() text #{row} is {type(text).__name__}, not str")
        if bad := _SURROGATE.search(text):
            raise InputError(
                f"embed() text #{row} holds a lone surrogate at character {bad.start()} (undecodable bytes, "
                f"not Unicode text): {text[:60]!r}{'…' if len(text) > 60 else ''}"
            )
    return items


#: fastembed text-model classes whose models load as (pooling, normalized) from an ONNX file of their folder
_POOLING = {
    "OnnxTextEmbedding": ("CLS", True),
    "PooledNormalizedEmbedding": ("MEAN", True),
    "PooledEmbedding": ("MEAN", False),
}


def register_file_variant(text_embedding: type[TextEmbedding], model_name: str, model_file: str) -> str:
    """Register (once per process) ``model_name`` loading ``model_file``; returns the variant's name."""
    from fastembed.common.model_description import PoolingType

    variant = f"{model_name}@{model_file}"
    if any(desc.model == variant for desc in text_embedding._list_supported_models()):
        return variant
    for cls in text_embedding.EMBEDDINGS_REGISTRY:
        for desc in cls._list_supported_models():
            if desc.model == model_name and cls.__name__ in _POOLING:
                pooling, normalized = _POOLING[cls.__name__]
                text_embedding.add_custom_model(
                    model=variant,
                    pooling=PoolingType[pooling],
                    normalization=normalized,
                    sources=desc.sources,
                    dim=desc.dim,
                    model_file=model_file,
                )
                return variant
    raise ConfigError(f"cannot load another ONNX file for {model_name!r}: not a pooled fastembed text model")


@contextmanager
def _idle_threads_sleep() -> Iterator[None]:
    """ONNX sessions opened inside sleep their idle threads instead of spinning them.

    ONNX Runtime's worker threads busy-wait between operators by default: on a busy machine, or beside
    routing's thread (``Router.look_ahead``), they burn a core for nothing, and a name is a handful of tiny
    operators. fastembed exposes no such session option, so the options it creates while loading are given
    it (same graph, same kernels: the vectors do not change)."""
    import onnxruntime as ort

    original = ort.SessionOptions

    def options() -> ort.SessionOptions:
        made = original()
        made.add_session_config_entry("session.intra_op.allow_spinning", "0")
        made.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return made

    ort.SessionOptions = options
    try:
        yield
    finally:
        ort.SessionOptions = original


def _batches(order: list[int], counts: list[int], size: int, tokens: int) -> Iterator[list[int]]:
    """``order`` (by ascending token count) in batches of at most ``size`` texts and ``tokens`` padded
    tokens (texts times the longest's count); a text longer than ``tokens`` goes alone."""
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) == size or (len(batch) + 1) * counts[i] > tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _fastembed_cache(cache_dir: str | Path | None) -> Path:
    """The folder fastembed looks for models in (as ``fastembed.common.utils.define_cache_dir`` has it)."""
    default = Path(tempfile.gettempdir()) / "fastembed_cache"
    return Path(cache_dir) if cache_dir else Path(os.environ.get("FASTEMBED_CACHE_PATH", default))


def _normalize(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0.0, norms, 1.0)).astype(np.float32, copy=False)


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding`` that never downloads.

    With ``model_path`` the model loads from that folder (``model_name`` names the architecture, e.g.
    ``sentence-transformers/all-MiniLM-L6-v2`` for the shared MiniLM folder). Without it, the model must
    already be in fastembed's cache (``FASTEMBED_CACHE_PATH``/``cache_dir``); otherwise a ConfigError.
    ``model_file`` (with ``model_path``) loads another ONNX file of the folder, e.g. the shared folder's
    ``model_qint8_dynamic.onnx``: about twice as fast on short names, but its activations are quantized
    per batch, so a text's vector varies slightly (cosine ~0.99) with its batch-mates.
    Texts are embedded in token-count order (no padding) and cached, so repeated texts cost nothing;
    with ``disk_cache``, the rows of :meth:`embed_uncached` also across runs (:meth:`disk_key`).
    ``batch_size`` 32: on names as fast as 64 and ONNX Runtime's arena peaks ~35 MB lower (2Wiki names);
    longer texts go fewer to a batch (:data:`TOKENS_PER_TEXT`).
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        model_path: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        model_file: str | None = None,
        batch_size: int = 32,
        cache_size: int = 100_000,
        threads: int | None = None,
        disk_cache: DiskVectorCache | None = None,
    ) -> None:
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        self.model_name = model_name
        self.model_path = Path(model_path) if model_path is not None else None
        self.model_file = model_file
        self.batch_size = batch_size
        self.cache = VectorCache(cache_size)
        self._model = self._load(cache_dir, threads)
        self._dim = int(self._model.embedding_size)
        self._check_width()
        self._weights = self._weights_digest()
        self.disk_cache = disk_cache
        self._disk_key: str | None = None
        self._disk_lock = threading.Lock()

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
        name = self.model_name
        if self.model_file is not None:
            if self.model_path is None or not (self.model_path / self.model_file).is_file():
                raise ConfigError(
                    f"embedding model file {self.model_file!r} needs a model folder that holds it "
                    f"(GRAPHWALK_EMBED_MODEL_PATH; got {self.model_path})"
                )
            name = register_file_variant(TextEmbedding, self.model_name, self.model_file)
        try:
            with _quiet_fastembed(), _idle_threads_sleep():
                return TextEmbedding(name, **kwargs)
        except Exception as err:
            where = str(
                self.model_path or f"fastembed's cache {_fastembed_cache(cache_dir)} (offline, no download)"
            )
            raise ConfigError(f"cannot load embedding model {self.model_name!r} from {where}: {err}") from err

    def _check_width(self) -> None:
        """A ConfigError when the folder's vectors are not the named model's width (it holds another model
        than ``model_name`` whose ONNX file has the same name), before anything is embedded."""
        if self.model_path is None:
            return
        width = len(next(iter(self._model.embed([KEY_PROBE]))))
        if width != self._dim:
            raise ConfigError(
                f"embedding model folder {self.model_path} gives {width}-dimension vectors, but "
                f"{self.model_name!r} has {self._dim}: "
                "set GRAPHWALK_EMBED_MODEL to the model the folder holds"
            )

    def _weights_digest(self) -> str | None:
        """The sha256 of a folder's ONNX file (and of the files it keeps its weights in beside it), or None
        for reference weights: a model from fastembed's cache (downloaded by name), or a file of
        :data:`REFERENCE_WEIGHTS`. Hashed once per file and process (the shared MiniLM: ~30 ms)."""
        if self.model_path is None:
            return None
        description = self._model.model.model_description
        names = [self.model_file or description.model_file, *description.additional_files]
        digests = [remembered_sha256(self.model_path / name) for name in names]
        if len(digests) == 1 and REFERENCE_WEIGHTS.get(digests[0]) == self.model_name:
            return None
        return digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()

    @property
    def model_id(self) -> str:
        """``fastembed:<name>[:<file>]``, and ``@sha256:<digest>`` of a folder's weights that are not the
        name's reference ones: two models of one name never share an id, so neither shares the vectors,
        indexes, eval runs or trained deciders that are kept by it."""
        suffix = f":{self.model_file}" if self.model_file else ""
        weights = f"@sha256:{self._weights[:16]}" if self._weights else ""
        return f"fastembed:{self.model_name}{suffix}{weights}"

    @property
    def dim(self) -> int:
        return self._dim

    def _tokenizer(self) -> Any:
        """The model's ``tokenizers.Tokenizer`` (None if fastembed exposes none)."""
        return getattr(getattr(self._model, "model", None), "tokenizer", None)

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens per text as the model sees them (truncated); character counts if no tokenizer is exposed."""
        tokenizer = self._tokenizer()
        if tokenizer is None:  # pragma: no cover - every fastembed text model has one
            return [len(t) for t in texts]
        return [
            sum(enc.attention_mask)
            for start in range(0, len(texts), COUNT_BATCH)
            for enc in tokenizer.encode_batch(texts[start : start + COUNT_BATCH])
        ]

    def disk_key(self) -> str | None:
        """The key of this model's rows in :attr:`disk_cache`, or None when it may not use one.

        The key is the model id and a digest of the model's row for a fixed text, so other weights, another
        tokenizer or a runtime that computes other bytes never read these rows. A model whose row for a text
        changes with its batch-mates (activations quantized per batch) uses no disk cache: a stored row
        would then depend on the run that stored it. Decided at first use, once per process."""
        if self.disk_cache is None:
            return None
        with self._disk_lock:
            if self._disk_key is None:
                alone = self._compute([KEY_PROBE])[0]
                batched = self._compute([KEY_PROBE, KEY_PROBE_MATE])[0]
                if np.array_equal(alone, batched):
                    self._disk_key = f"{self.model_id}#{hashlib.sha256(alone.tobytes()).hexdigest()[:16]}"
                else:
                    log.info("%s: rows depend on their batch-mates; no disk cache", self.model_id)
                    self._disk_key = ""
        return self._disk_key or None

    def _uncut(self, text: str) -> bool:
        """Whether ``text`` is short enough that no tokenizer of this model cuts it: at most a token per
        UTF-8 byte and :data:`SPECIAL_TOKENS` fit the truncation length. Only such texts use
        :attr:`disk_cache`: a tokenizer that cuts at another length gives the same probe row, so the same
        :meth:`disk_key`, but another row for a long text."""
        truncation = getattr(self._tokenizer(), "truncation", None)
        return not truncation or len(text.encode("utf-8")) + SPECIAL_TOKENS <= truncation["max_length"]

    def _kept(self, texts: list[str]) -> np.ndarray:
        """Distinct texts' rows, in input order: those :attr:`disk_cache` holds read back, the others
        embedded (and stored there, when :meth:`_uncut`)."""
        key = self.disk_key()
        if key is None or self.disk_cache is None:
            return self._compute(texts)
        found = self.disk_cache.get(key, [t for t in texts if self._uncut(t)], self._dim)
        missing = [t for t in texts if t not in found]
        if missing:
            rows = self._compute(missing)
            kept = [i for i, t in enumerate(missing) if self._uncut(t)]
            if kept:
                self.disk_cache.put(key, [missing[i] for i in kept], rows[kept])
            found.update(zip(missing, rows, strict=True))
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = found[text]
        return out

    def _compute(self, texts: list[str]) -> np.ndarray:
        """Embed distinct texts in token-count order, returned in input order.

        A batch pads to its longest text, so batching texts of equal token count wastes no compute: on
        short names this doubles throughput over character-length order (one odd-script name can pad a
        batch of 256 to 20+ tokens). A batch holds ``batch_size`` texts of up to :data:`TOKENS_PER_TEXT`
        tokens, fewer longer ones (:func:`_batches`). With fp32 or weight-only quantized models (the shared
        MiniLM) a row does not depend on its batch-mates, so neither order nor batches change a vector.
        """
        counts = self.token_counts(texts)
        order = sorted(range(len(texts)), key=lambda i: (counts[i], i))
        budget = self.batch_size * TOKENS_PER_TEXT
        rows = [
            row
            for batch in _batches(order, counts, self.batch_size, budget)
            for row in self._model.embed([texts[i] for i in batch], batch_size=len(batch))
        ]
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        out[order] = np.asarray(rows, dtype=np.float32)
        return _normalize(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of L2-normalized rows (thread-safe; ONNX runs concurrently)."""
        return self.cache.embed_through(check_texts(texts), self._dim, self._compute)

    def embed_uncached(self, texts: Sequence[str]) -> np.ndarray:
        """The rows of :meth:`embed`, past the memory cache, for a caller that keeps the vectors itself
        (routing's pool of names): these are the rows :attr:`disk_cache` keeps across runs. The texts
        :meth:`embed` serves (a decider's questions and options, mostly seen once) never go there."""
        items = check_texts(texts)
        distinct = list(dict.fromkeys(items))
        if not distinct:
            return np.empty((0, self._dim), dtype=np.float32)
        vectors = self._kept(distinct)
        if len(distinct) == len(items):
            return vectors
        row = {text: i for i, text in enumerate(distinct)}
        return vectors[[row[t] for t in items]]
