"""Embedders: texts to L2-normalized float32 rows (fastembed offline, or feature hashing)."""

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.embeddings.factory import default_model_path, make_embedder
from graphwalk_core.embeddings.fastembed import FastEmbedEmbedder
from graphwalk_core.embeddings.hashing import HashingEmbedder

__all__ = [
    "Embedder",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "VectorCache",
    "default_model_path",
    "make_embedder",
]
