"""Choose the embedder from settings: a local fastembed folder, else fastembed's cache, else hashing."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.disk_cache import DiskVectorCache
from graphwalk_core.embeddings.fastembed import MINILM_MODEL, FastEmbedEmbedder
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings

log = logging.getLogger(__name__)

SHARED_MODEL_DIR = Path("shared") / "models" / "all-minilm-l6-v2-onnx"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_warned: set[str] = set()


def default_model_path() -> Path | None:
    """The shared offline MiniLM folder (``../shared/models/all-minilm-l6-v2-onnx`` next to the repo)."""
    for base in (_REPO_ROOT, Path.cwd()):
        candidate = base.parent / SHARED_MODEL_DIR
        if (candidate / "tokenizer.json").is_file():
            return candidate.resolve()  # one spelling, also when ../shared is a symlink
    return None


def infer_model_name(path: Path, fallback: str) -> str:
    """The fastembed model name for a folder: MiniLM for an ``all-minilm-l6`` folder, else ``fallback``."""
    return MINILM_MODEL if "minilm-l6" in path.resolve().name.lower() else fallback


@lru_cache(maxsize=4)
def _fastembed(
    model_name: str, model_path: Path | None, model_file: str | None = None, disk_cache: Path | None = None
) -> FastEmbedEmbedder:
    """One loaded model (and vector cache) per (name, folder, file, cache file) in the process."""
    disk = DiskVectorCache(disk_cache) if disk_cache is not None else None
    return FastEmbedEmbedder(model_name, model_path, model_file=model_file, disk_cache=disk)


def make_embedder(settings: GraphwalkSettings) -> Embedder:
    """The embedder ``settings`` ask for.

    ``embed_model_path`` set: fastembed on that folder (the model name is ``embed_model`` when set
    explicitly, else inferred from the folder; ``embed_model_file`` picks another ONNX file in it); a bad
    folder is a ConfigError. Unset: ``embed_model``
    from fastembed's cache, offline; if it is not there, a HashingEmbedder (one warning per model).
    A fastembed model keeps its vectors across runs in ``settings.resolved_embed_cache()`` (see
    :mod:`~graphwalk_core.embeddings.disk_cache`).
    """
    explicit_name = "embed_model" in settings.model_fields_set
    cache = settings.resolved_embed_cache()
    path = settings.embed_model_path
    if settings.embed_model_file is not None and path is None:
        raise ConfigError(
            "GRAPHWALK_EMBED_MODEL_FILE needs GRAPHWALK_EMBED_MODEL_PATH (the folder holding it)"
        )
    if path is not None:
        if not path.is_dir():
            raise ConfigError(f"GRAPHWALK_EMBED_MODEL_PATH {path} is not a folder")
        name = settings.embed_model if explicit_name else infer_model_name(path, settings.embed_model)
        return _fastembed(name, path.resolve(), settings.embed_model_file, cache)
    try:
        return _fastembed(settings.embed_model, None, None, cache)
    except ConfigError as err:
        shared = default_model_path()
        if shared is not None:
            if settings.embed_model not in _warned:
                _warned.add(settings.embed_model)
                log.info(
                    "%s is not cached offline; using the shared model at %s", settings.embed_model, shared
                )
            return _fastembed(MINILM_MODEL, shared.resolve(), None, cache)
        if settings.embed_model not in _warned:
            _warned.add(settings.embed_model)
            log.warning("embedding model unavailable offline, using HashingEmbedder: %s", err)
        return HashingEmbedder()
