"""The bounded index keys of names, aliases and source ids (``stores.keys.index_key``)."""

from __future__ import annotations

import hashlib

from graphwalk_core.stores.keys import index_key


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_a_key_of_at_most_1024_storable_bytes_is_kept_byte_for_byte() -> None:
    for key in ("", "christopher nolan", "a" * 1024, "é" * 512, "😀" * 256, "trailing "):
        assert index_key(key) == key


def test_a_longer_key_is_its_prefix_and_the_digest_of_the_whole_key() -> None:
    assert index_key("a" * 1025) == "a" * 1024 + "#sha256:" + _sha("a" * 1025)
    # cut on a character: 341 three-byte characters are 1,023 bytes
    assert index_key("あ" * 400) == "あ" * 341 + "#sha256:" + _sha("あ" * 400)
    assert index_key("x" * 1023 + "é") == "x" * 1023 + "#sha256:" + _sha("x" * 1023 + "é")
    # longer than every key kept as it is: the two never meet
    assert (
        min(len(index_key(k * 2000).encode()) for k in "aéあ😀") == 1023 + 8 + 64
    )  # three-byte characters: 1,023 bytes of prefix


def test_a_key_no_database_stores_is_its_storable_prefix_and_digest() -> None:
    assert index_key("doc\x00/1") == "doc#sha256:" + _sha("doc\x00/1")
    assert index_key("a\ud800b") == "a#sha256:" + _sha("a\ud800b")
    assert index_key("\x00") == "#sha256:" + _sha("\x00")
