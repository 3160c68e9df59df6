"""The embedding cache across runs: exact rows, per model, never in the way, and a re-ingest that embeds
only names it has not seen."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.disk_cache import DiskVectorCache
from graphwalk_core.embeddings.fastembed import KEY_PROBE, KEY_PROBE_MATE, MINILM_MODEL, FastEmbedEmbedder
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.settings import GraphwalkSettings, default_embed_cache
from graphwalk_core.stores.sql import SQLGraphStore

#: What a model embeds once per process to derive its cache key (see FastEmbedEmbedder.disk_key).
KEY_TEXTS = [KEY_PROBE, KEY_PROBE, KEY_PROBE_MATE]
ROWS = np.array([[0.5, -0.25, 0.125], [1.0, 0.0, -1.0]], dtype=np.float32)


def test_rows_come_back_byte_for_byte_per_model(tmp_path: Path) -> None:
    cache = DiskVectorCache(tmp_path / "sub" / "v.sqlite")
    cache.put("m1", ["a", "b"], ROWS)
    cache.put("m1", ["a"], np.array([[9.0, 9.0, 9.0]], dtype=np.float32))  # stored already: kept
    again = DiskVectorCache(tmp_path / "sub" / "v.sqlite")  # another process
    found = again.get("m1", ["b", "a", "c"], 3)
    assert sorted(found) == ["a", "b"]
    assert found["a"].tobytes() == ROWS[0].tobytes() and found["b"].tobytes() == ROWS[1].tobytes()
    assert again.get("m2", ["a", "b"], 3) == {}
    assert again.get("m1", ["a"], 4) == {}  # another width: not this model's row
    assert (again.hits, cache.stored) == (2, 2)


class RacyCounter(DiskVectorCache):
    """Lets two threads read ``hits`` at once when they can (a barrier in the getter), as a preempted
    thread would: an update outside the lock then loses one thread's count."""

    def __init__(self, path: Path) -> None:
        self._hits = 0
        self.both = threading.Barrier(2)
        super().__init__(path)

    @property
    def hits(self) -> int:
        value = self._hits
        with contextlib.suppress(threading.BrokenBarrierError):
            self.both.wait(timeout=0.5)
        return value

    @hits.setter
    def hits(self, value: int) -> None:
        self._hits = value


def test_hits_count_every_thread(tmp_path: Path) -> None:
    cache = RacyCounter(tmp_path / "v.sqlite")
    cache.put("m", ["a", "b"], ROWS)
    threads = [threading.Thread(target=cache.get, args=("m", ["a", "b"], 3)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cache._hits == 4


@pytest.mark.parametrize("make", ["folder is a file", "not a database"])
def test_an_unusable_file_is_logged_and_skipped(
    tmp_path: Path, make: str, caplog: pytest.LogCaptureFixture
) -> None:
    if make == "folder is a file":
        (tmp_path / "taken").write_text("x")
        path = tmp_path / "taken" / "v.sqlite"
    else:
        path = tmp_path / "v.sqlite"
        path.write_bytes(b"this is not a SQLite database, " * 100)
    cache = DiskVectorCache(path)
    with caplog.at_level(logging.WARNING):
        cache.put("m", ["a", "b"], ROWS)
        assert cache.get("m", ["a"], 3) == {}
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [f"embedding cache {path}"]
    if make == "not a database":
        assert path.read_bytes() == b"this is not a SQLite database, " * 100  # left as it was


def test_another_database_is_left_as_it_was(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A cache path pointed at a graph (``GRAPHWALK_EMBED_CACHE=graph.sqlite``) adds no table to it."""
    path = tmp_path / "graph.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE nodes (id TEXT)")
        conn.execute("CREATE TABLE edges (id TEXT)")
        conn.execute("INSERT INTO nodes VALUES ('n1')")
        conn.commit()
    before = path.read_bytes()
    cache = DiskVectorCache(path)
    with caplog.at_level(logging.WARNING):
        cache.put("m", ["a", "b"], ROWS)
        assert cache.get("m", ["a"], 3) == {}
    assert [r.getMessage() for r in caplog.records] == [
        f"embedding cache {path}: cannot open it (it is another database, with tables edges, nodes; "
        "an embedding cache holds only 'vectors'); computing vectors without it"
    ]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.sqlite"]  # no -wal / -shm left


def test_settings_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_embed_cache() == tmp_path / "graphwalk" / "vectors.sqlite"
    assert (
        GraphwalkSettings(embed_cache="").resolved_embed_cache() == tmp_path / "graphwalk" / "vectors.sqlite"
    )
    assert GraphwalkSettings(embed_cache="OFF").resolved_embed_cache() is None
    assert GraphwalkSettings(embed_cache=str(tmp_path / "v.db")).resolved_embed_cache() == tmp_path / "v.db"


@pytest.mark.parametrize("value", ["off", " Off ", "none", "None", "false", "FALSE", "no", "0"])
def test_the_usual_ways_of_saying_off_disable_the_cache(value: str) -> None:
    """Not a SQLite file named ``false`` (or ``0``) in the working directory."""
    assert GraphwalkSettings(embed_cache=value).resolved_embed_cache() is None


def test_a_tilde_is_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert GraphwalkSettings(embed_cache="~/c/v.db").resolved_embed_cache() == tmp_path / "c" / "v.db"


class CountingEmbedder(FastEmbedEmbedder):
    """MiniLM, recording the texts the model itself embeds (past both caches)."""

    def __init__(self, path: Path, cache: DiskVectorCache | None) -> None:
        super().__init__(MINILM_MODEL, path, disk_cache=cache)
        self.computed: list[str] = []

    def _compute(self, texts: list[str]) -> np.ndarray:
        self.computed.extend(texts)
        return super()._compute(texts)


def test_a_warm_cache_gives_the_models_bytes_without_the_model(tmp_path: Path, minilm_dir: Path) -> None:
    texts = ["Inception", "Christopher Nolan", "a much longer text about the films Tom Hardy starred in"]
    plain = CountingEmbedder(minilm_dir, None).embed_uncached(texts)
    first = CountingEmbedder(minilm_dir, DiskVectorCache(tmp_path / "v.sqlite"))
    assert first.embed_uncached(texts).tobytes() == plain.tobytes()
    second = CountingEmbedder(minilm_dir, DiskVectorCache(tmp_path / "v.sqlite"))
    assert second.embed_uncached(texts).tobytes() == plain.tobytes()
    assert second.embed(["Interstellar"]).shape == (1, 384)  # a decider's text: not kept on disk
    assert second.computed == [*KEY_TEXTS, "Interstellar"]
    assert (first.disk_cache.stored, second.disk_cache.stored, second.disk_cache.hits) == (3, 0, 3)


def test_a_tokenizer_that_cuts_texts_shorter_is_not_served_the_others_rows(
    tmp_path: Path, minilm_dir: Path
) -> None:
    # the same weights with model_max_length 128 instead of 256: the probe, and so the key, are the same
    short = tmp_path / "all-minilm-l6-v2-128"
    short.mkdir()
    for file in minilm_dir.iterdir():
        if file.is_file():
            (short / file.name).write_bytes(file.read_bytes())
    config = (
        (short / "tokenizer_config.json")
        .read_text()
        .replace('"model_max_length": 256', '"model_max_length": 128')
    )
    (short / "tokenizer_config.json").write_text(config)
    texts = ["Christopher Nolan", "word " * 200 + "end"]
    full = CountingEmbedder(minilm_dir, DiskVectorCache(tmp_path / "v.sqlite"))
    cut = CountingEmbedder(short, DiskVectorCache(tmp_path / "v.sqlite"))
    assert full.disk_key() == cut.disk_key()
    assert full.token_counts(texts) == [4, 203] and cut.token_counts(texts) == [4, 128]
    full.embed_uncached(texts)
    rows = cut.embed_uncached(texts)
    assert rows.tobytes() == CountingEmbedder(short, None).embed_uncached(texts).tobytes()
    # a name short enough that no tokenizer of the model cuts it is read back; the long text is not stored
    assert (full.disk_cache.stored, cut.disk_cache.hits, cut.computed) == (1, 1, [*KEY_TEXTS, texts[1]])


def test_a_batch_dependent_model_uses_no_disk_cache(tmp_path: Path, minilm_dir: Path) -> None:
    cache = DiskVectorCache(tmp_path / "v.sqlite")
    quantized = FastEmbedEmbedder(
        MINILM_MODEL, minilm_dir, model_file="model_qint8_dynamic.onnx", disk_cache=cache
    )
    assert quantized.disk_key() is None
    quantized.embed_uncached(["Inception"])
    assert cache.stored == 0


async def _ingest(corpus: Path, graph: Path, embedder: FastEmbedEmbedder) -> None:
    store = SQLGraphStore(f"sqlite:///{graph}")
    try:
        await ingest(
            FileSource(corpus, source_id="films"),
            store,
            decider=LocalDecisionBackend(embedder),
            embedder=embedder,
        )
    finally:
        await store.close()


async def _dump(graph: Path) -> tuple[list[str], list[str]]:
    store = SQLGraphStore(f"sqlite:///{graph}")
    try:
        nodes = sorted([n.model_dump_json() async for n in store.iter_nodes()])
        edges = sorted([e.model_dump_json() async for e in store.iter_edges()])
        return nodes, edges
    finally:
        await store.close()


async def test_a_reingest_embeds_only_new_names_and_builds_the_same_graph(
    tmp_path: Path, minilm_dir: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Inception is a film directed by Christopher Nolan.\n", encoding="utf-8")
    (corpus / "b.txt").write_text("Tom Hardy starred in Inception and in Dunkirk.\n", encoding="utf-8")
    cache = tmp_path / "v.sqlite"
    await _ingest(corpus, tmp_path / "cold.sqlite", CountingEmbedder(minilm_dir, None))
    await _ingest(corpus, tmp_path / "warm.sqlite", CountingEmbedder(minilm_dir, DiskVectorCache(cache)))
    (corpus / "c.txt").write_text("Emma Thomas produced Dunkirk.\n", encoding="utf-8")
    cold = CountingEmbedder(minilm_dir, None)
    await _ingest(corpus, tmp_path / "cold.sqlite", cold)
    warm = CountingEmbedder(minilm_dir, DiskVectorCache(cache))
    await _ingest(corpus, tmp_path / "warm.sqlite", warm)
    assert "Inception" in cold.computed  # without the cache: every stored name again
    assert warm.computed == [*KEY_TEXTS, "Emma Thomas"]
    assert await _dump(tmp_path / "warm.sqlite") == await _dump(tmp_path / "cold.sqlite")


def test_a_busy_file_skips_the_batch_and_stays_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphwalk_core.embeddings import disk_cache

    monkeypatch.setattr(disk_cache, "BUSY_TIMEOUT_S", 0.05)
    path = tmp_path / "v.sqlite"
    DiskVectorCache(path).put("m", ["a"], ROWS[:1])
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process writing
    cache = DiskVectorCache(path)
    cache.put("m", ["b"], ROWS[1:])
    assert cache.stored == 0 and sorted(cache.get("m", ["a", "b"], 3)) == ["a"]
    writer.execute("ROLLBACK")
    writer.close()
    cache.put("m", ["b"], ROWS[1:])
    assert cache.stored == 1 and sorted(cache.get("m", ["a", "b"], 3)) == ["a", "b"]


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """A folder of its own file system (a small tmpfs), unmounted at the end; ``remount_read_only`` makes it
    read-only, as a cache baked into an image or a volume mounted read-only is."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"a read-only file system cannot be made here (mount: {made.stderr.strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def remount_read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def test_a_cache_on_a_read_only_file_system_is_read_and_never_written(
    mount: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = mount / "cache" / "v.sqlite"
    writer = DiskVectorCache(path)
    writer.put("m", ["a", "b"], ROWS)
    writer.close()  # the last connection: no -wal or -shm left
    assert sorted(p.name for p in path.parent.iterdir()) == ["v.sqlite"]
    remount_read_only(mount)
    before = path.read_bytes()
    cache = DiskVectorCache(path)
    with caplog.at_level(logging.INFO, logger="graphwalk_core.embeddings.disk_cache"):
        found = cache.get("m", ["b", "a", "c"], 3)
        cache.put("m", ["c"], ROWS[:1])
        assert sorted(cache.get("m", ["a", "b", "c"], 3)) == ["a", "b"]
    assert found["a"].tobytes() == ROWS[0].tobytes() and found["b"].tobytes() == ROWS[1].tobytes()
    assert (cache.read_only, cache.hits, cache.stored) == (True, 4, 0)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", f"embedding cache {path}: on a read-only file system; reading it, storing nothing")
    ]
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["v.sqlite"]


def test_a_read_only_file_system_without_the_cache_file_is_logged_and_skipped(
    mount: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (mount / "cache").mkdir()
    remount_read_only(mount)
    cache = DiskVectorCache(mount / "cache" / "v.sqlite")
    with caplog.at_level(logging.WARNING):
        cache.put("m", ["a"], ROWS[:1])
        assert cache.get("m", ["a"], 3) == {}
    assert (cache.read_only, len(caplog.records)) == (False, 1)
    assert "cannot open it" in caplog.records[0].getMessage()
