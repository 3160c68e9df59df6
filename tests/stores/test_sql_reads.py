"""SQL store reads by id: batched driver lookups, and a write transaction answering from what it knows
the tables hold (no query), forgetting it when a savepoint rolls back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import event

from graphwalk_core.model import Edge, Node, Provenance
from graphwalk_core.stores import SQLGraphStore

P = Provenance(source_id="doc/1")


@contextmanager
def selects(store: SQLGraphStore) -> Iterator[list[str]]:
    """The SELECT statements ``store`` sends to its database meanwhile."""
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "pg_advisory" not in statement:
            seen.append(statement)

    event.listen(store._engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store._engine, "before_cursor_execute", record)


async def test_reads_by_id_span_batches_in_the_order_asked(sql_url: str) -> None:
    store = SQLGraphStore(sql_url)
    try:
        nodes = [Node(id=f"n{i:04d}", name=f"N{i}", provenance=(P,)) for i in range(1203)]
        edges = [Edge(source=nodes[i].id, target=nodes[i + 1].id, type="next") for i in range(0, 1202, 2)]
        await store.upsert_many(nodes, edges)
        asked = [f"n{i:04d}" for i in range(1300, -1, -1)]  # 98 unknown ids, then every node backwards
        found = await store.get_nodes(asked)
        assert list(found) == asked[98:] and found["n0007"] == nodes[7]
        edge_ids = [e.id for e in reversed(edges)] + ["e_missing"]
        assert list(await store.get_edges(edge_ids)) == edge_ids[:-1]
    finally:
        await store.close()


async def test_a_transaction_reads_what_it_wrote_or_read_without_a_query(sql_url: str) -> None:
    store = SQLGraphStore(sql_url)
    try:
        a, b = Node(id="a", name="A", provenance=(P,)), Node(id="b", name="B", provenance=(P,))
        ab = Edge(source="a", target="b", type="r", provenance=(P,))
        await store.upsert_many([a], [])
        async with store.transaction():
            assert await store.get_nodes(["a", "x"]) == {"a": a}  # read: "a" found, "x" absent
            await store.upsert_many([b], [ab])
            assert await store.counts() == (2, 1)  # writes the held upserts
            with selects(store) as seen:
                assert await store.get_nodes(["x", "b", "a"]) == {"b": b, "a": a}
                assert await store.get_edges([ab.id, "e_none"]) == {ab.id: ab}  # "e_none": one query
                assert await store.get_edges(["e_none", ab.id]) == {ab.id: ab}  # now known absent
            assert len(seen) == 1 and "e_none" not in seen[0]
            with pytest.raises(RuntimeError):
                async with store.transaction():
                    await store.upsert_node(a.model_copy(update={"name": "A2"}))
                    assert (await store.get_node("a")).name == "A2"  # type: ignore[union-attr]
                    await store.counts()
                    raise RuntimeError("roll the savepoint back")
            with selects(store) as seen:
                assert await store.get_nodes(["a"]) == {"a": a}  # forgotten: read again
            assert len(seen) == 1
        with selects(store) as seen:  # outside a transaction: always read
            assert await store.get_nodes(["a", "b"]) == {"a": a, "b": b}
        assert len(seen) == 1
    finally:
        await store.close()
