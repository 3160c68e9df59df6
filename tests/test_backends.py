"""Backends: the one builder, and its one rule for a backend that is not configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphwalk_core.backends import Backends, settings_with
from graphwalk_core.decisions import FakeDecisionBackend, LocalDecisionBackend
from graphwalk_core.embeddings import HashingEmbedder
from graphwalk_core.errors import ConfigError
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.settings import GraphwalkSettings


def settings(**kw: object) -> GraphwalkSettings:
    return GraphwalkSettings(_env_file=None, **kw)  # type: ignore[call-arg]


def test_missing_backends_are_reasons_for_systems_and_errors_for_commands() -> None:
    backends = Backends(settings(decider="jev", embed_model_path=Path("hashing")))
    found = backends.for_systems(["relation-greedy", "vector-rag"])
    assert (found.decider, found.llm) == (None, None)
    assert isinstance(found.embedder, HashingEmbedder)
    assert found.reasons == {
        "llm": "no LLM configured (set GRAPHWALK_LLM_MODEL)",
        "decider": "the jev decider needs an API key: set GRAPHWALK_JEV_API_KEY",
    }
    with pytest.raises(ConfigError, match="needs an API key"):
        backends.decider()
    with pytest.raises(ConfigError, match="needs an LLM"):
        backends.extractor("llm")
    assert isinstance(backends.extractor(None), NLPExtractor)


def test_no_model_is_loaded_when_every_system_needs_the_missing_llm() -> None:
    backends = Backends(settings(embed_model_path=Path("hashing")), llm_setting="X or --x")
    found = backends.for_systems(["vector-rag", "iter-rag"])
    assert (found.decider, found.embedder, found.llm) == (None, None, None)
    assert found.reasons == {"llm": "no LLM configured (set X or --x)"}
    assert "embedder" not in backends.__dict__  # the cached embedder was never built


def test_the_local_decider_shares_the_builders_embedder() -> None:
    backends = Backends(settings_with(settings(), embed_model_path=Path("hashing"), decider=None))
    local = backends.decider("local")
    assert isinstance(local, LocalDecisionBackend)
    assert local.embedder is backends.embedder
    assert isinstance(backends.decider("fake"), FakeDecisionBackend)


def test_an_explicit_embed_model_is_not_loaded_from_the_shared_minilm_folder(
    minilm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GRAPHWALK_EMBED_MODEL names a model of fastembed's cache: the shared folder holds MiniLM's files,
    which loaded under another model's name failed (model_optimized.onnx: no such file)."""
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))  # an empty cache: not there offline
    backends = Backends(settings(embed_model="BAAI/bge-small-en-v1.5", embed_cache="off"))
    embedder = backends.embedder  # falls back to the shared MiniLM, under its own name
    assert embedder.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    assert Path(embedder.model_path or "") == minilm_dir.resolve()  # type: ignore[attr-defined]
