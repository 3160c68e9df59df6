"""The memory store's grouped-adjacency index agrees with grouping ``adjacent`` node by node."""

from __future__ import annotations

import random

import pytest

from graphwalk_core.model import Edge, Node
from graphwalk_core.stores.base import Direction, group_adjacent, merge_groups
from graphwalk_core.stores.memory import MemoryGraphStore


def by_adjacent(
    store: MemoryGraphStore, nodes: list[str], direction: Direction, edge_types: list[str] | None
) -> dict[tuple[str, str], list[str]]:
    per_node = [
        group_adjacent(store.adjacent_sync(n, direction=direction, edge_types=edge_types)) for n in nodes
    ]
    return merge_groups(per_node)


@pytest.mark.parametrize("seed", range(5))
async def test_index_matches_adjacent_after_writes(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(30)]
    triples = {(rng.choice(names), rng.choice("rst"), rng.choice(names)) for _ in range(120)}
    store = MemoryGraphStore.from_triples(sorted(triples), source_id="test")
    for round_ in range(4):
        for _ in range(20):
            nodes = rng.sample(names, rng.randint(0, 6)) + rng.choices([*names, "ghost"], k=rng.randint(0, 2))
            direction = rng.choice(["both", "out", "in"])
            edge_types = rng.choice([None, ["r"], ["s", "t"]])
            got = store.neighbor_groups(nodes, direction=direction, edge_types=edge_types)  # type: ignore[arg-type]
            want = by_adjacent(store, nodes, direction, edge_types)  # type: ignore[arg-type]
            assert list(got.items()) == list(want.items())
        # writes the index must follow: new edges, deleted edges, deleted and new nodes
        await store.upsert_node(Node(id=f"new{round_}", name=f"new{round_}"))
        await store.upsert_edge(Edge(source=f"new{round_}", type="r", target=rng.choice(names)))
        await store.delete_node(rng.choice(names[10:]))
        names = [n for n in names if await store.get_node(n) is not None] + [f"new{round_}"]


async def test_empty_store() -> None:
    store = MemoryGraphStore()
    assert store.neighbor_groups(["a", "b"]) == {}
    assert store.neighbor_groups([]) == {}
