"""HashingEmbedder: deterministic, normalized, similar strings close."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import InputError

TEXTS = [
    "Barack Obama was born in Hawaii.",
    "Obama was born in Honolulu, Hawaii.",
    "The Eiffel Tower is in Paris.",
    "Barack Obama",
    "barack  OBAMA!",
    "Barak Obama",
]


def test_protocol_identity_and_shape() -> None:
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder)
    assert emb.model_id == "hashing:256"
    assert emb.dim == 256
    vecs = emb.embed(TEXTS)
    assert vecs.shape == (6, 256)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), np.ones(6), rtol=1e-6)
    assert HashingEmbedder(dim=64).embed(["x y"]).shape == (1, 64)


def test_similarities_exact() -> None:
    vecs = HashingEmbedder().embed(TEXTS)
    sims = np.round(vecs @ vecs.T, 4)
    assert sims[0, 1] == pytest.approx(0.7885, abs=1e-4)  # paraphrase
    assert sims[0, 2] == pytest.approx(0.1333, abs=1e-4)  # unrelated (shares "in")
    assert sims[3, 4] == pytest.approx(1.0, abs=1e-6)  # case and punctuation are ignored
    assert sims[3, 5] == pytest.approx(0.6489, abs=1e-4)  # a misspelling stays close
    assert sims[3, 2] == pytest.approx(-0.063, abs=1e-4)


def test_an_accent_embeds_alike_composed_or_decomposed() -> None:
    # "é" as one character (NFC) or as "e" + a combining accent (NFD): the same name, the same row
    composed, decomposed = HashingEmbedder().embed(["Beyoncé Knowles", "Beyonce\u0301 Knowles"])
    assert composed.tobytes() == decomposed.tobytes()


def test_deterministic_across_processes() -> None:
    code = (
        "from graphwalk_core.embeddings.hashing import HashingEmbedder;"
        "print(HashingEmbedder().embed(['Barack Obama'])[0].tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == HashingEmbedder().embed(["Barack Obama"])[0].tobytes().hex()


def test_empty_text_is_zero_row_and_empty_batch() -> None:
    emb = HashingEmbedder(dim=16)
    assert emb.embed(["", "..."]).tolist() == [[0.0] * 16, [0.0] * 16]
    assert emb.embed([]).shape == (0, 16)


def test_bad_input_named() -> None:
    with pytest.raises(InputError, match="not a single str"):
        HashingEmbedder().embed("Barack Obama")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"text #1 is int"):
        HashingEmbedder().embed(["a", 3])  # type: ignore[list-item]
    with pytest.raises(InputError, match="dim must be >= 8, got 4"):
        HashingEmbedder(dim=4)
