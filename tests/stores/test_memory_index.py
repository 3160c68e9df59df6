"""The memory store's name and source indexes, kept by differences on every write, equal a full rebuild."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from graphwalk_core.model import Edge, Node, Provenance
from graphwalk_core.model.merge import merge_edge_data, merge_node_data
from graphwalk_core.stores import MemoryGraphStore

IDS = ["a", "b", "c"]
records = st.builds(
    Provenance,
    source_id=st.sampled_from(["s/1", "s/2", "s/3", "s/4"]),
    content_hash=st.sampled_from(["x", "y"]),
)
provenance = st.lists(records, min_size=1, max_size=3).map(tuple)
nodes = st.builds(
    lambda node_id, name, prov, named, attr: Node(
        id=node_id,
        name=name,
        provenance=prov,
        name_sources={name: named},
        attributes={"k": 1} if attr else {},
        attribute_provenance={"k": attr} if attr else {},
    ),
    node_id=st.sampled_from(IDS),
    name=st.sampled_from(["Al", "al", "Bo", "Cy"]),
    prov=provenance,
    named=provenance,
    attr=st.one_of(st.just(()), provenance),
)
#: What one routed mention brings: every value backed by its own records (a merge may append them).
mentions = st.builds(
    lambda node_id, name, prov, attr: Node(
        id=node_id,
        name=name,
        provenance=prov,
        name_sources={name: prov},
        attributes={"k": 1} if attr else {},
        attribute_provenance={"k": prov} if attr else {},
        summary=name * 2,
        summary_sources={name * 2: prov},
    ),
    node_id=st.sampled_from(IDS),
    name=st.sampled_from(["Al", "al", "Bo", "Cy"]),
    prov=provenance,
    attr=st.booleans(),
)
edges = st.builds(
    lambda source, target, prov: Edge(source=source, target=target, type="r", provenance=prov),
    source=st.sampled_from(IDS),
    target=st.sampled_from(IDS),
    prov=provenance,
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), nodes),
        st.tuples(st.just("merge"), nodes),
        st.tuples(st.just("merge"), mentions),
        st.tuples(st.just("edge"), edges),
        st.tuples(st.just("merge_edge"), edges),
        st.tuples(st.just("drop"), st.sampled_from(IDS)),
        st.tuples(st.just("drop_edge"), edges),
        st.tuples(st.just("rollback"), nodes),
    ),
    max_size=14,
)


def indexes(store: MemoryGraphStore) -> tuple[object, ...]:
    return store._names, store._node_sources, store._edge_sources


async def apply(store: MemoryGraphStore, op: str, value: object) -> None:
    if op == "put":
        assert isinstance(value, Node)
        await store.upsert_node(value)
    elif op == "merge":  # what an ingest writes: the stored node with a mention folded in
        assert isinstance(value, Node)
        stored = await store.get_node(value.id)
        await store.upsert_node(value if stored is None else merge_node_data(stored, value))
    elif op == "edge":
        assert isinstance(value, Edge)
        if {value.source, value.target} <= set(store._nodes):
            await store.upsert_edge(value)
    elif op == "merge_edge":  # an edge folded into the stored one (only what it adds is indexed)
        assert isinstance(value, Edge)
        if {value.source, value.target} <= set(store._nodes):
            stored_edge = await store.get_edge(value.id)
            await store.upsert_edge(value if stored_edge is None else merge_edge_data(stored_edge, value))
    elif op == "drop":
        assert isinstance(value, str)
        await store.delete_node(value)
    elif op == "drop_edge":
        assert isinstance(value, Edge)
        await store.delete_edge(value.id)
    else:  # a write inside a transaction that fails: undone through the same primitives
        assert isinstance(value, Node)
        try:
            async with store.transaction():
                await store.upsert_node(value)
                await store.delete_node(IDS[0])
                raise RuntimeError
        except RuntimeError:
            pass


@settings(max_examples=200, deadline=None)
@given(operations)
def test_indexes_kept_by_differences_equal_a_full_rebuild(ops: list[tuple[str, object]]) -> None:
    async def run() -> None:
        store = MemoryGraphStore()
        for op, value in ops:
            await apply(store, op, value)
            rebuilt = MemoryGraphStore._bulk(dict(store._nodes), dict(store._edges), {})
            assert indexes(store) == indexes(rebuilt)

    asyncio.run(run())


def test_merges_into_a_grown_node_index_the_sources_they_add() -> None:
    """Mentions from later documents merged one by one into the stored node (each appends to its shared
    sets): every document is indexed, as a rebuild gives, and the older versions are left as they were."""

    async def run() -> None:
        store = MemoryGraphStore()
        versions: list[Node] = []
        for doc in range(30):
            prov = (Provenance(source_id=f"s/{doc:03d}", content_hash="x"),)
            mention = Node(
                id="a", name="Al", provenance=prov, name_sources={"Al": prov}, summary_sources={"about": prov}
            )
            stored = await store.get_node("a")
            await store.upsert_node(mention if stored is None else merge_node_data(stored, mention))
            versions.append(await store.get_node("a"))  # type: ignore[arg-type]
        rebuilt = MemoryGraphStore._bulk(dict(store._nodes), dict(store._edges), {})
        assert indexes(store) == indexes(rebuilt)
        expected = {f"s/{d:03d}": ["a"] for d in range(30)}
        assert {s: sorted(ids) for s, ids in store._node_sources.items()} == expected
        assert [len(v.provenance) for v in versions] == list(range(1, 31))

    asyncio.run(run())
