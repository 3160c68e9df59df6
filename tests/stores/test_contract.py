"""The GraphStore contract, run against every store."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import SQLAlchemyError

from graphwalk_core.errors import InputError
from graphwalk_core.model import AttributeConflict, ConflictValue, Edge, Node, Provenance, edge_id
from graphwalk_core.model.merge import TYPE_CONFLICT_KEY
from graphwalk_core.stores import Adjacent, GraphStore, MemoryGraphStore, SQLGraphStore, node_parts
from graphwalk_core.stores import sql as sql_store
from graphwalk_core.stores.base import (
    EdgeLookup,
    EdgeTriples,
    GroupedAdjacency,
    MetadataReads,
    NodeLabels,
    NodeNames,
    Snapshots,
    edge_between,
    edge_triples,
    get_edges,
    get_metadata_many,
    named_triples,
    neighbor_groups,
    node_labels,
    node_names,
    offers,
    prefetch,
    upsert_many,
)
from graphwalk_core.stores.parquet import export_parquet
from graphwalk_core.stores.sql_engine import sqlite_file
from stores.test_sql_durability import open_transactions

S1 = Provenance(source_id="doc/1", content_hash="h1")
S2 = Provenance(source_id="doc/2", content_hash="h2")


@pytest.fixture(params=["memory", "sqlite", "postgresql", "sqlite-parts", "postgresql-parts"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GraphStore]:
    """Every store; "-parts": a SQL store that keeps every node with a record as a head and parts,
    rewritten whole at the third part (see ``node_parts``)."""
    backend, _, parts = request.param.partition("-")
    if parts:
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setattr(node_parts, "SPLIT_RECORDS", 0)
        monkeypatch.setattr(node_parts, "MAX_PARTS", 3)
    if backend == "memory":
        made: GraphStore = MemoryGraphStore()
    elif backend == "sqlite":
        made = SQLGraphStore(f"sqlite:///{tmp_path / 'g.db'}")
    else:
        made = SQLGraphStore(request.getfixturevalue("postgres_url"))
    yield made
    await made.close()


def node(node_id: str, name: str | None = None, **kw: object) -> Node:
    return Node(id=node_id, name=name or node_id, provenance=kw.pop("provenance", (S1,)), **kw)  # type: ignore[arg-type]


def edge(source: str, kind: str, target: str, **kw: object) -> Edge:
    return Edge(source=source, type=kind, target=target, provenance=kw.pop("provenance", (S1,)), **kw)  # type: ignore[arg-type]


async def movies(store: GraphStore) -> None:
    """Memento -directed_by-> Nolan, Memento -starred_actors-> Pearce, Inception -directed_by-> Nolan."""
    for n in (
        node("Memento", type="film"),
        node("Inception", type="film"),
        node("Christopher Nolan", type="person", aliases=("Chris Nolan",)),
        node("Guy Pearce", type="person", provenance=(S2,)),
    ):
        await store.upsert_node(n)
    await store.upsert_edge(edge("Memento", "directed_by", "Christopher Nolan"))
    await store.upsert_edge(edge("Memento", "starred_actors", "Guy Pearce", provenance=(S2,)))
    await store.upsert_edge(edge("Inception", "directed_by", "Christopher Nolan"))


async def test_protocol_and_upsert_get(store: GraphStore) -> None:
    assert isinstance(store, GraphStore)
    await movies(store)
    assert await store.counts() == (4, 3)
    got = await store.get_node("Christopher Nolan")
    assert got == node("Christopher Nolan", type="person", aliases=("Chris Nolan",))
    assert await store.get_node("nobody") is None
    replaced = node("Memento", type="film", summary="a 2000 film", attributes={"year": 2000})
    await store.upsert_node(replaced)
    assert await store.get_node("Memento") == replaced
    assert await store.counts() == (4, 3)
    found = await store.get_nodes(["Guy Pearce", "nobody", "Memento"])
    assert list(found) == ["Guy Pearce", "Memento"]
    e = edge("Memento", "directed_by", "Christopher Nolan")
    assert await store.get_edge(e.id) == e
    assert await store.get_edge(edge_id("x", "y", "z")) is None


async def test_upsert_edge_needs_endpoints(store: GraphStore) -> None:
    await store.upsert_node(node("a"))
    with pytest.raises(InputError, match=r"unknown node\(s\) \['ghost'\]"):
        await store.upsert_edge(edge("a", "r", "ghost"))
    assert await store.counts() == (1, 0)


async def test_neighbors_and_adjacent_by_direction_and_type(store: GraphStore) -> None:
    await movies(store)
    assert sorted(await store.adjacent("Memento", direction="out")) == [
        Adjacent("directed_by", "Christopher Nolan", "out"),
        Adjacent("starred_actors", "Guy Pearce", "out"),
    ]
    assert sorted(await store.adjacent("Christopher Nolan", direction="in")) == [
        Adjacent("directed_by", "Inception", "in"),
        Adjacent("directed_by", "Memento", "in"),
    ]
    assert await store.adjacent("Christopher Nolan", direction="out") == []
    assert await store.adjacent("Memento", edge_types={"starred_actors"}) == [
        Adjacent("starred_actors", "Guy Pearce", "out")
    ]
    assert await store.adjacent("Memento", edge_types=["nope"]) == []
    both = await store.neighbors("Christopher Nolan", direction="both", edge_types=["directed_by"])
    assert sorted((n.node.id, n.edge.id, n.direction) for n in both) == [
        ("Inception", edge_id("Inception", "directed_by", "Christopher Nolan"), "in"),
        ("Memento", edge_id("Memento", "directed_by", "Christopher Nolan"), "in"),
    ]
    out = await store.neighbors("Memento", direction="out", edge_types=["starred_actors"])
    assert out[0].node == node("Guy Pearce", type="person", provenance=(S2,))
    assert out[0].edge == edge("Memento", "starred_actors", "Guy Pearce", provenance=(S2,))
    with pytest.raises(InputError, match="direction must be one of out, in, both"):
        await store.adjacent("Memento", direction="sideways")  # type: ignore[arg-type]


async def test_neighbor_groups(store: GraphStore) -> None:
    """Grouped adjacency of node sets: the capability (memory) and the generic path (SQL) agree."""
    assert offers(store, GroupedAdjacency) == isinstance(store, MemoryGraphStore)
    for n in "abcd":
        await store.upsert_node(node(n))
    # inserted in (source, type, target) order, so insertion order and SQL order agree
    for e in (("a", "r", "b"), ("a", "r", "c"), ("a", "s", "c"), ("b", "r", "c"), ("d", "r", "c")):
        await store.upsert_edge(edge(*e))
    assert await neighbor_groups(store, ["a"]) == {("r", "out"): ["b", "c"], ("s", "out"): ["c"]}
    assert await neighbor_groups(store, ["c"]) == {("r", "in"): ["a", "b", "d"], ("s", "in"): ["a"]}
    # keys and neighbors in first-appearance order, each neighbor once
    assert await neighbor_groups(store, ["c", "b", "a"]) == {
        ("r", "in"): ["a", "b", "d"],
        ("s", "in"): ["a"],
        ("r", "out"): ["c", "b"],
        ("s", "out"): ["c"],
    }
    assert await neighbor_groups(store, ["c", "b", "a"], direction="out") == {
        ("r", "out"): ["c", "b"],
        ("s", "out"): ["c"],
    }
    assert await neighbor_groups(store, ["a", "c"], edge_types=["s"]) == {
        ("s", "out"): ["c"],
        ("s", "in"): ["a"],
    }
    assert await neighbor_groups(store, ["c"], direction="in", edge_types={"r"}) == {
        ("r", "in"): ["a", "b", "d"]
    }
    assert await neighbor_groups(store, ["nobody"]) == {}
    assert await neighbor_groups(store, []) == {}
    # writes show at once
    await store.delete_edge(edge_id("a", "r", "b"))
    await store.upsert_edge(edge("a", "t", "d"))
    assert await neighbor_groups(store, ["a"]) == {
        ("r", "out"): ["c"],
        ("s", "out"): ["c"],
        ("t", "out"): ["d"],
    }
    await store.delete_node("c")
    assert await neighbor_groups(store, ["a", "d"]) == {("t", "out"): ["d"], ("t", "in"): ["a"]}
    with pytest.raises(ValueError, match="undo"):
        async with store.transaction():
            await store.upsert_edge(edge("d", "u", "a"))
            assert await neighbor_groups(store, ["d"]) == {("u", "out"): ["a"], ("t", "in"): ["a"]}
            raise ValueError("undo")
    assert await neighbor_groups(store, ["a", "d"]) == {("t", "out"): ["d"], ("t", "in"): ["a"]}
    with pytest.raises(InputError, match="direction must be one of out, in, both"):
        await neighbor_groups(store, ["a"], direction="sideways")  # type: ignore[arg-type]


async def test_node_names(store: GraphStore) -> None:
    """Names by id: every store's capability (the SQL one reads the name column) and get_nodes agree."""
    assert offers(store, NodeNames)
    await store.upsert_node(node("q1", "Christopher Nolan"))
    await store.upsert_node(node("q2"))
    for seen in (store, ProtocolOnly(store)):
        names = await node_names(seen, ["q2", "nobody", "q1"])  # type: ignore[arg-type]
        assert names == {"q2": "q2", "q1": "Christopher Nolan"}
    await store.upsert_node(node("q1", "Chris Nolan"))
    assert await node_names(store, ["q1"]) == {"q1": "Chris Nolan"}
    assert await node_names(store, []) == {}


async def test_node_labels(store: GraphStore) -> None:
    """Every node's (id, name, aliases) by id: the capability (memory) and iter_nodes (SQL) agree."""
    assert offers(store, NodeLabels) == isinstance(store, MemoryGraphStore)
    assert [labels async for labels in node_labels(store)] == []
    await store.upsert_node(node("q2", "Christopher Nolan", aliases=("Chris Nolan", "C. Nolan")))
    await store.upsert_node(node("q1"))
    expected = [("q1", "q1", ()), ("q2", "Christopher Nolan", ("Chris Nolan", "C. Nolan"))]
    assert [labels async for labels in node_labels(store)] == expected


class ProtocolOnly:
    """A store read through the GraphStore protocol alone: its class offers no capability."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


async def test_named_triples_and_the_graph_identity(store: GraphStore, tmp_path: Path) -> None:
    """Every edge by node name, and the identity of that graph a trained decider's model records: the same
    for every store, its Parquet copy, the protocol alone, and the triples file of those names (in any
    order, a line repeated); another graph has another."""
    from graphwalk_core.training.graphs import store_identity, triples_identity

    assert offers(store, EdgeTriples)
    await movies(store)
    await store.upsert_node(node("q1", "Ghost"))  # an id that is no name, as an ingested graph's
    await store.upsert_edge(edge("q1", "starred_actors", "Guy Pearce"))
    expected = [
        ("Ghost", "starred_actors", "Guy Pearce"),
        ("Inception", "directed_by", "Christopher Nolan"),
        ("Memento", "directed_by", "Christopher Nolan"),
        ("Memento", "starred_actors", "Guy Pearce"),
    ]
    identity = triples_identity([*reversed(expected), expected[0]])
    assert (
        identity
        == "named-edges:4:"
        + hashlib.sha256(b"".join("\0".join(t).encode() + b"\0" for t in expected)).hexdigest()
    )
    assert sorted(await edge_triples(store)) == [("Inception", "directed_by", "Christopher Nolan"),
        ("Memento", "directed_by", "Christopher Nolan"), ("Memento", "starred_actors", "Guy Pearce"),
        ("q1", "starred_actors", "Guy Pearce")]  # fmt: skip
    parquet = MemoryGraphStore.load(await export_parquet(store, tmp_path / "parquet"))
    for seen in (store, ProtocolOnly(store), parquet):
        assert await named_triples(seen) == expected  # type: ignore[arg-type]
        assert await store_identity(seen) == identity  # type: ignore[arg-type]
    await store.delete_edge(edge_id("q1", "starred_actors", "Guy Pearce"))
    assert await store_identity(store) == triples_identity(expected[1:])


async def test_get_metadata_many(store: GraphStore) -> None:
    """Many metadata values at once: the capability (SQL, a query per batch of keys) and get_metadata one
    key at a time (memory) agree, pending writes of a transaction included."""
    assert offers(store, MetadataReads) == isinstance(store, SQLGraphStore)
    keys = [f"k{i:04d}" for i in range(1200)]  # more than one batch
    async with store.transaction():
        for key in keys[::2]:
            await store.set_metadata(key, f"v{key}")
        assert await get_metadata_many(store, ["k0002", "k0001", "k0002", "k0000"]) == {
            "k0002": "vk0002",
            "k0000": "vk0000",
        }
    found = await get_metadata_many(store, [*reversed(keys), "nobody", "bad\x00key"])
    assert list(found) == list(reversed(keys[::2]))
    assert found["k1198"] == "vk1198"
    assert await get_metadata_many(store, []) == {}


async def test_edge_between(store: GraphStore) -> None:
    """An edge by its endpoints and type: the capability (memory) and get_edge (SQL) agree."""
    assert offers(store, EdgeLookup) == isinstance(store, MemoryGraphStore)
    await movies(store)
    pearce = edge("Memento", "starred_actors", "Guy Pearce", provenance=(S2,))
    assert await edge_between(store, "Memento", "starred_actors", "Guy Pearce") == pearce
    assert await edge_between(store, "Guy Pearce", "starred_actors", "Memento") is None
    assert await edge_between(store, "Memento", "directed_by", "Guy Pearce") is None
    await store.delete_edge(pearce.id)
    assert await edge_between(store, "Memento", "starred_actors", "Guy Pearce") is None


async def test_snapshot(store: GraphStore) -> None:
    """One committed state for many reads: the capability (SQL, which other processes write) reads in
    one transaction and takes no write; a store without it is read as it is. Inside a transaction a
    snapshot sees the transaction's own writes."""
    assert offers(store, Snapshots) == isinstance(store, SQLGraphStore)
    await movies(store)
    if not offers(store, Snapshots):
        return
    async with store.snapshot():
        assert await store.counts() == (4, 3)
        assert [n.id async for n in store.iter_nodes()] == [
            "Christopher Nolan",
            "Guy Pearce",
            "Inception",
            "Memento",
        ]
        with pytest.raises(RuntimeError, match=r"^a write inside SQLGraphStore\.snapshot\(\)"):
            await store.delete_node("Inception")
    async with store.transaction():
        await store.upsert_node(node("Tenet", type="film"))
        async with store.snapshot():
            assert await store.counts() == (5, 3)
    assert await store.counts() == (5, 3)


async def _walk(
    store: SQLGraphStore, reads: list[tuple[int, int]], entered: asyncio.Event, leave: asyncio.Event
) -> None:
    """A walk (an eval's task) reading the counts in a snapshot as it enters, and again as it leaves."""
    async with store.snapshot():
        reads.append(await store.counts())
        entered.set()
        await leave.wait()
        reads.append(await store.counts())


async def _until(event: asyncio.Event, task: asyncio.Task[None]) -> None:
    """Wait for ``task`` to set ``event``; its error if it ends first (a failed assertion)."""
    waiting = asyncio.create_task(event.wait())
    await asyncio.wait([waiting, task], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        task.result()
    assert event.is_set()


def _stale_readers(store: SQLGraphStore, begun_before: datetime) -> int:
    """Read transactions begun before ``begun_before`` still open: on SQLite, whether a full checkpoint
    finds one (busy) or copies the whole log; on PostgreSQL, the sessions idle in one."""
    file = sqlite_file(store.url)
    if file is None:
        return open_transactions(store.url, begun_before)
    with closing(sqlite3.connect(file, timeout=0)) as conn:
        busy, logged, copied = conn.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
    return int(busy != 0 or copied != logged)


async def test_overlapping_snapshots_each_end_with_their_walk(store: GraphStore) -> None:
    """Concurrent walks (an eval's tasks) each read in a snapshot. They shared one read transaction until
    the last of them ended: a walk read the graph as it was when the first began, and while walks overlapped
    the transaction stayed open (SQLite's log grew, no checkpoint could copy it; PostgreSQL could vacuum no
    row deleted since). Each walk now reads the state at its start, in a transaction that ends with it."""
    if not offers(store, Snapshots):
        return
    assert isinstance(store, SQLGraphStore)
    await movies(store)
    other = SQLGraphStore(store.url)  # another process's writer
    first_reads: list[tuple[int, int]] = []
    second_reads: list[tuple[int, int]] = []
    entered, leave = [asyncio.Event(), asyncio.Event()], [asyncio.Event(), asyncio.Event()]
    try:
        first = asyncio.create_task(_walk(store, first_reads, entered[0], leave[0]))
        await _until(entered[0], first)
        await other.upsert_node(node("Tenet", type="film"))
        second_begins = datetime.now(UTC)
        second = asyncio.create_task(_walk(store, second_reads, entered[1], leave[1]))
        await _until(entered[1], second)
        assert _stale_readers(store, second_begins) == 1  # the first walk's
        leave[0].set()
        await first
        assert first_reads == [(4, 3), (4, 3)]  # its state, while another process committed
        assert _stale_readers(store, second_begins) == 0
        await other.upsert_node(node("Dunkirk", type="film"))
        leave[1].set()
        await second
        assert second_reads == [(5, 3), (5, 3)]
        assert await store.counts() == (6, 3)
    finally:
        await other.close()


async def test_snapshots_open_at_once_are_bounded(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each walk holds a pooled connection while it reads: beyond ``SNAPSHOTS_AT_ONCE``, a walk waits for
    one to end (the pool, exhausted, would block the event loop and then fail); a task started inside a
    snapshot reads in it."""
    if not offers(store, Snapshots):
        return
    assert isinstance(store, SQLGraphStore)
    monkeypatch.setattr(sql_store, "SNAPSHOTS_AT_ONCE", 2)
    await movies(store)
    entered = [asyncio.Event() for _ in range(5)]
    leave = asyncio.Event()
    reads: list[tuple[int, int]] = []
    walks = [asyncio.create_task(_walk(store, reads, e, leave)) for e in entered]
    await _until(entered[0], walks[0])
    await _until(entered[1], walks[1])
    for _ in range(20):
        await asyncio.sleep(0)
    assert [e.is_set() for e in entered] == [True, True, False, False, False]
    assert store._engine.pool.checkedout() == 2  # type: ignore[attr-defined]
    leave.set()
    await asyncio.gather(*walks)
    assert reads == [(4, 3)] * 10
    other = SQLGraphStore(store.url)  # another process's writer
    try:
        async with store.snapshot():
            assert await store.counts() == (4, 3)
            await other.upsert_node(node("Tenet", type="film"))
            assert await asyncio.create_task(store.counts()) == (4, 3)
            assert store._engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    finally:
        await other.close()
    assert store._engine.pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_a_walk_whose_snapshot_broke_leaves_the_others_reading(store: GraphStore) -> None:
    """Overlapping snapshots shared one read transaction; once a statement failed in it (the server ended the
    session: a restart, an idle timeout; PostgreSQL: any error aborts the transaction), every walk entering
    while another was still open joined the broken one and failed at its first read. Each reads in its own."""
    if not offers(store, Snapshots):
        return
    assert isinstance(store, SQLGraphStore)
    await movies(store)

    async def broken_walk(fail: str, entered: asyncio.Event, leave: asyncio.Event) -> None:
        async with store.snapshot():
            broken = store._snapshot.get()
            assert broken is not None
            if fail == "disconnect":
                broken.invalidate()  # the server ended the session
            else:
                with pytest.raises(SQLAlchemyError):
                    broken.exec_driver_sql("SELECT * FROM no_such_table")
            entered.set()
            await leave.wait()

    for fail in ("statement", "disconnect"):
        entered, leave = asyncio.Event(), asyncio.Event()
        walk = asyncio.create_task(broken_walk(fail, entered, leave))
        await _until(entered, walk)
        async with store.snapshot():  # a walk starting now
            assert await store.counts() == (4, 3)
        leave.set()
        await walk
        assert store._snapshot.get() is None


async def test_degree(store: GraphStore) -> None:
    await movies(store)
    assert await store.degree("Memento") == 2
    assert await store.degree("Memento", direction="in") == 0
    assert await store.degree("Christopher Nolan", direction="in") == 2
    assert await store.degree("Christopher Nolan", direction="out") == 0
    assert await store.degree("nobody") == 0


async def test_node_types(store: GraphStore) -> None:
    assert await store.node_types() == []
    await movies(store)
    await store.upsert_node(node("2000", type="year"))
    assert await store.node_types() == ["film", "person", "year"]
    await store.delete_node("2000")
    assert await store.node_types() == ["film", "person"]


async def test_find_nodes_by_name_alias_type_case_insensitive(store: GraphStore) -> None:
    await movies(store)
    assert [n.id for n in await store.find_nodes(name="chris NOLAN")] == ["Christopher Nolan"]
    assert [n.id for n in await store.find_nodes(name="CHRISTOPHER nolan")] == ["Christopher Nolan"]
    assert [n.id for n in await store.find_nodes(name="memento", type="person")] == []
    assert [n.id for n in await store.find_nodes(type="film")] == ["Inception", "Memento"]
    assert [n.id for n in await store.find_nodes(type="film", limit=1)] == ["Inception"]
    assert await store.find_nodes(name="nobody") == []


async def test_iteration_in_order(store: GraphStore) -> None:
    await movies(store)
    ids = [n.id async for n in store.iter_nodes(batch_size=2)]
    assert ids == ["Christopher Nolan", "Guy Pearce", "Inception", "Memento"]
    edges = [(e.source, e.type, e.target) async for e in store.iter_edges(batch_size=1)]
    assert edges == [
        ("Inception", "directed_by", "Christopher Nolan"),
        ("Memento", "directed_by", "Christopher Nolan"),
        ("Memento", "starred_actors", "Guy Pearce"),
    ]
    assert isinstance(store, MemoryGraphStore | SQLGraphStore)  # both offer triples() beyond the protocol
    assert sorted(store.triples()) == edges


async def test_delete_cascades(store: GraphStore) -> None:
    await movies(store)
    await store.delete_node("Christopher Nolan")
    assert await store.counts() == (3, 1)
    assert await store.adjacent("Memento") == [Adjacent("starred_actors", "Guy Pearce", "out")]
    assert await store.find_nodes(name="chris nolan") == []
    await store.delete_edge(edge_id("Memento", "starred_actors", "Guy Pearce"))
    assert await store.counts() == (3, 0)
    assert await store.degree("Guy Pearce") == 0
    await store.delete_node("nobody")
    await store.delete_edge(edge_id("a", "b", "c"))
    assert await store.counts() == (3, 0)


async def test_merge_nodes_rewires_merges_and_aliases(store: GraphStore) -> None:
    await movies(store)
    await store.upsert_node(node("C. Nolan", type="entity", attributes={"born": 1970}, provenance=(S2,)))
    await store.upsert_node(
        node("Christopher Nolan", type="person", attributes={"born": 1971}, provenance=(S1,))
    )
    await store.upsert_edge(edge("Inception", "directed_by", "C. Nolan", provenance=(S2,)))
    await store.upsert_edge(edge("C. Nolan", "directed_by", "Christopher Nolan", provenance=(S2,)))
    merged = await store.merge_nodes("Christopher Nolan", "C. Nolan")
    assert merged.type == "person"
    assert merged.name == "Christopher Nolan"
    assert merged.aliases == ("C. Nolan",)
    assert merged.provenance == (S1, S2)
    assert merged.attributes == {"born": 1970}
    born = merged.conflicts["born"].values
    assert [(v.value, v.provenance) for v in born] == [(1970, (S2,)), (1971, (S1,))]
    assert await store.get_node("C. Nolan") is None
    assert await store.get_node("Christopher Nolan") == merged
    assert await store.counts() == (4, 4)
    inception = await store.get_edge(edge_id("Inception", "directed_by", "Christopher Nolan"))
    assert inception is not None and inception.provenance == (S1, S2)
    loop = await store.get_edge(edge_id("Christopher Nolan", "directed_by", "Christopher Nolan"))
    assert loop == edge("Christopher Nolan", "directed_by", "Christopher Nolan", provenance=(S2,))
    assert [n.id for n in await store.find_nodes(name="c. nolan")] == ["Christopher Nolan"]
    assert sorted(await store.adjacent("Christopher Nolan", direction="in")) == [
        Adjacent("directed_by", "Christopher Nolan", "in"),
        Adjacent("directed_by", "Inception", "in"),
        Adjacent("directed_by", "Memento", "in"),
    ]
    with pytest.raises(InputError, match="unknown node 'ghost'"):
        await store.merge_nodes("Memento", "ghost")
    with pytest.raises(InputError, match="into itself"):
        await store.merge_nodes("Memento", "Memento")


async def test_merge_nodes_type_conflict(store: GraphStore) -> None:
    await store.upsert_node(node("a", type="film"))
    await store.upsert_node(node("b", type="person", provenance=(S2,)))
    merged = await store.merge_nodes("a", "b")
    assert merged.type == "film"
    assert [(v.value, v.provenance) for v in merged.conflicts[TYPE_CONFLICT_KEY].values] == [
        ("film", (S1,)),
        ("person", (S2,)),
    ]


async def test_elements_from_source(store: GraphStore) -> None:
    await movies(store)
    await store.upsert_node(
        node("Inception", type="film", attributes={"year": 2010}, attribute_provenance={"year": (S2,)})
    )
    nodes, edges = await store.elements_from_source("doc/2")
    assert [n.id for n in nodes] == ["Guy Pearce", "Inception"]
    assert [e.id for e in edges] == [edge_id("Memento", "starred_actors", "Guy Pearce")]
    nodes, edges = await store.elements_from_source("doc/1")
    assert [n.id for n in nodes] == ["Christopher Nolan", "Inception", "Memento"]
    assert len(edges) == 2
    assert await store.elements_from_source("doc/9") == ([], [])
    await store.delete_node("Guy Pearce")
    assert [n.id for n in (await store.elements_from_source("doc/2"))[0]] == ["Inception"]


async def test_metadata(store: GraphStore) -> None:
    await store.set_metadata("ledger/wiki/a", "h1")
    await store.set_metadata("ledger/wiki/b", "h2")
    await store.set_metadata("other", "x")
    assert await store.get_metadata("ledger/wiki/a") == "h1"
    assert await store.metadata_keys("ledger/") == ["ledger/wiki/a", "ledger/wiki/b"]
    assert await store.metadata_keys() == ["ledger/wiki/a", "ledger/wiki/b", "other"]
    await store.set_metadata("ledger/wiki/a", "h3")
    assert await store.get_metadata("ledger/wiki/a") == "h3"
    await store.set_metadata("ledger/wiki/a", None)
    assert await store.get_metadata("ledger/wiki/a") is None
    assert await store.metadata_keys("ledger/") == ["ledger/wiki/b"]


async def _snapshot(store: GraphStore) -> tuple[list[Node], list[Edge], dict[str, str | None]]:
    meta = {k: await store.get_metadata(k) for k in await store.metadata_keys()}
    return [n async for n in store.iter_nodes()], [e async for e in store.iter_edges()], meta


async def test_transaction_rolls_back_on_exception(store: GraphStore) -> None:
    await movies(store)
    await store.set_metadata("k", "v1")
    before = await _snapshot(store)
    with pytest.raises(RuntimeError, match="boom"):
        async with store.transaction():
            await store.upsert_node(node("New"))
            await store.upsert_edge(edge("New", "r", "Memento"))
            await store.merge_nodes("Christopher Nolan", "Guy Pearce")
            await store.delete_node("Memento")
            await store.set_metadata("k", "v2")
            await store.set_metadata("k2", "x")
            raise RuntimeError("boom")
    assert await _snapshot(store) == before
    assert await store.counts() == (4, 3)
    assert [n.id for n in await store.find_nodes(name="guy pearce")] == ["Guy Pearce"]
    nodes, _ = await store.elements_from_source("doc/2")
    assert [n.id for n in nodes] == ["Guy Pearce"]


async def test_transaction_commits_and_nests(store: GraphStore) -> None:
    async with store.transaction():
        await store.upsert_node(node("a"))
        with pytest.raises(ValueError, match="inner"):
            async with store.transaction():
                await store.upsert_node(node("b"))
                raise ValueError("inner")
        await store.upsert_node(node("c"))
    assert [n.id async for n in store.iter_nodes()] == ["a", "c"]


async def test_reads_inside_a_transaction_see_its_writes(store: GraphStore) -> None:
    """The SQL store holds upserts until a read or a delete needs them in the tables: same answers."""
    await movies(store)
    new_edge = edge("New", "r", "Memento")
    async with store.transaction():
        changed = node("Memento", type="film", summary="held")
        await upsert_many(store, [changed, node("New")], [new_edge])
        assert await store.get_node("Memento") == changed
        assert list(await store.get_nodes(["New", "nobody", "Memento"])) == ["New", "Memento"]
        assert await get_edges(store, [new_edge.id, edge_id("x", "y", "z")]) == {new_edge.id: new_edge}
        assert await store.adjacent("New") == [Adjacent("r", "Memento", "out")]
        assert await store.counts() == (5, 4)
        await store.upsert_node(node("Later"))
        assert [n.id for n in await store.find_nodes(name="later")] == ["Later"]
        with pytest.raises(ValueError, match="inner"):
            async with store.transaction():
                await store.upsert_node(node("Inner"))
                assert await store.get_node("Inner") == node("Inner")
                raise ValueError("inner")
        assert await store.get_node("Inner") is None
        await store.upsert_node(node("Gone"))
        await store.delete_node("New")
        await store.delete_node("Gone")
        assert await store.get_edge(new_edge.id) is None
    assert await store.counts() == (5, 3)
    assert await store.get_node("Memento") == changed


async def test_a_prefetch_changes_no_read(store: GraphStore) -> None:
    """Ids read ahead (present, absent, held) answer as before, and as the transaction's later writes,
    deletes and merges make them; outside a transaction a prefetch reads nothing that could go stale."""
    await movies(store)
    nolan, pearce = (
        edge("Memento", "directed_by", "Christopher Nolan"),
        edge("Memento", "starred_actors", "Guy Pearce"),
    )
    new_edge = edge("New", "r", "Memento")
    await prefetch(store, ["Memento"], [nolan.id])
    await store.upsert_node(node("Memento", type="film", summary="after"))
    assert (await store.get_node("Memento")) == node("Memento", type="film", summary="after")
    async with store.transaction():
        await store.upsert_node(node("Held"))
        await prefetch(store, ["Memento", "New", "Held", "nobody"], [nolan.id, new_edge.id, pearce.id])
        assert list(await store.get_nodes(["Memento", "New", "Held", "nobody"])) == ["Memento", "Held"]
        assert list(await get_edges(store, [new_edge.id, nolan.id])) == [nolan.id]
        await upsert_many(store, [node("New")], [new_edge])
        await store.delete_node("Guy Pearce")
        merged = await store.merge_nodes("Memento", "New")
        assert list(await store.get_nodes(["Memento", "New", "Held", "Guy Pearce"])) == ["Memento", "Held"]
        assert await store.get_node("Memento") == merged
        assert await get_edges(store, [new_edge.id, pearce.id, nolan.id]) == {nolan.id: nolan}
    assert await store.get_node("Memento") == merged
    assert await store.counts() == (4, 3)  # New -r-> Memento became a loop on Memento


async def test_bulk_reads_and_writes(store: GraphStore) -> None:
    await movies(store)
    first, second = edge("Memento", "r", "Inception"), edge("Inception", "r", "Memento")
    await upsert_many(store, [node("x"), node("x", summary="twice")], [first, second, first])
    assert await store.get_node("x") == node("x", summary="twice")
    ids = [second.id, edge_id("a", "b", "c"), first.id, second.id]
    assert list((await get_edges(store, ids)).items()) == [(second.id, second), (first.id, first)]
    with pytest.raises(InputError, match=r"unknown node\(s\) \['ghost'\]"):
        await upsert_many(store, [], [edge("x", "r", "ghost")])


async def test_clear(store: GraphStore) -> None:
    await movies(store)
    await store.set_metadata("k", "v")
    await store.clear()
    assert await store.counts() == (0, 0)
    assert await store.metadata_keys() == []
    assert await store.find_nodes(name="memento") == []


def _text(
    seed: str, size: int, alphabet: str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
) -> str:
    """``size`` characters that compress badly (PostgreSQL compresses an index row before it counts)."""
    digits = "".join(hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(size // 32 + 1))
    return "".join(alphabet[int(digits[2 * i : 2 * i + 2], 16) % len(alphabet)] for i in range(size))


async def test_long_names_aliases_and_source_ids_are_kept_and_found(store: GraphStore) -> None:
    """Names are data: a 3,000-character name, alias or source id is stored and found on every store."""
    name, alias, source = _text("name", 3000), _text("alias", 1500, "éßΣжあ😀"), "files/" + _text("s", 3000)
    long = node("long", name, aliases=(alias,), provenance=(Provenance(source_id=source),))
    await store.upsert_node(long)
    assert await store.get_node("long") == long
    assert await store.find_nodes(name=name.upper()) == [long]
    assert await store.find_nodes(name=alias.casefold()) == [long]
    assert await store.find_nodes(name=name[:-1]) == []
    assert await store.find_nodes(name=name[:-1] + "#") == []
    assert await store.find_nodes(name=name[:1024]) == []
    assert await store.elements_from_source(source) == ([long], [])
    assert await store.elements_from_source(source[:-1]) == ([], [])
    renamed = node("long", "short", provenance=(S1,))
    await store.upsert_node(renamed)
    assert await store.find_nodes(name=name) == []
    assert await store.find_nodes(name=alias) == []
    assert await store.elements_from_source(source) == ([], [])
    await store.upsert_node(long)
    await store.delete_node("long")
    assert await store.find_nodes(name=name) == []
    assert await store.elements_from_source(source) == ([], [])


async def test_the_longest_ids_types_and_metadata_keys_are_kept(store: GraphStore) -> None:
    """An id, type and metadata key at their limits: every store keeps them (an edge between two such
    nodes with such a type is PostgreSQL's largest index row)."""
    a, b = "a" + _text("a", 341, "あいうえおかきくけこ"), "b" + _text("b", 1023)
    kind, relation, key = _text("t", 512), _text("r", 256, "éΣ"), "ingest/" + _text("k", 2041)
    assert [len(x.encode()) for x in (a, b, kind, relation, key)] == [1024, 1024, 512, 512, 2048]
    first, second = node(a, type=kind), node(b, type=kind)
    link = edge(a, relation, b)
    await upsert_many(store, [first, second], [link])
    await store.set_metadata(key, "v")
    assert await store.get_nodes([a, b]) == {a: first, b: second}
    assert await store.node_types() == [kind]
    assert await store.find_nodes(type=kind) == [first, second]
    assert [e async for e in store.iter_edges()] == [link]
    assert await store.adjacent(a, edge_types=[relation]) == [Adjacent(relation, b, "out")]
    assert await store.metadata_keys("ingest/") == [key]
    assert await store.get_metadata(key) == "v"


async def test_over_long_ids_types_and_metadata_keys_are_refused_everywhere(store: GraphStore) -> None:
    """One byte over a limit is the same clear error on every store, and nothing is written."""
    await store.upsert_node(node("x"))
    cases = [
        (store.upsert_node(node("é" * 512 + "x")), r"^node: its id 'éé.*'… is 1,025 bytes in UTF-8; "),
        (
            store.upsert_node(node("y", type="t" * 513)),
            r"^node 'y': its type 'tt.*'… is 513 bytes in UTF-8; ",
        ),
        (
            store.upsert_edge(edge("x", "r" * 513, "x")),
            r"^edge 'x' -> 'x': its type 'rr.*'… is 513 bytes in ",
        ),
        (
            store.set_metadata("k" * 2049, "v"),
            r"^metadata: its key 'kk.*'… is 2,049 bytes in UTF-8; .* at most 2,048$",
        ),
    ]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            await call
    assert await store.counts() == (1, 0)
    assert await store.metadata_keys() == []


async def test_nul_characters_are_refused_or_kept_the_same_everywhere(store: GraphStore) -> None:
    """PostgreSQL keeps no NUL in text: where a store keeps a string as it is, every store refuses one;
    a source id holding one is kept and found (it is only indexed)."""
    calls = [
        (store.upsert_node(node("n\x00")), r"^node: its id 'n\\x00' holds a NUL character \(U\+0000\)"),
        (store.upsert_node(node("n", "a\x00b")), r"^node 'n': its name 'a\\x00b' holds a NUL character"),
        (store.upsert_node(node("n", aliases=("\x00",))), r"^node 'n': its alias '\\x00' holds a NUL"),
        (store.upsert_node(node("n", type="t\x00")), r"^node 'n': its type 't\\x00' holds a NUL"),
        (store.set_metadata("k\x00", "v"), r"^metadata: its key 'k\\x00' holds a NUL"),
        (store.set_metadata("k", "\x00"), r"^metadata 'k': its value '\\x00' holds a NUL"),
    ]
    for call, message in calls:
        with pytest.raises(InputError, match=message):
            await call
    assert await store.counts() == (0, 0)
    cited = node("n", provenance=(Provenance(source_id="doc\x00/1"),))
    await store.upsert_node(cited)
    assert await store.elements_from_source("doc\x00/1") == ([cited], [])
    assert await store.elements_from_source("doc") == ([], [])


async def test_lone_surrogates_in_an_elements_data_are_refused_everywhere(store: GraphStore) -> None:
    """A lone surrogate (from a JSON escape such as "\\ud800": no UTF-8 form, so neither JSON nor Parquet
    holds one) in a summary, an attribute or a conflicting value: the memory store kept it (and failed to
    save it), SQLite and PostgreSQL refused it naming no field, and kept one in an attribute's key as
    U+FFFD. Every store refuses it alike and writes nothing; a NUL there is kept by every store."""
    await store.upsert_node(node("a"))
    values = (ConflictValue(value=1, provenance=()), ConflictValue(value=["\udfff"], provenance=()))
    clash = AttributeConflict(key="k", values=values)
    tail = "holds a lone surrogate (U+{}), which no graph store keeps"
    calls = [
        (
            store.upsert_node(node("n", summary="s\ud800")),
            "node 'n': its summary 's\\ud800' " + tail.format("D800"),
        ),
        (
            store.upsert_node(node("n", attributes={"k": ["x", {"y": "\udc00z"}]})),
            "node 'n': its attribute 'k' value '\\udc00z' " + tail.format("DC00"),
        ),
        (
            store.upsert_node(node("n", attributes={"\ud800": 1})),
            "node 'n': its attribute '\\ud800' " + tail.format("D800"),
        ),
        (
            store.upsert_node(node("n", conflicts={"k": clash})),
            "node 'n': its conflicting attribute 'k' value '\\udfff' " + tail.format("DFFF"),
        ),
        (
            store.upsert_edge(edge("a", "r", "a", attributes={"w": "\ud800"})),
            "edge 'a' -> 'a': its attribute 'w' value '\\ud800' " + tail.format("D800"),
        ),
    ]
    for call, message in calls:
        with pytest.raises(InputError) as caught:
            await call
        assert str(caught.value) == message
    assert await store.counts() == (1, 0)
    kept = node("n", summary="s\x00", attributes={"k\x00": ["\x00"]})
    await store.upsert_node(kept)
    assert await store.get_node("n") == kept


@pytest.mark.parametrize("bad", ["\x00", "a\ud800"])
async def test_keys_no_store_keeps_are_absent_on_every_store(store: GraphStore, bad: str) -> None:
    """A NUL or a lone surrogate (no database holds one) in a read's key finds nothing; it is no error."""
    await movies(store)
    assert await store.get_node(bad) is None
    assert list(await store.get_nodes(["Memento", bad])) == ["Memento"]
    assert await store.get_edge(bad) is None
    assert await store.find_nodes(name=bad) == []
    assert await store.find_nodes(type=bad) == []
    assert await store.adjacent(bad) == []
    assert await store.neighbors(bad) == []
    assert await store.degree(bad) == 0
    assert await store.adjacent("Memento", edge_types=[bad, "directed_by"]) == [
        Adjacent("directed_by", "Christopher Nolan", "out")
    ]
    assert await store.elements_from_source(bad) == ([], [])
    assert await store.get_metadata(bad) is None
    assert await store.metadata_keys(bad) == []
    await store.delete_node(bad)
    await store.delete_edge(bad)
    with pytest.raises(InputError, match=r"^edge 'Memento' -> '.*': its target '.*' holds a (NUL|lone)"):
        await store.upsert_edge(edge("Memento", "r", bad))
    with pytest.raises(InputError, match=r"^node 'x': its name '.*' holds a (NUL character|lone surrogate)"):
        await store.upsert_node(node("x", bad))
    assert await store.counts() == (4, 3)


async def test_many_edge_types_in_one_read(store: GraphStore) -> None:
    """More edge types than PostgreSQL takes bind parameters (65,535) filter the same on every store
    (sorted: the memory store keeps insertion order, the SQL store (source, type, target))."""
    await movies(store)
    kinds = [f"r{i}" for i in range(70_000)] + ["starred_actors", "directed_by"]
    assert sorted(await store.adjacent("Memento", edge_types=kinds)) == [
        Adjacent("directed_by", "Christopher Nolan", "out"),
        Adjacent("starred_actors", "Guy Pearce", "out"),
    ]
    found = await store.neighbors("Christopher Nolan", edge_types=kinds[:-1])
    assert found == []
    found = await store.neighbors("Christopher Nolan", direction="in", edge_types=kinds)
    assert sorted((n.edge.source, n.node.id, n.direction) for n in found) == [
        ("Inception", "Inception", "in"),
        ("Memento", "Memento", "in"),
    ]
