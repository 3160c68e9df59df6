"""The SQL store's index tables (``provenance``: one row per source an element cites, ``node_names``:
one row per case-folded name or alias) always equal what the stored elements imply, through writes in
and out of transactions, merges, deletes, node merges, retraction and rolled-back savepoints (rows are
deleted by their exact keys, computed from the element the tables held)."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from graphwalk_core.ingest.outputs import UpdateReport
from graphwalk_core.ingest.resolution import retract_document
from graphwalk_core.model import Edge, Node, Provenance
from graphwalk_core.model.merge import merge_node_data, source_ids
from graphwalk_core.stores import SQLGraphStore
from graphwalk_core.stores.memory import name_key
from graphwalk_core.stores.sql_tables import node_names_table, provenance_table

SOURCES = [f"doc/{i}" for i in range(6)]
NAMES = ["Ada", "ada", "Bea", "Cy", "Dee", "Eve", "Flo"]


def implied(nodes: list[Node], edges: list[Edge]) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The index rows the elements imply, sorted."""
    prov = [(s, "node", n.id) for n in nodes for s in source_ids(n)]
    prov += [(s, "edge", e.id) for e in edges for s in source_ids(e)]
    names = [(k, n.id) for n in nodes for k in {name_key(x) for x in (n.name, *n.aliases)}]
    return sorted(prov), sorted(names)


async def check(store: SQLGraphStore) -> None:
    nodes = [n async for n in store.iter_nodes()]
    edges = [e async for e in store.iter_edges()]
    with store._engine.connect() as conn:
        prov = sorted(tuple(r) for r in conn.execute(select(provenance_table)))
        names = sorted(tuple(r) for r in conn.execute(select(node_names_table)))
    assert (prov, names) == implied(nodes, edges)


def node(rng: random.Random, node_id: str) -> Node:
    cited = rng.sample(SOURCES, rng.randint(1, 3))
    return Node(
        id=node_id,
        name=rng.choice(NAMES),
        aliases=tuple(rng.sample(NAMES, rng.randint(0, 2))),
        provenance=tuple(Provenance(source_id=s) for s in cited),
    )


def edge(rng: random.Random, ids: list[str]) -> Edge:
    source, target = rng.sample(ids, 2)
    cited = rng.sample(SOURCES, rng.randint(1, 2))
    return Edge(
        source=source,
        target=target,
        type=rng.choice(["r", "s"]),
        provenance=tuple(Provenance(source_id=s) for s in cited),
    )


@pytest.mark.parametrize("seed", [0, 1])
async def test_index_rows_follow_every_write_and_delete(sql_url: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SQLGraphStore(sql_url)
    ids = [f"n{i}" for i in range(8)]
    try:
        await store.upsert_many([node(rng, i) for i in ids], [])  # outside a transaction
        await check(store)
        for step in range(30):
            op = rng.choice(
                ["upsert", "merge", "edges", "delete_edge", "delete_node", "merge_nodes", "retract"]
            )
            present = sorted((await store.get_nodes(ids)).keys())
            async with store.transaction():
                if op == "upsert" or len(present) < 3:
                    await store.upsert_many([node(rng, rng.choice(ids)) for _ in range(3)], [])
                elif op == "merge":  # read, merge, write back: the known-state path
                    found = await store.get_nodes(rng.sample(present, 2))
                    await store.upsert_many([merge_node_data(n, node(rng, n.id)) for n in found.values()], [])
                elif op == "edges":
                    await store.upsert_many([], [edge(rng, present) for _ in range(3)])
                elif op == "delete_edge":
                    edges = [e async for e in store.iter_edges()]
                    if edges:
                        await store.delete_edge(rng.choice(edges).id)
                elif op == "delete_node":
                    await store.delete_node(rng.choice(present))
                elif op == "merge_nodes":
                    keep, absorb = rng.sample(present, 2)
                    await store.merge_nodes(keep, absorb)
                else:
                    await retract_document(store, rng.choice(SOURCES), UpdateReport(source_id="doc"))
                if step % 5 == 4:  # a savepoint rolled back leaves the rows as they were
                    with pytest.raises(RuntimeError):
                        async with store.transaction():
                            await store.upsert_many([node(rng, rng.choice(ids))], [])
                            await store.counts()
                            raise RuntimeError("roll back")
            await check(store)
    finally:
        await store.close()
