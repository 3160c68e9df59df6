"""SQL store bulk writes: a batch of elements is one statement per table. With psycopg on PostgreSQL that
statement takes one array per column (``unnest``), so a batch costs one round trip whatever its size."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
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


@pytest.mark.parametrize("database", ["postgresql+psycopg", "sqlite", "postgresql+psycopg2"])
async def test_each_batch_is_one_statement_per_table(
    database: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """psycopg sends it once over arrays; SQLite and other drivers hand it to ``executemany``."""
    if database == "sqlite":
        url = f"sqlite:///{tmp_path / 'g.sqlite'}"
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.url(server.create_database(), driver=database)
    many = database != "postgresql+psycopg"
    store = SQLGraphStore(url)
    try:
        nodes, edges = graph(1203)  # batches of 500: 3 of nodes, 2 of edges
        with writes(store) as seen:
            await store.upsert_many(nodes, edges)
        assert (
            seen
            == [
                ("INSERT INTO nodes", many),
                ("INSERT INTO provenance", many),
                ("INSERT INTO node_names", many),
            ]
            * 3
            + [("INSERT INTO edges", many)] * 2
        )
        assert await store.get_nodes([n.id for n in nodes]) == {n.id: n for n in nodes}
        assert await store.get_edges([e.id for e in edges]) == {e.id: e for e in edges}
        renamed = [n.model_copy(update={"name": f"{n.name}!"}) for n in nodes[:700]]
        with writes(store) as seen:
            await store.upsert_many(renamed)
        assert (
            seen
            == [
                ("INSERT INTO nodes", many),
                ("DELETE FROM node_names", many),
                ("INSERT INTO node_names", many),
            ]
            * 2
        )
        assert (await store.get_node("n0699")).name == f"{ODD} 699!"  # type: ignore[union-attr]
        assert await store.find_nodes(name=f"{ODD} 699") == []
        assert [n.id for n in await store.find_nodes(name=f"{ODD} 699!")] == ["n0699"]
    finally:
        await store.close()


async def test_an_element_json_cannot_hold_is_an_input_error_naming_it(sql_url: str) -> None:
    """A lone surrogate (Python reads the JSON escape ``"\\ud800"``) in a provenance record is no UTF-8 (one
    in an attribute is refused before, by every store: ``test_contract``): the store names the node
    instead of failing with the serializer's error, and writes nothing."""
    from graphwalk_core.errors import InputError

    store = SQLGraphStore(sql_url)
    bad = Node(id="n1", name="x", provenance=(Provenance(source_id="doc", extractor="a\udc00"),))
    with pytest.raises(InputError, match=r"^node 'n1' cannot be stored as JSON: Error serializing to JSON: "):
        await store.upsert_many([Node(id="n0", name="y"), bad])
    with pytest.raises(InputError, match=r"^node 'n1' cannot be stored as JSON"):
        async with store.transaction():
            await store.upsert_node(bad)
    assert await store.counts() == (0, 0)
    await store.close()
