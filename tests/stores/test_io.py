"""Triples files, Parquet export/import, open_store."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import duckdb
import forked_jobs
import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.model import (
    AttributeConflict,
    ConflictValue,
    Edge,
    Node,
    Provenance,
    bulk_edge_id,
    edge_id,
)
from graphwalk_core.stores import MemoryGraphStore, SQLGraphStore
from graphwalk_core.stores.open import open_store
from graphwalk_core.stores.parquet import (
    SimpleEdge,
    SimpleNode,
    export_parquet,
    import_parquet,
    read_parquet_graph,
    write_parquet_graph,
)
from graphwalk_core.stores.triples import read_triples, write_triples

P1 = Provenance(source_id="wiki/a", content_hash="h1", extractor="llm", confidence=0.5, start=3, end=9)
P2 = Provenance(source_id="wiki/b")


def rich_graph() -> tuple[list[Node], list[Edge]]:
    """Nodes and edges exercising every field the Parquet tables carry."""
    nolan = Node(
        id="n1",
        type="person",
        name="Christopher Nolan",
        summary="Director.",
        aliases=("Nolan",),
        attributes={"born": 1970, "tags": ["a", "b"]},
        attribute_provenance={"born": (P1,), "tags": ()},
        conflicts={
            "born": AttributeConflict(
                key="born",
                values=(
                    ConflictValue(value=1970, provenance=(P1,)),
                    ConflictValue(value={"y": 1971}, provenance=()),
                ),
            )
        },
        provenance=(P2, P1),
        name_sources={"Christopher Nolan": (P1, P2), "Nolan": ()},
        summary_sources={"Director.": (P1,)},
    )
    plain = Node(id="Memento", name="Memento", type="film", provenance=(P2,))
    bare = Node(id="x", name="X")
    edges = [
        Edge(source="Memento", target="n1", type="directed_by", provenance=(P1, P2), attributes={"w": 0.5}),
        Edge(source="x", target="x", type="self", provenance=(P2,)),
        Edge(source="x", target="Memento", type="about"),
    ]
    return [nolan, plain, bare], edges


def test_read_triples_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "kb.txt"
    good.write_text("Kismet|directed_by|William Dieterle\n\nKismet|release_year|1944\n", encoding="utf-8")
    assert list(read_triples(good)) == [
        ("Kismet", "directed_by", "William Dieterle"),
        ("Kismet", "release_year", "1944"),
    ]
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\na|r\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.txt:2: expected 'subject\|relation\|object'.*'a\|r'"):
        list(read_triples(bad))
    empty_field = tmp_path / "empty.txt"
    empty_field.write_text("a||b\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"empty\.txt:1:"):
        list(read_triples(empty_field))
    with pytest.raises(InputError, match=r"triples file not found: .*missing\.txt"):
        list(read_triples(tmp_path / "missing.txt"))


def test_read_triples_of_a_non_utf8_file_names_file_and_line(tmp_path: Path) -> None:
    """A Latin-1 file, or a binary one, is an InputError, not a UnicodeDecodeError traceback."""
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"a|r|b\n" * 3 + "Café|r|b\n".encode("latin-1"))
    with pytest.raises(
        InputError, match=r"latin1\.txt:4: not UTF-8 text \(byte 0xe9\): a triples file holds"
    ):
        list(read_triples(latin1))
    binary = tmp_path / "graph.bin"
    binary.write_bytes(b"SQLite format 3\x00\x10\x00\x86\x01")
    with pytest.raises(InputError, match=r"graph\.bin:1: not UTF-8 text \(byte 0x86\)"):
        list(read_triples(binary))


def test_read_triples_drops_a_bom_and_ends_lines_at_newlines_only(tmp_path: Path) -> None:
    """A UTF-8 BOM (Notepad writes one) made the first subject '\\ufeffa', a node apart from 'a'; a bare CR
    ended a line, so 'a|r|b\\rc|s|d' read as two triples and the lines after it were misnumbered."""
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfa|r|b\r\nb|r|a\r\n")
    assert list(read_triples(bom)) == [("a", "r", "b"), ("b", "r", "a")]
    cr = tmp_path / "cr.txt"
    cr.write_bytes(b"a|r|b\rc|s|d\nx|y\n")
    with pytest.raises(InputError, match=r"cr\.txt:1: expected .* got 'a\|r\|b\\rc\|s\|d'"):
        list(read_triples(cr))
    cr.write_bytes(b"a|r|b\rc\nx|y\n")
    with pytest.raises(InputError, match=r"cr\.txt:2: expected .* got 'x\|y'"):
        list(read_triples(cr))


def test_read_triples_strips_the_whitespace_around_each_field(tmp_path: Path) -> None:
    """'Alice | knows | Bob' gave the nodes 'Alice ' and ' Bob' and the relation ' knows ': 'Alice ' was a
    node apart from the 'Alice' of the next line, and no name lookup of 'Bob' found ' Bob'. Whitespace
    inside a field is kept; a field of only whitespace is an empty field."""
    path = tmp_path / "kb.txt"
    path.write_text(
        "Alice | knows | Bob\n\tAlice|knows|Carol Ann \u00a0\r\nBob|knows|Alice\n", encoding="utf-8"
    )
    assert list(read_triples(path)) == [
        ("Alice", "knows", "Bob"),
        ("Alice", "knows", "Carol Ann"),
        ("Bob", "knows", "Alice"),
    ]
    path.write_text("a|r|b\na| |b\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"kb\.txt:2: expected .* 3 non-empty fields, got 'a\| \|b'$"):
        list(read_triples(path))


def test_read_triples_refuses_what_no_store_keeps_at_its_line(tmp_path: Path) -> None:
    """A name over the node id limit, a relation over the type limit or a NUL imported into a Parquet
    folder (the memory store took them) but not into SQLite, whose error named no file or line and left an
    empty graph database behind; every store now refuses them alike, at their line, before writing."""
    cases = {
        "x" * 1025 + "|r|c": f"its subject '{'x' * 60}'… is 1,025 bytes",
        "b|"
        + "é" * 257
        + "|c": f"its relation '{'é' * 60}'… is 514 bytes in UTF-8; a graph store keeps at most 512$",
        "b|r|c\x00d": r"its object 'c\\x00d' holds a NUL character \(U\+0000\), which no graph store keeps",
    }
    for line, problem in cases.items():
        path = tmp_path / "kb.txt"
        path.write_text(f"a|r|b\n{line}\n", encoding="utf-8")
        with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:2: {problem}"):
            list(read_triples(path))
    path.write_text("x" * 1024 + "|" + "r" * 512 + "|c\n", encoding="utf-8")
    assert [len(t[0]) for t in read_triples(path)] == [1024]


def test_a_huge_malformed_line_is_shown_shortened(tmp_path: Path) -> None:
    """The error quoted the whole line: a 5 MB line without '|' printed a 5 MB message."""
    path = tmp_path / "kb.txt"
    path.write_text("a|r|b\n" + "z" * 5_000_000 + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        list(read_triples(path))
    assert str(caught.value) == (
        f"{path}:2: expected 'subject|relation|object' with 3 non-empty fields, got '{'z' * 60}'…"
    )


def test_write_triples_round_trip(tmp_path: Path) -> None:
    triples = [("a", "r", "b"), ("b", "s", "ü c")]
    assert write_triples(tmp_path / "t.txt", triples) == 2
    assert list(read_triples(tmp_path / "t.txt")) == triples
    with pytest.raises(InputError, match="cannot write triple"):
        write_triples(tmp_path / "t.txt", [("x", "r", "y"), ("a|b", "r", "c")])
    assert list(read_triples(tmp_path / "t.txt")) == triples  # the failed write replaced nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_bulk_edge_id_equals_edge_id() -> None:
    for triple in [("a", "r", "b"), ('q"uote', "ü\\n", "日本\n"), ("", "", "")]:
        assert bulk_edge_id(*triple) == edge_id(*triple)


async def memory_store(nodes: list[Node], edges: list[Edge]) -> MemoryGraphStore:
    """A memory store holding ``nodes`` and ``edges``, written one by one (not bulk-loaded)."""
    store = MemoryGraphStore()
    for n in nodes:
        await store.upsert_node(n)
    for e in edges:
        await store.upsert_edge(e)
    return store


async def test_parquet_round_trip_is_exact(tmp_path: Path) -> None:
    nodes, edges = rich_graph()
    store = await memory_store(nodes, edges)
    await store.set_metadata("ledger/wiki/a", "h1")
    await export_parquet(store, tmp_path / "g")
    read_nodes, read_edges, metadata = read_parquet_graph(tmp_path / "g")
    assert metadata == {"ledger/wiki/a": "h1"}
    assert [n.to_model() if isinstance(n, SimpleNode) else n for n in read_nodes] == sorted(
        nodes, key=lambda n: n.id
    )
    assert isinstance(read_nodes[0], SimpleNode)  # Memento: nothing but element provenance
    assert isinstance(read_edges[2], SimpleEdge)  # x -self-> x
    models = [e.to_model() if isinstance(e, SimpleEdge) else e for e in read_edges]
    assert models == sorted(edges, key=lambda e: (e.source, e.type, e.target))
    for loaded in (MemoryGraphStore.load(tmp_path / "g"), open_store(tmp_path / "g")):
        assert [n async for n in loaded.iter_nodes()] == [n async for n in store.iter_nodes()]
        assert [e async for e in loaded.iter_edges()] == [e async for e in store.iter_edges()]
        assert await loaded.get_metadata("ledger/wiki/a") == "h1"


async def test_parquet_into_sql_and_back(tmp_path: Path) -> None:
    nodes, edges = rich_graph()
    memory = await memory_store(nodes, edges)
    memory.save(tmp_path / "g")
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'g.db'}")
    assert await import_parquet(tmp_path / "g", sql) == (3, 3)
    assert [n async for n in sql.iter_nodes()] == [n async for n in memory.iter_nodes()]
    assert [e async for e in sql.iter_edges()] == [e async for e in memory.iter_edges()]
    await export_parquet(sql, tmp_path / "again")
    for table in ("nodes", "edges", "provenance", "conflicts", "metadata"):
        first = (tmp_path / "g" / f"{table}.parquet").read_bytes()
        assert (tmp_path / "again" / f"{table}.parquet").read_bytes() == first, table
    await sql.close()


def test_parquet_tables_are_duckdb_readable_and_sorted(tmp_path: Path) -> None:
    nodes, edges = rich_graph()
    store = MemoryGraphStore()
    for n in nodes:
        store._put_node(n.id, n)
    for e in edges:
        store._put_edge((e.source, e.type, e.target), e)
    store.save(tmp_path)
    db = duckdb.connect()
    assert db.sql(f"select id from '{tmp_path}/nodes.parquet'").fetchall() == [("Memento",), ("n1",), ("x",)]
    assert db.sql(f"select source, type from '{tmp_path}/edges.parquet'").fetchall() == [
        ("Memento", "directed_by"),
        ("x", "about"),
        ("x", "self"),
    ]
    rows = db.sql(
        f"select scope, key, position, source_id from '{tmp_path}/provenance.parquet' "
        "where element_id = 'n1' order by scope, key, position"
    ).fetchall()
    assert rows == [
        ("attribute", "born", 0, "wiki/a"),
        ("attribute", "tags", 0, None),
        ("element", None, 0, "wiki/b"),
        ("element", None, 1, "wiki/a"),
        ("name", "Christopher Nolan", 0, "wiki/a"),
        ("name", "Christopher Nolan", 1, "wiki/b"),
        ("name", "Nolan", 0, None),
        ("summary", "Director.", 0, "wiki/a"),
    ]
    conflicts = db.sql(f"select key, value_index, value, source_id from '{tmp_path}/conflicts.parquet'")
    assert conflicts.fetchall() == [("born", 0, "1970", "wiki/a"), ("born", 1, '{"y":1971}', None)]


def test_read_parquet_graph_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"graph folder not found: .*nope"):
        read_parquet_graph(tmp_path / "nope")
    MemoryGraphStore().save(tmp_path / "g")
    (tmp_path / "g" / "edges.parquet").unlink()
    with pytest.raises(InputError, match=r"has no edges\.parquet"):
        read_parquet_graph(tmp_path / "g")
    (tmp_path / "g" / "edges.parquet").write_text("not parquet")
    with pytest.raises(InputError, match=r"cannot read .*edges\.parquet"):
        read_parquet_graph(tmp_path / "g")


async def test_a_save_of_a_text_parquet_cannot_hold_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    """The memory store keeps a lone surrogate where it does not look for one (a provenance record; an id
    loaded in bulk): saving it ended in a UnicodeEncodeError traceback and left an empty folder."""
    store = MemoryGraphStore()
    await store.upsert_node(Node(id="n", name="n", provenance=(Provenance(source_id="doc\ud800"),)))
    bulk = MemoryGraphStore.from_triples([("a\udc00", "r", "b")], source_id="kb")
    cases = [
        (store, "'doc\\ud800' holds a lone surrogate (U+D800)"),
        (bulk, """'["a\\udc00","r","b"]' holds a lone surrogate (U+DC00)"""),
    ]
    for graph, problem in cases:
        with pytest.raises(InputError) as caught:
            graph.save(tmp_path / "g")
        assert (
            str(caught.value)
            == f"cannot save the graph to {tmp_path / 'g'}: {problem}, which no graph store keeps"
        )
        assert not (tmp_path / "g").exists()


def test_a_parquet_table_of_other_types_or_values_is_an_error_naming_it(tmp_path: Path) -> None:
    """A graph folder written by another tool (or edited) whose tables do not hold what the layout says
    failed in a json or pydantic traceback, or was read wrong: an aliases column of strings gave each
    node its name's letters as aliases. Each is an error naming the file (and the element)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    nodes, edges = rich_graph()
    good = tmp_path / "good"
    write_parquet_graph(good, nodes, edges, {})

    def edited(table: str, column: str, values: list[object]) -> Path:
        folder = tmp_path / f"{table}-{column}"
        shutil.copytree(good, folder)
        data = pq.read_table(folder / f"{table}.parquet")
        values = values * (data.num_rows // len(values))
        data = data.set_column(data.column_names.index(column), column, pa.array(values))
        pq.write_table(data, folder / f"{table}.parquet")
        return folder

    cases = [
        (
            edited("nodes", "aliases", ["a", "b", "c"]),
            "nodes.parquet: column 'aliases' holds string, not list<item: string>",
        ),
        (edited("nodes", "id", ["Memento", None, "x"]), "nodes.parquet: column 'id' holds a null (row 2)"),
        (
            edited("nodes", "attributes", ["{}", "{x", "{}"]),
            "nodes.parquet: node 'n1': attributes: Expecting property name enclosed in double quotes: line 1 "
            "column 2 (char 1)",
        ),
        (
            edited("edges", "attributes", ['{"w":0.5}', "[1]", "{}"]),
            "edges.parquet: edge 'x' -> 'Memento': attributes: Input should be a valid dictionary",
        ),
        (
            edited("provenance", "confidence", [2.0]),
            "provenance.parquet: confidence: Input should be less than or equal to 1",
        ),
    ]
    for folder, message in cases:
        with pytest.raises(InputError) as caught:
            read_parquet_graph(folder)
        assert str(caught.value) == f"{folder}/{message}"


async def test_open_store_specs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"graph database not found: .*missing\.db"):
        open_store(tmp_path / "missing.db")
    with pytest.raises(InputError, match=r"graph not found: .*nothing"):
        open_store(tmp_path / "nothing")
    (tmp_path / "notes.csv").write_text("x")
    with pytest.raises(InputError, match=r"cannot open .*notes\.csv as a graph"):
        open_store(tmp_path / "notes.csv")
    created = open_store(tmp_path / "sub" / "new.db", create=True)
    assert isinstance(created, SQLGraphStore)
    await created.upsert_node(Node(id="a", name="a"))
    await created.close()
    reopened = open_store(tmp_path / "sub" / "new.db")
    assert await reopened.counts() == (1, 0)
    await reopened.close()
    url = open_store(f"sqlite:///{tmp_path / 'sub' / 'new.db'}")
    assert isinstance(url, SQLGraphStore) and await url.counts() == (1, 0)
    await url.close()
    (tmp_path / "kb.txt").write_text("a|r|b\na|r|b\nb|s|c\n")
    triples = open_store(tmp_path / "kb.txt")
    assert isinstance(triples, MemoryGraphStore) and await triples.counts() == (3, 2)
    node = await triples.get_node("a")
    assert node is not None and node.provenance == (Provenance(source_id="kb.txt"),)
    assert isinstance(open_store(tmp_path / "fresh", create=True), MemoryGraphStore)


async def test_reading_a_database_that_holds_no_graph_leaves_it_as_it_was(tmp_path: Path) -> None:
    """A source database given where a graph is read (``graphwalk query data/sample.sqlite``) is refused,
    and neither gets graph tables nor is switched to WAL mode; only ``create`` builds a graph there."""
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT)")
    conn.close()
    before = db.read_bytes()
    for spec in (db, f"sqlite:///{db}"):
        with pytest.raises(InputError, match=rf"^no graphwalk graph in sqlite:///{re.escape(str(db))} "):
            open_store(spec)
    assert (db.read_bytes(), sorted(p.name for p in tmp_path.iterdir())) == (before, ["shop.db"])
    with pytest.raises(InputError, match=r"^graph database not found: .*missing\.db$"):
        open_store(f"sqlite:///{tmp_path / 'missing.db'}")
    assert not (tmp_path / "missing.db").exists()
    created = open_store(db, create=True)
    await created.upsert_node(Node(id="a", name="a"))
    await created.close()
    reopened = open_store(db)
    assert await reopened.counts() == (1, 0)
    await reopened.close()


async def test_an_export_is_one_committed_state_while_another_process_writes(
    sql_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published warehouse and ``graphwalk graph export`` read a SQL graph in many statements while
    other processes may ingest into it; each read saw the latest commit, so an export could hold an edge
    to a node it lacks, or a ledger entry for a document whose elements it lacks."""
    store, writer = SQLGraphStore(sql_url), SQLGraphStore(sql_url)
    await store.upsert_many([Node(id=i, name=i.upper(), provenance=(P2,)) for i in "abc"], [])
    await store.upsert_edge(Edge(source="a", type="r", target="b", provenance=(P2,)))
    await store.set_metadata("ingest/ledger/s/one", "1")
    reading_edges = store.iter_edges

    async def edges_after_a_commit(**kwargs: int) -> AsyncIterator[Edge]:  # another process commits
        async with writer.transaction():
            await writer.upsert_node(Node(id="z", name="Z", provenance=(P1,)))
            await writer.upsert_edge(Edge(source="c", type="r", target="z", provenance=(P1,)))
            await writer.set_metadata("ingest/ledger/s/two", "2")
        async for found in reading_edges(**kwargs):
            yield found

    monkeypatch.setattr(store, "iter_edges", edges_after_a_commit)
    await export_parquet(store, tmp_path / "out")
    nodes, edges, metadata = read_parquet_graph(tmp_path / "out")
    assert ([n.id for n in nodes], [(e.source, e.target) for e in edges], metadata) == (
        ["a", "b", "c"],
        [("a", "b")],
        {"ingest/ledger/s/one": "1"},
    )
    assert await store.counts() == (4, 2)  # the commit is there for the next read
    await store.close()
    await writer.close()


@pytest.mark.parametrize("replaced", [1, 3])
def test_a_save_cut_between_its_tables_leaves_one_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replaced: int
) -> None:
    """A Parquet-folder graph's five tables were each replaced on its own: a save killed between two
    replacements left new nodes beside old edges (``edge ...: unknown node(s)`` at every later read).
    Now a save cut once its tables are all written reads as the new graph (the next save finishes it)."""
    import os

    from graphwalk_core.stores import parquet

    def graph(a: str, b: str) -> tuple[list[Node], list[Edge], dict[str, str]]:
        nodes = [Node(id=n, type="person", name=n, provenance=(P1,)) for n in (a, b)]
        return nodes, [Edge(source=a, target=b, type="knows", provenance=(P1,))], {"ledger": a + b}

    folder = tmp_path / "g"
    parquet.write_parquet_graph(folder, *graph("a", "b"))
    replaced_so_far = 0

    def killed(src: str | Path, dst: str | Path) -> None:  # os.replace until the process "dies"
        nonlocal replaced_so_far
        if Path(dst).parent == folder and Path(dst).name in {f"{t}.parquet" for t in parquet.TABLES}:
            replaced_so_far += 1
            if replaced_so_far > replaced:
                raise KeyboardInterrupt
        os.rename(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", killed)
        with pytest.raises(KeyboardInterrupt):
            parquet.write_parquet_graph(folder, *graph("c", "d"))
    nodes, edges, metadata = read_parquet_graph(folder)
    assert ([n.id for n in nodes], [(e.source, e.target) for e in edges], metadata) == (
        ["c", "d"],
        [("c", "d")],
        {"ledger": "cd"},
    )
    parquet.write_parquet_graph(folder, *graph("a", "b"))  # finishes the cut save first
    nodes, edges, metadata = read_parquet_graph(folder)
    assert ([n.id for n in nodes], [(e.source, e.target) for e in edges], metadata) == (
        ["a", "b"],
        [("a", "b")],
        {"ledger": "ab"},
    )
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{t}.parquet" for t in parquet.TABLES)


async def test_a_first_save_cut_after_its_tables_were_written_opens_as_that_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's first save cut once its tables were all written (before it moved ``nodes.parquet``
    in) reads as the new graph, and so it is opened for writing too: ``open_store(create=True)`` (as
    ``graphwalk ingest`` opens its graph) gave an empty store, and the ingest started over."""
    import os

    from graphwalk_core.stores import parquet

    folder = tmp_path / "g"
    real = os.replace

    def killed(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == folder / "nodes.parquet":
            raise KeyboardInterrupt
        real(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", killed)
        with pytest.raises(KeyboardInterrupt):
            node = Node(id="a", type="person", name="a", provenance=(P1,))
            parquet.write_parquet_graph(folder, [node], [], {})
    assert not (folder / "nodes.parquet").exists()
    assert [await open_store(folder, create=flag).counts() for flag in (False, True)] == [(1, 0), (1, 0)]


def test_processes_saving_one_parquet_folder_at_once_leave_one_whole_graph(tmp_path: Path) -> None:
    """Processes saving one Parquet-folder graph at once (two ``graphwalk ingest --graph FOLDER`` runs):
    each save finished the other's cut short, so one failed (``FileNotFoundError`` on a moved
    ``.nodes.parquet.next``) and the folder could hold one graph's nodes beside another's metadata (its
    ledger). Saves into one folder now take turns: the folder holds the last one whole."""

    processes, rounds = 4, 10
    folder = tmp_path / "g"

    def save(i: int) -> None:
        nodes = [Node(id=f"{i}-{k}", name=f"{i}-{k}", provenance=(P1,)) for k in range(50)]
        write_parquet_graph(folder, nodes, [], {"saved by": str(i)})

    for _ in range(rounds):
        assert forked_jobs.at_once(save, processes) == [0] * processes
        nodes, _, metadata = read_parquet_graph(folder)
        assert sorted({n.id.split("-")[0] for n in nodes}) == [metadata["saved by"]]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["conflicts.parquet", "edges.parquet", "metadata.parquet", "nodes.parquet", "provenance.parquet"]
    )


def test_a_parquet_folder_read_while_another_process_saves_is_one_graph(tmp_path: Path) -> None:
    """A query, eval or publish reading a Parquet-folder graph while ``graphwalk ingest`` saved it read
    some tables of the old graph and some of the new (a ledger beside nodes it does not list), or failed
    ("cannot read .metadata.parquet.next") when a pending table was moved in as it was read. A read now
    waits for a save in progress, and saves wait for reads."""

    def graph(i: int) -> tuple[list[Node], list[Edge], dict[str, str]]:
        nodes = [Node(id=f"{i}-{k}", name=f"{i}-{k}", provenance=(P1,)) for k in range(100)]
        edges = [
            Edge(source=f"{i}-{k}", target=f"{i}-{k + 1}", type="r", provenance=(P1,)) for k in range(99)
        ]
        return nodes, edges, {"saved by": str(i)}

    folder = tmp_path / "g"
    write_parquet_graph(folder, *graph(0))

    def saves() -> None:
        for i in range(1, 25):
            write_parquet_graph(folder, *graph(i % 2))

    pid, seen = forked_jobs.in_background(saves), []
    while (code := forked_jobs.finished(pid)) is None:
        nodes, edges, metadata = read_parquet_graph(folder)
        owners = {n.id.split("-")[0] for n in nodes} | {e.source.split("-")[0] for e in edges}
        seen.append(sorted(owners) == [metadata["saved by"]])
    assert code == 0 and len(seen) > 1 and all(seen)
