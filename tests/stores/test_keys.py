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


async def test_keys_a_graph_kept_whole_before_are_still_found_and_deleted(sql_url: str) -> None:
    """A graph written before keys were bounded holds names and provenance source ids of over 1,024 bytes
    whole: they were no longer found (a changed or deleted document's elements, cited by a long
    ``<source>/<path>``, were never retracted) and deleting the element left their index rows."""
    from sqlalchemy import func, select, update

    from graphwalk_core.model import Node, Provenance
    from graphwalk_core.stores import SQLGraphStore
    from graphwalk_core.stores.sql_tables import node_names_table, provenance_table

    source, name = "docs/" + "d" * 1500, "N" * 1500
    store = SQLGraphStore(sql_url)
    try:
        await store.upsert_node(Node(id="n1", name=name, provenance=(Provenance(source_id=source),)))
        with store._engine.begin() as conn:  # what the release before wrote: the keys whole
            conn.execute(update(provenance_table).values(source_id=source))
            conn.execute(update(node_names_table).values(name_key=name.lower()))
        assert [n.id for n in await store.find_nodes(name=name)] == ["n1"]
        assert [n.id for n in (await store.elements_from_source(source))[0]] == ["n1"]
        await store.delete_node("n1")
        with store._engine.connect() as conn:
            rows = [
                conn.scalar(select(func.count()).select_from(t)) for t in (provenance_table, node_names_table)
            ]
        assert rows == [0, 0]
    finally:
        await store.close()
