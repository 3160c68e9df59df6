"""Large nodes stored as a head plus appended parts: exact round trips, and a store that keeps them across
transactions only while nothing else wrote the tables."""

from __future__ import annotations

from itertools import pairwise

import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, func, select, text

from graphwalk_core.model import Node, Provenance
from graphwalk_core.model.merge import merge_node_data, retract_source
from graphwalk_core.stores import SQLGraphStore, node_parts
from graphwalk_core.stores.sql_tables import node_parts_table, nodes_table, schema


def mention(doc: int, summary: str | None = None) -> Node:
    """The node one document gives: one record backing its name and a summary of its own."""
    name = "Americans" if doc % 3 == 0 and doc else "American"
    record = Provenance(source_id=f"src/d{doc:03d}", content_hash=f"h{doc}", start=doc, end=doc + 8)
    return Node(
        id="hub",
        type="nationality",
        name=name,
        summary=summary or f"what document {doc} says",
        provenance=(record,),
        name_sources={name: (record,)},
        summary_sources={summary or f"what document {doc} says": (record,)},
    )


async def merge_in(store: SQLGraphStore, doc: int) -> None:
    """One transaction: the hub the store holds, merged with ``doc``'s mention."""
    async with store.transaction():
        held = await store.get_node("hub")
        assert held is not None
        await store.upsert_node(merge_node_data(held, mention(doc)))


def grown(docs: range, start: Node | None = None) -> list[Node]:
    """The hub after each mention of ``docs``, merged in turn."""
    node = start or mention(docs[0])
    out = [node]
    for doc in docs[1:]:
        node = merge_node_data(node, mention(doc))
        out.append(node)
    return out


def test_one_part_gives_the_node_exactly_as_written() -> None:
    b, a = Provenance(source_id="src/b"), Provenance(source_id="src/a")  # not in sorted order
    node = Node(
        id="n",
        name="N",
        provenance=(b, a),
        attribute_provenance={"z": (b,), "a": (a, b)},
        name_sources={"N": (b, a), "M": (a,)},
        summary_sources={"s": (b,)},
    )
    head = node_parts.head(node)
    assert head.startswith(node_parts.HEAD) and '"provenance":[]' in head
    back = node_parts.assemble(head, [node_parts.whole(node)])
    assert back == node and back.model_dump_json() == node.model_dump_json()


def test_appended_parts_give_each_merged_node_byte_for_byte() -> None:
    versions = grown(range(12))
    parts = [node_parts.whole(versions[0])]
    for before, after in pairwise(versions):
        added = node_parts.added_records(before, after)
        assert added is not None
        assert len(added) < 700  # what one mention adds, not the node
        parts.append(added)
        back = node_parts.assemble(node_parts.head(after), parts)
        assert back.model_dump_json() == after.model_dump_json()
    assert len(versions[-1].provenance) == 12 and len(versions[-1].summary_sources) == 12


def held_records(node: Node) -> list[Provenance]:
    """Every record reference ``node`` holds: provenance, attributes, names and summaries."""
    groups = (node.provenance, *node.attribute_provenance.values(), *node.name_sources.values())
    return [record for group in (*groups, *node.summary_sources.values()) for record in group]


def test_an_assembled_node_holds_one_object_per_record() -> None:
    versions = grown(range(12))
    hub = versions[-1]
    added = [node_parts.added_records(before, after) for before, after in pairwise(versions)]
    assert None not in added
    parts = [node_parts.whole(versions[0]), *filter(None, added)]
    for given in (parts, [node_parts.whole(hub)]):  # appended parts, and one part
        back = node_parts.assemble(node_parts.head(hub), given)
        assert back.model_dump_json() == hub.model_dump_json()
        records = held_records(back)  # each backs the provenance, the type, a name and a summary
        assert len(records) == 48 and len({id(r) for r in records}) == 12
    other = hub.model_copy(update={"id": "other"})
    seen: node_parts.RecordsSeen = {}
    one, two = (node_parts.assemble(node_parts.head(n), parts, seen) for n in (hub, other))
    assert [id(r) for r in held_records(one)] == [id(r) for r in held_records(two)]


@pytest.mark.usefixtures("small_split")
async def test_hubs_read_together_share_their_records(sql_url: str) -> None:
    writer = SQLGraphStore(sql_url)
    hub = grown(range(6))[-1]
    async with writer.transaction():
        await writer.upsert_many([hub, hub.model_copy(update={"id": "other"})])
    await writer.close()
    reader = SQLGraphStore(sql_url)
    got = await reader.get_nodes(["hub", "other"])
    assert got["hub"].model_dump_json() == hub.model_dump_json()
    records = [r for node in got.values() for r in held_records(node)]
    assert len(records) == 48 and len({id(r) for r in records}) == 6
    await reader.close()


def test_only_growth_by_the_same_records_is_appended() -> None:
    versions = grown(range(6))
    hub = versions[-1]
    assert node_parts.added_records(hub, hub) is not None  # nothing added: an empty part
    retracted = retract_source(hub, "src/d002")
    assert retracted is not None and node_parts.added_records(hub, retracted) is None  # a record went
    copied = Node.model_validate_json(hub.model_dump_json())  # equal records, other objects, plain dicts
    assert node_parts.added_records(hub, merge_node_data(copied, mention(9))) is None
    assert node_parts.added_records(copied, merge_node_data(copied, mention(9))) is not None


def test_a_head_is_not_a_node_to_code_that_does_not_know_parts() -> None:
    with pytest.raises(ValidationError):
        Node.model_validate_json(node_parts.head(mention(1)))


def parts_of(url: str, node_id: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        count = conn.scalar(select(func.count()).where(node_parts_table.c.node_id == node_id))
        head = conn.scalar(select(nodes_table.c.data).where(nodes_table.c.id == node_id))
    engine.dispose()
    assert head is not None and head.startswith(node_parts.HEAD)
    return count or 0


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_parts, "SPLIT_RECORDS", 2)


@pytest.mark.usefixtures("small_split")
async def test_each_transaction_appends_one_part_and_reads_give_the_merged_node(sql_url: str) -> None:
    store = SQLGraphStore(sql_url)
    versions = grown(range(8))
    for doc in range(8):  # one transaction each, merged into what the store holds
        async with store.transaction():
            held = await store.get_node("hub")
            await store.upsert_node(mention(doc) if held is None else merge_node_data(held, mention(doc)))
    assert parts_of(sql_url, "hub") == 6  # 3 records: stored whole; then one part per transaction
    fresh = SQLGraphStore(sql_url)  # nothing kept: assembled from the rows
    for reader in (store, fresh):
        got = await reader.get_node("hub")
        assert got is not None and got.model_dump_json() == versions[-1].model_dump_json()
        assert [n.id async for n in reader.iter_nodes()] == ["hub"]
        assert [n.model_dump_json() for n in await reader.find_nodes(name="americans")] == [
            got.model_dump_json()
        ]
    await store.close()
    await fresh.close()


@pytest.mark.usefixtures("small_split")
async def test_a_write_by_another_store_object_is_seen_and_kept(sql_url: str) -> None:
    """Two processes on one graph: what one keeps in memory must not hide (or overwrite) the other's
    writes. Fails when the generation is not checked."""
    one, two = SQLGraphStore(sql_url), SQLGraphStore(sql_url)
    versions = grown(range(4))
    await one.upsert_node(versions[-1])
    await merge_in(one, 4)  # one keeps the hub
    await merge_in(two, 5)
    got = await one.get_node("hub")
    assert got is not None and [p.source_id for p in got.provenance][-2:] == ["src/d004", "src/d005"]
    await merge_in(one, 6)
    fresh = SQLGraphStore(sql_url)
    got = await fresh.get_node("hub")
    assert got is not None and len(got.provenance) == 7
    for store in (one, two, fresh):
        await store.close()


@pytest.mark.usefixtures("small_split")
async def test_a_rolled_back_transaction_leaves_nothing_kept(sql_url: str) -> None:
    store = SQLGraphStore(sql_url)
    await store.upsert_node(grown(range(4))[-1])
    with pytest.raises(RuntimeError):
        async with store.transaction():
            held = await store.get_node("hub")
            assert held is not None
            await store.upsert_node(merge_node_data(held, mention(4)))
            assert len(await store.find_nodes(name="American")) == 1  # written to the tables (rolled back)
            raise RuntimeError("a failed window")
    got = await store.get_node("hub")
    assert got is not None and len(got.provenance) == 4
    async with store.transaction():
        await store.upsert_node(merge_node_data(got, mention(5)))
    again = await SQLGraphStore(sql_url).get_node("hub")
    assert again is not None and [p.source_id for p in again.provenance][-1] == "src/d005"
    assert len(again.provenance) == 5
    await store.close()


def _snapshot(url: str) -> dict[str, list[tuple[object, ...]]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = {t.name: [tuple(r) for r in conn.execute(select(t))] for t in schema.sorted_tables}
    engine.dispose()
    return rows


def _restore(url: str, rows: dict[str, list[tuple[object, ...]]]) -> None:
    """The tables as ``rows``: what a server that lost the commits since the snapshot holds."""
    engine = create_engine(url)
    with engine.begin() as conn:
        for table in schema.sorted_tables:
            conn.execute(table.delete())
            if rows[table.name]:
                conn.execute(
                    table.insert(), [dict(zip(table.c.keys(), r, strict=True)) for r in rows[table.name]]
                )
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                "AND datname = current_database()"
            )
        )
    engine.dispose()


@pytest.mark.usefixtures("small_split")
async def test_a_failed_statement_forgets_what_was_kept(postgres_url: str) -> None:
    """PostgreSQL sessions commit asynchronously: a server crash can lose a commit its writer was told
    of, and then another writer can bring the generation back to the number the first one keeps its hubs
    at. The first writer learns of the crash only by a connection that failed (its statement's, or the
    check of a pooled one, which replaces it), so that must forget what it keeps."""
    one = SQLGraphStore(postgres_url)
    await one.upsert_node(grown(range(4))[-1])
    before = _snapshot(postgres_url)
    await merge_in(one, 4)  # the commit the crash loses; one keeps the hub with d004
    _restore(postgres_url, before)  # the server restarted without it; one's connections are gone
    two = SQLGraphStore(postgres_url)
    await merge_in(two, 5)  # the generation is one's again
    await merge_in(one, 6)  # on a new connection: the pooled one failed its check
    kept, got = await one.get_node("hub"), await SQLGraphStore(postgres_url).get_node("hub")
    assert got is not None and kept is not None
    assert [p.source_id for p in got.provenance] == [f"src/d{d:03d}" for d in (0, 1, 2, 3, 5, 6)]
    assert kept.model_dump_json() == got.model_dump_json()  # not the lost d004's
    await one.close()
    await two.close()


@pytest.mark.usefixtures("small_split")
async def test_retraction_and_the_last_allowed_part_rewrite_the_parts_as_one(
    sql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_parts, "MAX_PARTS", 3)
    store = SQLGraphStore(sql_url)
    versions = grown(range(7))
    await store.upsert_node(versions[2])
    counts = []
    for doc in range(3, 7):
        async with store.transaction():
            held = await store.get_node("hub")
            assert held is not None
            await store.upsert_node(merge_node_data(held, mention(doc)))
        counts.append(parts_of(sql_url, "hub"))
    assert counts == [2, 3, 1, 2]
    held = await store.get_node("hub")
    assert held is not None and held.model_dump_json() == versions[-1].model_dump_json()
    retracted = retract_source(held, "src/d001")
    assert retracted is not None
    await store.upsert_node(retracted)
    assert parts_of(sql_url, "hub") == 1
    got = await SQLGraphStore(sql_url).get_node("hub")
    assert got is not None and got.model_dump_json() == retracted.model_dump_json()
    await store.delete_node("hub")
    engine = create_engine(sql_url)
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(node_parts_table)) == 0
    engine.dispose()
    await store.close()


def test_the_default_threshold_splits_what_a_hub_becomes() -> None:
    hub = grown(range(node_parts.SPLIT_RECORDS + 1))[-1]
    assert node_parts.is_large(hub) and not node_parts.is_large(grown(range(node_parts.SPLIT_RECORDS))[-1])
