"""FastEmbedEmbedder on the shared MiniLM model, offline behaviour, and the embedder factory."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np
import pytest

from graphwalk_core import files
from graphwalk_core.embeddings import (
    Embedder,
    FastEmbedEmbedder,
    HashingEmbedder,
    default_model_path,
    factory,
    make_embedder,
)
from graphwalk_core.embeddings.factory import infer_model_name
from graphwalk_core.embeddings.fastembed import KEY_PROBE, MINILM_MODEL
from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.settings import GraphwalkSettings

OBAMA = "Barack Obama was born in Hawaii."
OBAMA_PARAPHRASE = "Obama's birthplace is Honolulu, Hawaii."
EIFFEL = "The Eiffel Tower is in Paris."


@pytest.fixture(scope="module")
def minilm(request: pytest.FixtureRequest) -> FastEmbedEmbedder:
    from conftest import shared_path

    return make_embedder(GraphwalkSettings(embed_model_path=shared_path("models", "all-minilm-l6-v2-onnx")))


def test_minilm_paraphrase_similarity(minilm: FastEmbedEmbedder) -> None:
    assert isinstance(minilm, FastEmbedEmbedder)
    assert isinstance(minilm, Embedder)
    assert minilm.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    assert minilm.dim == 384
    vecs = minilm.embed([OBAMA, OBAMA_PARAPHRASE, EIFFEL])
    assert vecs.shape == (3, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), np.ones(3), rtol=1e-5)
    assert float(vecs[0] @ vecs[1]) == pytest.approx(0.863, abs=2e-3)  # README: 0.863
    assert float(vecs[0] @ vecs[2]) == pytest.approx(-0.081, abs=2e-3)  # README: -0.081


def test_token_order_batches_match_single_texts(minilm: FastEmbedEmbedder, minilm_dir: Path) -> None:
    texts = [
        "a much longer sentence about the films Tom Hanks starred in",
        "short",
        "medium length text",
        "старшая",
    ]
    fresh = FastEmbedEmbedder(MINILM_MODEL, minilm_dir, batch_size=2)
    # with [CLS]/[SEP]: a 7-letter Cyrillic word costs more tokens than a 3-word English name
    assert fresh.token_counts(["short", "Andre Norton Award", "старшая", texts[0]]) == [3, 5, 9, 14]
    batched = fresh.embed(texts)
    singles = np.vstack([minilm.embed([t]) for t in texts])
    # the shared model quantizes weights only: a row is bit-identical whatever its batch-mates and padding
    np.testing.assert_array_equal(batched, singles)


def test_tokens_are_counted_in_bounded_batches(
    minilm: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tokenizer pads a call's texts to its longest: one long text among 43,000 MetaQA names made
    # counting them pad every name to 256 tokens (+1 GB at the peak, 4.6 s instead of 0.9 s)
    tokenizer, calls = minilm._model.model.tokenizer, []

    class Spy:
        def __getattr__(self, name: str) -> object:
            return getattr(tokenizer, name)

        def encode_batch(self, texts: list[str]) -> list[object]:
            calls.append(len(texts))
            return tokenizer.encode_batch(texts)

    monkeypatch.setattr(minilm._model.model, "tokenizer", Spy())
    texts = ["Leo Fong"] * 600 + ["word " * 300]
    assert minilm.token_counts(texts) == [5] * 600 + [256]
    assert calls == [256, 256, 89]


def test_long_texts_go_fewer_to_a_batch(minilm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 32 passages of 256 tokens a batch grew ONNX Runtime's arena by 620 MB; 8 by 150 MB, as fast
    fresh = FastEmbedEmbedder(MINILM_MODEL, minilm_dir)
    model, calls = fresh._model, []

    class Spy:
        def __getattr__(self, name: str) -> object:
            return getattr(model, name)

        def embed(self, texts: list[str], batch_size: int) -> object:
            calls.append((len(texts), batch_size))
            return model.embed(texts, batch_size=batch_size)

    monkeypatch.setattr(fresh, "_model", Spy())
    texts = [f"Name {i}" for i in range(40)] + [f"word{i} " * 300 for i in range(20)]
    vectors = fresh.embed(texts)
    assert calls == [(32, 32), (8, 8), (8, 8), (8, 8), (4, 4)]  # names 32 a batch, 256-token texts 8
    alone = FastEmbedEmbedder(MINILM_MODEL, minilm_dir)  # the same rows, whatever the batches
    np.testing.assert_array_equal(
        vectors[[0, 45]], np.vstack([alone.embed([texts[0]]), alone.embed([texts[45]])])
    )


def test_repeated_texts_cost_nothing(minilm_dir: Path) -> None:
    emb = FastEmbedEmbedder(MINILM_MODEL, minilm_dir)
    first = emb.embed([OBAMA, EIFFEL, OBAMA])
    np.testing.assert_array_equal(first[0], first[2])
    emb._model = None  # type: ignore[assignment]  # any model call would now fail
    again = emb.embed([EIFFEL, OBAMA])
    np.testing.assert_array_equal(again, first[[1, 0]])
    assert (emb.cache.hits, emb.cache.misses) == (2, 2)


def test_bad_texts(minilm: FastEmbedEmbedder) -> None:
    with pytest.raises(InputError, match=r"text #0 is NoneType"):
        minilm.embed([None])  # type: ignore[list-item]
    assert minilm.embed([]).shape == (0, 384)
    for embed in (minilm.embed, minilm.embed_uncached):  # not the tokenizer's TypeError
        with pytest.raises(InputError) as err:
            embed(["Who is \udcff?"])
        assert str(err.value) == (
            "embed() text #0 holds a lone surrogate at character 7 (undecodable bytes, not Unicode text): "
            "'Who is \\udcff?'"
        )


def test_uncached_model_fails_fast_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    with pytest.raises(ConfigError) as err:  # the folder it looked in, to put the model there
        FastEmbedEmbedder("BAAI/bge-small-en-v1.5")
    assert str(err.value) == (
        f"cannot load embedding model 'BAAI/bge-small-en-v1.5' from fastembed's cache {tmp_path} "
        "(offline, no download): Could not load model BAAI/bge-small-en-v1.5 from any source."
    )
    with pytest.raises(ConfigError, match=f"from fastembed's cache {tmp_path / 'other'} \\(offline"):
        FastEmbedEmbedder("BAAI/bge-small-en-v1.5", cache_dir=tmp_path / "other")
    with pytest.raises(ConfigError, match=r"has no tokenizer\.json"):
        FastEmbedEmbedder(MINILM_MODEL, tmp_path)


def test_factory_falls_back_to_hashing_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(factory, "default_model_path", lambda: None)  # as on a machine without ../shared
    settings = GraphwalkSettings(embed_model="nobody/no-such-model-xyz")
    with caplog.at_level(logging.WARNING, logger="graphwalk_core.embeddings.factory"):
        first = make_embedder(settings)
        second = make_embedder(settings)
    assert type(first) is HashingEmbedder and type(second) is HashingEmbedder
    assert first.model_id == "hashing:256"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith("embedding model unavailable offline, using HashingEmbedder: ")
    assert "nobody/no-such-model-xyz" in warnings[0]


def test_factory_falls_back_to_the_shared_model(
    minilm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    embedder = make_embedder(GraphwalkSettings(embed_model="nobody/not-cached-either"))
    assert embedder.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dim == 384


def test_factory_path_rules(minilm_dir: Path, tmp_path: Path) -> None:
    assert default_model_path() == minilm_dir.resolve()
    explicit = make_embedder(GraphwalkSettings(embed_model_path=minilm_dir, embed_model=MINILM_MODEL))
    assert explicit.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    assert infer_model_name(minilm_dir, "x/y") == MINILM_MODEL
    assert infer_model_name(tmp_path, "x/y") == "x/y"
    with pytest.raises(ConfigError, match=r"GRAPHWALK_EMBED_MODEL_PATH .*missing is not a folder"):
        make_embedder(GraphwalkSettings(embed_model_path=tmp_path / "missing"))


def test_default_path_through_a_symlinked_shared_folder(
    minilm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``../shared`` may be a symlink (as in a CI checkout): the default path is the resolved folder."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "shared").symlink_to(minilm_dir.parents[1], target_is_directory=True)
    monkeypatch.setattr(factory, "_REPO_ROOT", tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    assert default_model_path() == minilm_dir.resolve()


def test_another_onnx_file_of_the_folder(minilm: FastEmbedEmbedder, minilm_dir: Path) -> None:
    qint8 = "model_qint8_dynamic.onnx"
    fast = FastEmbedEmbedder(MINILM_MODEL, minilm_dir, model_file=qint8)
    assert fast.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2:model_qint8_dynamic.onnx"
    vecs = fast.embed([OBAMA, OBAMA_PARAPHRASE, EIFFEL])
    assert float(vecs[0] @ minilm.embed([OBAMA])[0]) == pytest.approx(0.9955, abs=2e-3)
    assert float(vecs[0] @ vecs[1]) == pytest.approx(0.859, abs=3e-3)  # the default file: 0.863
    # activations are quantized per batch: the same text alone gets a slightly different vector
    alone = FastEmbedEmbedder(MINILM_MODEL, minilm_dir, model_file=qint8).embed([OBAMA])[0]
    assert float(alone @ vecs[0]) == pytest.approx(0.9933, abs=2e-3)
    with pytest.raises(ConfigError, match=r"'missing\.onnx' needs a model folder that holds it"):
        FastEmbedEmbedder(MINILM_MODEL, minilm_dir, model_file="missing.onnx")
    with pytest.raises(ConfigError, match=r"GRAPHWALK_EMBED_MODEL_FILE needs GRAPHWALK_EMBED_MODEL_PATH"):
        make_embedder(GraphwalkSettings(embed_model_file=qint8))
    factory._fastembed.cache_clear()
    made = make_embedder(GraphwalkSettings(embed_model_path=minilm_dir, embed_model_file=qint8))
    assert made.model_id == fast.model_id


def test_idle_onnx_threads_sleep_and_uncached_rows_equal_cached(minilm_dir: Path) -> None:
    import onnxruntime as ort

    fresh = FastEmbedEmbedder(MINILM_MODEL, minilm_dir)
    options = fresh._model.model.model.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    with pytest.raises(RuntimeError, match="does not have configuration"):  # later sessions: ORT's default
        ort.SessionOptions().get_session_config_entry("session.intra_op.allow_spinning")
    texts = ["Kyoto", "Paris Hilton", "Kyoto", "Warner Bros. Pictures"]
    uncached = fresh.embed_uncached(texts)
    assert len(fresh.cache) == 0 and fresh.cache.misses == 0
    assert uncached.tobytes() == fresh.embed(texts).tobytes()
    assert fresh.embed_uncached([]).shape == (0, 384)


def test_a_folder_holding_another_model_than_named_is_a_clear_error(minilm_dir: Path) -> None:
    # bge-large loads model.onnx too, but gives 1024 dimensions: the MiniLM file gives 384
    with pytest.raises(ConfigError) as err:
        FastEmbedEmbedder("BAAI/bge-large-en-v1.5", minilm_dir)
    assert str(err.value) == (
        f"embedding model folder {minilm_dir} gives 384-dimension vectors, but 'BAAI/bge-large-en-v1.5' "
        "has 1024: set GRAPHWALK_EMBED_MODEL to the model the folder holds"
    )


def _retuned_copy(minilm_dir: Path, folder: Path, token: int) -> Path:
    """A copy of the MiniLM folder whose word-embedding row of ``token`` is reversed: another model of the
    same name, file name and width, whose vectors differ only for texts holding that token."""
    import shutil

    folder.mkdir()
    for name in ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(minilm_dir / name, folder / name)
    weights = bytearray((minilm_dir / "model.onnx").read_bytes())
    size = 30522 * 384  # the int8 word-embedding table: its raw_data field (9) is the only one this long
    length = bytes([size & 0x7F | 0x80, size >> 7 & 0x7F | 0x80, size >> 14 & 0x7F | 0x80, size >> 21])
    start = weights.index(b"\x4a" + length) + 5 + token * 384
    weights[start : start + 384] = weights[start : start + 384][::-1]
    (folder / "model.onnx").write_bytes(weights)
    return folder


def test_another_model_of_the_same_name_has_its_own_id_and_cached_rows(
    minilm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphwalk_core.embeddings.disk_cache import DiskVectorCache

    paris = FastEmbedEmbedder(MINILM_MODEL, minilm_dir).token_counts(["Paris"])  # [CLS] paris [SEP]
    assert paris == [3]
    tuned_dir = _retuned_copy(minilm_dir, tmp_path / "tuned", token=3000)  # "paris"
    cache = tmp_path / "vectors.sqlite"
    base = FastEmbedEmbedder(MINILM_MODEL, minilm_dir, disk_cache=DiskVectorCache(cache))
    tuned = FastEmbedEmbedder(MINILM_MODEL, tuned_dir, disk_cache=DiskVectorCache(cache))
    digest = hashlib.sha256((tuned_dir / "model.onnx").read_bytes()).hexdigest()
    assert base.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2"  # the shared weights
    assert tuned.model_id == f"fastembed:sentence-transformers/all-MiniLM-L6-v2@sha256:{digest[:16]}"
    # the probe text has no "paris": its row is the same in both models, so it alone cannot tell them apart
    assert base._compute([KEY_PROBE]).tobytes() == tuned._compute([KEY_PROBE]).tobytes()
    stored = base.embed_uncached(["Paris", "Kyoto"])
    own = tuned._compute(["Paris", "Kyoto"])
    assert float(own[0] @ stored[0]) < 0.99 and own[1].tobytes() == stored[1].tobytes()
    assert tuned.embed_uncached(["Paris", "Kyoto"]).tobytes() == own.tobytes()  # not the base model's rows
    monkeypatch.setattr(files, "file_sha256", None)  # each file is hashed once a process
    assert FastEmbedEmbedder(MINILM_MODEL, tuned_dir).model_id == tuned.model_id
