"""SQL store bulk writes: a batch of elements is one statement per table. On PostgreSQL that statement
takes one array per column (``unnest``), so a batch costs one round trip whatever its size."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from servers.postgres_server import PostgresServer
from sqlalchemy import event

from graphwalk_core.model import Edge, Node, Provenance
from graphwalk_core.stores import SQLGraphStore

ODD = 'O\'Brien "quoted" back\\slash\nnew line, tab\t, {braces}, NULL, é ✓ 😀'


@contextmanager
def writes(store: SQLGraphStore) -> Iterator[list[tuple[str, bool]]]:
    """(statement's first three words, sent as executemany) of the writes ``store`` sends meanwhile."""
    seen: list[tuple[str, bool]] = []

    def record(_c: object, _cur: object, statement: str, _p: object, _ctx: object, many: bool) -> None:
        words = statement.split()
        if words[0].upper() in {"INSERT", "DELETE"}:
            seen.append((" ".join(words[:3]).replace('"', ""), many))

    event.listen(store._engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store._engine, "before_cursor_execute", record)


def graph(size: int) -> tuple[list[Node], list[Edge]]:
    nodes = [
        Node(id=f"n{i:04d}", name=f"{ODD} {i}", provenance=(Provenance(source_id=f"doc/{i % 7}"),))
        for i in range(size)
    ]
    edges = [
        Edge(source=nodes[i].id, target=nodes[i + 1].id, type="next", attributes={"note": ODD})
        for i in range(0, size - 1, 2)
    ]
    return nodes, edges


async def test_postgresql_writes_each_batch_as_one_statement_per_table(postgres_url: str) -> None:
    store = SQLGraphStore(postgres_url)
    try:
        nodes, edges = graph(1203)  # batches of 500: 3 of nodes, 2 of edges
        with writes(store) as seen:
            await store.upsert_many(nodes, edges)
        assert (
            seen
            == [
                ("INSERT INTO nodes", False),
                ("INSERT INTO provenance", False),
                ("INSERT INTO node_names", False),
            ]
            * 3
            + [("INSERT INTO edges", False)] * 2
        )
        assert await store.get_nodes([n.id for n in nodes]) == {n.id: n for n in nodes}
        assert await store.get_edges([e.id for e in edges]) == {e.id: e for e in edges}
        renamed = [n.model_copy(update={"name": f"{n.name}!"}) for n in nodes[:700]]
        with writes(store) as seen:
            await store.upsert_many(renamed)
        assert (
            seen
            == [
                ("INSERT INTO nodes", False),
                ("DELETE FROM node_names", False),
                ("INSERT INTO node_names", False),
            ]
            * 2
        )
        assert (await store.get_node("n0699")).name == f"{ODD} 699!"  # type: ignore[union-attr]
        assert await store.find_nodes(name=f"{ODD} 699") == []
        assert [n.id for n in await store.find_nodes(name=f"{ODD} 699!")] == ["n0699"]
    finally:
        await store.close()


async def test_sqlite_hands_each_batch_to_executemany(tmp_path: object) -> None:
    store = SQLGraphStore(f"sqlite:///{tmp_path}/g.sqlite")
    try:
        nodes, edges = graph(1203)
        with writes(store) as seen:
            await store.upsert_many(nodes, edges)
        assert (
            seen
            == [
                ("INSERT INTO nodes", True),
                ("INSERT INTO provenance", True),
                ("INSERT INTO node_names", True),
            ]
            * 3
            + [("INSERT INTO edges", True)] * 2
        )
        assert await store.get_nodes([n.id for n in nodes]) == {n.id: n for n in nodes}
    finally:
        await store.close()


async def test_other_postgresql_drivers_hand_each_batch_to_executemany(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url(postgres_server.create_database(), driver="postgresql+psycopg2")
    store = SQLGraphStore(url)
    try:
        nodes, edges = graph(1203)
        with writes(store) as seen:
            await store.upsert_many(nodes, edges)
        assert (
            seen
            == [
                ("INSERT INTO nodes", True),
                ("INSERT INTO provenance", True),
                ("INSERT INTO node_names", True),
            ]
            * 3
            + [("INSERT INTO edges", True)] * 2
        )
        assert await store.get_nodes([n.id for n in nodes]) == {n.id: n for n in nodes}
        assert await store.get_edges([e.id for e in edges]) == {e.id: e for e in edges}
    finally:
        await store.close()
