"""MemoryGraphStore.from_triples: lazily built models behave like upserted ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.model import Edge, Node, Provenance, edge_id
from graphwalk_core.stores import Adjacent, MemoryGraphStore

KB = [
    ("Memento", "directed_by", "Christopher Nolan"),
    ("Memento", "release_year", "2000"),
    ("Memento", "directed_by", "Christopher Nolan"),
    ("Insomnia", "directed_by", "Christopher Nolan"),
    ("2000", "has_tags", "odd"),
]
P = Provenance(source_id="kb", content_hash="abc")


def types(relation: str, role: str) -> str:
    if role == "subject":
        return "film"
    return {"directed_by": "person", "release_year": "year"}.get(relation, "entity")


def bulk() -> MemoryGraphStore:
    return MemoryGraphStore.from_triples(iter(KB), source_id="kb", content_hash="abc", node_type_for=types)


async def test_from_triples_collapses_duplicates_and_types_nodes() -> None:
    store = bulk()
    assert store.node_names(["Memento", "nobody", "odd"]) == {"Memento": "Memento", "odd": "odd"}  # raw nodes
    assert [label[:2] for label in store.node_labels()] == [  # raw nodes: named by their id, no aliases
        ("2000", "2000"), ("Christopher Nolan", "Christopher Nolan"), ("Insomnia", "Insomnia"),
        ("Memento", "Memento"), ("odd", "odd"),
    ]  # fmt: skip
    assert {aliases for _, _, aliases in store.node_labels()} == {()}
    assert await store.counts() == (5, 4)
    assert store.triples() == [KB[0], KB[1], KB[3], KB[4]]
    assert await store.get_node("Christopher Nolan") == Node(
        id="Christopher Nolan", name="Christopher Nolan", type="person", provenance=(P,)
    )
    year = await store.get_node("2000")  # first a release year, later a subject: the first type wins
    assert year is not None and year.type == "year"
    odd = await store.get_node("odd")
    assert odd is not None and odd.type == "entity"
    edge = Edge(source="Memento", type="directed_by", target="Christopher Nolan", provenance=(P,))
    assert await store.get_edge(edge.id) == edge
    assert await store.adjacent("Christopher Nolan") == [
        Adjacent("directed_by", "Memento", "in"),
        Adjacent("directed_by", "Insomnia", "in"),
    ]
    with pytest.raises(InputError, match=r"needs \(subject, relation, object\) tuples, got \('a', 'b'\)"):
        MemoryGraphStore.from_triples([("a", "r", "b"), ("a", "b")], source_id="kb")
    untyped = MemoryGraphStore.from_triples(KB, source_id="kb")
    assert {n.type async for n in untyped.iter_nodes()} == {"entity"}


async def test_bulk_store_lookups_and_sources() -> None:
    store = bulk()
    assert [n.id for n in await store.find_nodes(name="christopher NOLAN")] == ["Christopher Nolan"]
    assert [n.id for n in await store.find_nodes(type="film")] == ["Insomnia", "Memento"]
    nodes, edges = await store.elements_from_source("kb")
    assert [n.id for n in nodes] == ["2000", "Christopher Nolan", "Insomnia", "Memento", "odd"]
    assert [(e.source, e.type, e.target) for e in edges] == sorted([KB[0], KB[1], KB[3], KB[4]])
    neighbors = await store.neighbors("Memento", direction="out", edge_types=["release_year"])
    assert [(n.node.id, n.node.type, n.edge.id) for n in neighbors] == [
        ("2000", "year", edge_id("Memento", "release_year", "2000"))
    ]


async def test_bulk_store_merge_rollback_and_delete() -> None:
    store = bulk()
    with pytest.raises(RuntimeError):
        async with store.transaction():
            await store.merge_nodes("Memento", "Insomnia")
            await store.delete_node("Christopher Nolan")
            raise RuntimeError
    assert await store.counts() == (5, 4)
    assert sorted(store.triples()) == sorted(set(KB))  # restored (their adjacency order may change)
    merged = await store.merge_nodes("Memento", "Insomnia")
    assert (merged.name, merged.aliases, merged.type) == ("Insomnia", ("Memento",), "film")
    assert await store.degree("Christopher Nolan", direction="in") == 1
    await store.delete_node("Christopher Nolan")
    assert await store.counts() == (3, 2)
    nodes, _ = await store.elements_from_source("kb")
    assert [n.id for n in nodes] == ["2000", "Memento", "odd"]
    with pytest.raises(InputError, match=r"unknown node\(s\) \['ghost'\]"):
        MemoryGraphStore._bulk({"a": ("entity", ())}, {("a", "r", "ghost"): ()}, {})


async def test_bulk_store_save_and_load(tmp_path: Path) -> None:
    store = bulk()
    await store.set_metadata("ledger/kb", "h")
    store.save(tmp_path)
    loaded = MemoryGraphStore.load(tmp_path)
    assert [n async for n in loaded.iter_nodes()] == [n async for n in store.iter_nodes()]
    assert [e async for e in loaded.iter_edges()] == [e async for e in store.iter_edges()]
    assert await loaded.metadata_keys() == ["ledger/kb"]
    hub = "Christopher Nolan"
    assert sorted(await loaded.adjacent(hub)) == sorted(await store.adjacent(hub))
