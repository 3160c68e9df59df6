"""SQLSource on data/sample.sqlite: profile, rows as documents, foreign keys as edges, clear errors."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import InputError
from graphwalk_core.ingest.outputs import RoutingMode
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.routing import Router
from graphwalk_core.ingest.sources import FileSource, SQLSource, load_mappings, load_sources, open_source
from graphwalk_core.ingest.sources import sql as sql_source
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import graph_tables

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample.sqlite"


def sample_source() -> SQLSource:
    return SQLSource(f"sqlite:///{SAMPLE}", source_id="sample")


async def test_profile_tables_keys_and_rows() -> None:
    profile = await sample_source().profile()
    assert [(t.name, t.rows, t.primary_key) for t in profile.tables] == [
        ("film_cast", 9, ["film_id", "person_id"]),
        ("films", 6, ["id"]),
        ("people", 8, ["id"]),
        ("studios", 3, ["id"]),
    ]
    films = profile.tables[1]
    assert [(c.name, c.type, c.nullable) for c in films.columns] == [
        ("id", "INTEGER", True),
        ("title", "TEXT", False),
        ("year", "INTEGER", True),
        ("director_id", "INTEGER", True),
        ("studio_id", "INTEGER", True),
    ]
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in films.foreign_keys] == [
        (["director_id"], "people", ["id"]),
        (["studio_id"], "studios", ["id"]),
    ]
    assert profile.rows == 26 and profile.documents == 26


async def test_foreign_keys_become_edges_without_calls() -> None:
    store = MemoryGraphStore()
    report = await ingest(sample_source(), store, routing="exact")
    # entity tables: 8 people + 3 studios + 6 films; edges: 5 directors + 5 studios + 9 cast rows
    assert await store.counts() == (17, 19)
    assert report.routing_cost.calls == 0 and report.extraction_cost.calls == 0
    edges = [e async for e in store.iter_edges()]
    names = {n.id: n.name async for n in store.iter_nodes()}
    triples = sorted((names[e.source], e.type, names[e.target], tuple(e.attributes.items())) for e in edges)
    assert triples[:4] == [
        ("Dune", "director", "Denis Villeneuve", ()),
        ("Dune", "film_cast", "Timothée Chalamet", (("role", "Paul Atreides"),)),
        ("Dune", "studio", "Legendary Pictures", ()),
        ("Dunkirk", "director", "Christopher Nolan", ()),
    ]
    assert sum(1 for t in triples if t[1] == "film_cast") == 9
    nolan = (await store.find_nodes(name="Christopher Nolan"))[0]
    assert (nolan.type, nolan.attributes) == ("person", {"born": 1970, "birthplace": "London"})
    assert [p.source_id for p in nolan.provenance][:2] == ["sample/films#1", "sample/films#2"]


async def test_renaming_a_row_updates_referencing_rows(tmp_path: Path) -> None:
    db = tmp_path / "films.sqlite"
    db.write_bytes(SAMPLE.read_bytes())
    source = SQLSource(f"sqlite:///{db}", source_id="db")
    store = MemoryGraphStore()
    await ingest(source, store, routing="exact")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE people SET name = 'Chris Nolan' WHERE id = 1")
    conn.close()
    report = await ingest(source, store, routing="exact")
    # the person row and the 4 films pointing at it change
    assert (report.changed, report.unchanged) == (5, 21)
    [node] = await store.find_nodes(name="Chris Nolan")
    assert node.aliases == () and await store.find_nodes(name="Christopher Nolan") == []
    fresh = MemoryGraphStore()
    await ingest(source, fresh, routing="exact")
    assert await store.counts() == await fresh.counts() == (17, 19)


async def test_a_mapping_key_matching_no_table_is_named_and_keeps_nothing() -> None:
    mappings = load_mappings({"films": {"name": "title"}, "film": {"name": "title"}})
    source = SQLSource(f"sqlite:///{SAMPLE}", source_id="sample", mappings=mappings)
    assert len([d async for d in source.documents()]) == 26
    assert [(s.describe(), s.kind) for s in source.skipped] == [
        ("mapping key 'film': matches no table of the source", "mapping")
    ]


async def test_mapping_fields_a_sql_row_makes_nothing_of_are_named_as_ignored() -> None:
    """A table mapping's ``relations`` made no edge, and its ``description`` and ``attributes`` changed
    nothing, without a word (docs/mappings.md: the same mappings apply to SQL sources)."""
    relations = [{"column": "title", "type": "named"}]
    mappings = load_mappings(
        {
            "films": {"name": "title", "attributes": ["year"], "relations": relations},
            "people": {"name": "name", "description": "name"},
            "studios": {"name": "name", "type": "studio"},
        }
    )
    source = SQLSource(f"sqlite:///{SAMPLE}", source_id="sample", mappings=mappings)
    assert len([d async for d in source.documents()]) == 26
    assert [(s.describe(), s.kind) for s in source.skipped] == [
        (
            "mapping key 'films': its attributes and relations are ignored: a SQL row's relations are its "
            "foreign keys, its attributes its columns but its keys and name",
            "mapping",
        ),
        (
            "mapping key 'people': its description is ignored: a SQL row's relations are its foreign keys, "
            "its attributes its columns but its keys and name",
            "mapping",
        ),
    ]


async def test_a_key_in_a_table_mapping_is_named_as_ignored() -> None:
    """``key`` identifies record files' documents; a SQL row keeps its primary key, and the skipped input
    says so instead of ignoring the key silently."""
    mappings = load_mappings({"films": {"name": "title", "key": "title"}})
    source = SQLSource(f"sqlite:///{SAMPLE}", source_id="sample", mappings=mappings)
    ids = [d.id async for d in source.documents()]
    assert len(ids) == 26 and "films#1" in ids
    assert [(s.describe(), s.kind) for s in source.skipped] == [
        (
            "mapping key 'films': its key column is ignored: a SQL row is identified by its table's "
            "primary key",
            "mapping",
        )
    ]


def test_unreachable_urls_give_clear_errors_without_password(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such database file") as info:
        SQLSource(f"sqlite:///{tmp_path}/missing.sqlite")
    assert "missing.sqlite" in str(info.value)
    with pytest.raises(InputError) as info:
        source = SQLSource("postgresql+psycopg2://alice:s3cret@127.0.0.1:1/films")
        source.read_documents()
    assert "s3cret" not in str(info.value)
    assert "alice:***@127.0.0.1:1/films" in str(info.value)


async def test_a_libpq_style_url_says_which_scheme_sqlalchemy_takes() -> None:
    source = SQLSource("postgres://alice:s3cret@127.0.0.1:1/films")
    with pytest.raises(InputError) as info:
        await source.profile()
    assert str(info.value) == (
        "cannot open SQL source postgres://alice:***@127.0.0.1:1/films: SQLAlchemy has no dialect "
        "'postgres' (PostgreSQL: postgresql+psycopg://USER:PASSWORD@HOST:5432/DB, SQLite: sqlite:///PATH)"
    )


def test_a_url_whose_port_is_not_a_number_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:  # a ValueError from SQLAlchemy before
        SQLSource("postgresql+psycopg://alice:s3cret@h:port/films")
    assert str(info.value) == (
        "invalid SQL source URL postgresql+psycopg://alice:***@h:port/films: not a SQLAlchemy URL "
        "(dialect+driver://user:password@host:port/database, the port a number)"
    )
    (tmp_path / "a.txt").write_text("Alice knows Bob.", encoding="utf-8")
    graph = "postgresql+psycopg://alice:s3cret@h:port/graph"
    result = CliRunner().invoke(app, ["ingest", str(tmp_path), "--graph", graph, "--extractor", "nlp"])
    assert (result.exit_code, result.output) == (
        2,
        "error: invalid graph store URL postgresql+psycopg://alice:***@h:port/graph: not a SQLAlchemy URL "
        "(dialect+driver://user:password@host:port/database, the port a number)\n",
    )


def test_sources_yaml() -> None:
    specs = load_sources(REPO / "data" / "sources.yaml")
    assert [(s.id, s.kind) for s in specs] == [("films", "files"), ("sample_db", "sql")]
    assert open_source(specs[1]).source_id == "sample_db"


def test_sources_yaml_errors(tmp_path: Path) -> None:
    path = tmp_path / "sources.yaml"
    path.write_text("- {id: a, kind: ftp, path_or_url: x}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"entry #0 \(a\)"):
        load_sources(path)
    path.write_text("- {id: a, kind: files, path_or_url: x}\n- {id: a, kind: files, path_or_url: y}\n")
    with pytest.raises(InputError, match="source id 'a' repeats the entry on line 1"):
        load_sources(path)


def test_sources_yaml_errors_name_the_line_of_the_entry(tmp_path: Path) -> None:
    """An entry was named by its index alone (``entry #3``): in a long sources.yaml (a sensor tick's
    error in the UI) the user counted entries to find it."""
    path = tmp_path / "sources.yaml"
    good = "- id: films\n  kind: files\n  path_or_url: films\n"
    path.write_text(good + "# the database\n- id: db\n  kind: ftp\n  path_or_url: x\n", encoding="utf-8")
    with pytest.raises(InputError) as bad:
        load_sources(path)
    assert str(bad.value).startswith(f"sources file {path}:5: entry #1 (db): 1 validation error")
    path.write_text(good + "- just a name\n", encoding="utf-8")
    with pytest.raises(InputError) as scalar:
        load_sources(path)
    assert str(scalar.value) == f"sources file {path}:4: entry #1 is not an object"
    path.write_text(good + "- id: db\n  kind: sql\n  path_or_url: x\n" + good, encoding="utf-8")
    with pytest.raises(InputError) as repeated:
        load_sources(path)
    assert str(repeated.value) == f"sources file {path}:7: source id 'films' repeats the entry on line 1"


@pytest.mark.parametrize(
    ("entry", "field", "why"),
    [
        (
            "url: postgresql+psycopg://bob:s3cret@h/x",
            "url",
            "Extra inputs are not permitted [type=extra_forbidden]",
        ),
        (
            "path_or_url: [postgresql+psycopg://bob:s3cret@h/x]",
            "path_or_url",
            "Input should be a valid string",
        ),
    ],
)
def test_sources_yaml_errors_never_repeat_a_value(tmp_path: Path, entry: str, field: str, why: str) -> None:
    """pydantic's errors repeated the refused value (``input_value='postgresql://bob:s3cret@...'``): a
    database URL under a wrong key, or written as a list, showed its password (a sensor tick, the CLI)."""
    path = tmp_path / "sources.yaml"
    path.write_text(f"- id: db\n  kind: sql\n  {entry}\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_sources(path)
    message = str(caught.value)
    assert message.startswith(f"sources file {path}:1: entry #0 (db): ")
    assert f"\n{field}\n  {why}" in message
    assert "s3cret" not in message and "input_value" not in message


async def test_a_mapping_key_leaves_the_rows_extractor_as_it_was() -> None:
    """SQL rows are identified by their primary key: a mapping's ``key`` changes nothing about them (and
    the extractor is the one recorded before keys existed, so an upgrade re-processes no row)."""
    for spec in ({"name": "title"}, {"name": "title", "key": "title"}):
        mappings = load_mappings({"films": spec})
        source = SQLSource(f"sqlite:///{SAMPLE}", source_id="sample", mappings=mappings)
        assert sorted({d.extractor async for d in source.documents()}) == ["sql:2:3c8d147d84b1"]


async def test_two_rows_whose_composite_keys_join_to_one_id_are_a_skip_not_a_silent_loss(
    tmp_path: Path,
) -> None:
    """Primary keys ("a,b", "c") and ("a", "b,c") both give the id ``pairs#a,b,c``: the first row read is
    kept, the second a skip naming its table, and a rerun deletes nothing."""
    path = tmp_path / "pairs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE pairs (a TEXT, b TEXT, name TEXT, PRIMARY KEY (a, b))")
        conn.executemany(
            "INSERT INTO pairs VALUES (?, ?, ?)", [("a,b", "c", "First"), ("a", "b,c", "Second")]
        )
    store = MemoryGraphStore()
    source = SQLSource(f"sqlite:///{path}", source_id="pairs")
    report = await ingest(source, store, routing="exact")
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        ("pairs: a second document with the id 'pairs#a,b,c' (the first one is read)", "pairs#a,b,c")
    ]
    assert (report.new, report.deleted) == (1, 0)
    assert [n.name async for n in store.iter_nodes()] == ["Second"]  # rows in key order: ("a", "b,c") first
    again = await ingest(SQLSource(f"sqlite:///{path}", source_id="pairs"), store, routing="exact")
    assert (again.new, again.unchanged, again.deleted, again.kept) == (0, 1, 0, 0)


async def test_two_columns_that_become_one_attribute_name_are_named_not_overwritten(tmp_path: Path) -> None:
    """A table whose columns 'Year' and 'year' are both the attribute 'year': each row is a skip naming
    both columns (one value would overwrite the other without a word)."""
    db = tmp_path / "films.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute(
            'CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT, "Year" INTEGER, "year " INTEGER)'
        )
        conn.execute("INSERT INTO films VALUES (1, 'Inception', 2010, 2011)")
    source = SQLSource(f"sqlite:///{db}", source_id="films")
    assert [d.id async for d in source.documents()] == []
    assert [s.describe() for s in source.skipped] == [
        "films: row 1: columns 'Year' and 'year ' are both the attribute 'year' (one would overwrite the "
        "other); rename one"
    ]


async def test_a_row_holding_a_nul_character_is_named_and_skipped(tmp_path: Path) -> None:
    """SQLite text may hold a NUL, which PostgreSQL keeps nowhere: such a row is a skip naming its column."""
    db = tmp_path / "films.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO films VALUES (1, 'Heat'), (2, 'Nul' || char(0) || 'Film')")
    source = SQLSource(f"sqlite:///{db}", source_id="films")
    assert [d.id async for d in source.documents()] == ["films#1"]
    assert [s.describe() for s in source.skipped] == [
        "films: row 2: column 'title' holds a NUL character (U+0000), which no graph store keeps"
    ]


async def test_a_float_json_has_no_number_for_is_kept_as_postgresql_writes_it(
    postgres_url: str, tmp_path: Path
) -> None:
    """NaN and the infinities (PostgreSQL's float and numeric columns hold them) were kept as floats by
    the memory store and as null by the SQL store: one graph on one store, another on the other."""
    import psycopg

    from graphwalk_core.stores.sql import SQLGraphStore

    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("CREATE TABLE films (id int PRIMARY KEY, title text, score float8, n numeric)")
        conn.execute("INSERT INTO films VALUES (1, 'Heat', 'NaN', 'NaN'), (2, 'Up', '-Infinity', 2.5)")
    found = []
    for store in (MemoryGraphStore(), SQLGraphStore(f"sqlite:///{tmp_path / 'g.db'}")):
        await ingest(SQLSource(postgres_url, source_id="db"), store, routing="exact")
        found.append(sorted([(n.name, n.attributes) async for n in store.iter_nodes() if n.type == "film"]))
    expected = [("Heat", {"n": "NaN", "score": "NaN"}), ("Up", {"n": 2.5, "score": "-Infinity"})]
    assert found == [expected, expected]


async def test_a_graph_kept_in_its_source_database_is_not_read_as_data(tmp_path: Path) -> None:
    """One database for the data and the graph: the source read the graph's own tables back as documents
    (148 new ones at the second ingest, more at each), so the graph fed on itself."""
    from graphwalk_core.ingest.ledger import read_ledger
    from graphwalk_core.stores.sql import SQLGraphStore

    db = tmp_path / "both.sqlite"
    db.write_bytes((REPO / "data" / "sample.sqlite").read_bytes())
    store = SQLGraphStore(f"sqlite:///{db}")
    first = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    again = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    assert (first.new, again.new, again.changed, again.unchanged) == (26, 0, 0, 26)
    tables = sorted({doc_id.split("#")[0] for doc_id in await read_ledger(store, "db")})
    assert tables == ["film_cast", "films", "people", "studios"]  # the sample's own
    await store.close()


async def test_a_join_row_whose_target_row_is_deleted_loses_its_edge(tmp_path: Path) -> None:
    """A cast row whose person is deleted (SQLite enforces no foreign key unless asked): the skip says its
    edge is not created, and it is gone, with the person's node, as in a fresh ingest. The row was kept
    (a skip of its document), so its edge and the deleted person's node stayed in the graph."""
    db = tmp_path / "films.sqlite"
    db.write_bytes(SAMPLE.read_bytes())
    store = MemoryGraphStore()
    await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    with sqlite3.connect(db) as conn:
        hardy = conn.execute("SELECT id FROM people WHERE name = 'Tom Hardy'").fetchone()[0]
        films = conn.execute("SELECT film_id FROM film_cast WHERE person_id = ?", (hardy,)).fetchall()
        conn.execute("DELETE FROM people WHERE id = ?", (hardy,))
    conn.close()
    report = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    assert [s.describe() for s in report.skipped] == [
        f"film_cast: row {film},{hardy}: foreign key person_id -> people has no target row; edge not created"
        for (film,) in films
    ]
    assert (report.changed, report.deleted, report.kept) == (len(films), 1, 0)
    assert await store.find_nodes(name="Tom Hardy") == []
    fresh = MemoryGraphStore()
    await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), fresh, routing="exact")
    assert await graph_tables(store, "db") == await graph_tables(fresh, "db")


async def test_a_row_pointing_into_a_table_without_a_primary_key_follows_its_target(tmp_path: Path) -> None:
    """Rows of a table without a primary key are nodes by their position, so a tag inserted before the
    others moves theirs: the film rows pointing at them did not change (same record, same tag names)
    and kept their edges to the old positions, now other tags' nodes."""
    db = tmp_path / "tags.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE tags (label TEXT UNIQUE, note TEXT)")
        conn.execute(
            "CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT, tag TEXT REFERENCES tags(label))"
        )
        conn.execute("INSERT INTO tags VALUES ('scifi', 'x'), ('war', 'y')")
        conn.execute("INSERT INTO films VALUES (1, 'Inception', 'scifi'), (2, 'Dunkirk', 'war')")
    conn.close()
    store = MemoryGraphStore()
    await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO tags VALUES ('action', 'z')")  # first in the table's order
    conn.close()
    report = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    assert (report.new, report.changed, report.unchanged) == (1, 4, 0)
    names = {n.id: n.name async for n in store.iter_nodes()}
    assert sorted([(names[e.source], e.type, names[e.target]) async for e in store.iter_edges()]) == [
        ("Dunkirk", "tag", "war"),
        ("Inception", "tag", "scifi"),
    ]
    fresh = MemoryGraphStore()
    await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), fresh, routing="exact")
    assert await graph_tables(store, "db") == await graph_tables(fresh, "db")


def test_a_postgresql_source_url_may_turn_prepared_statements_off(postgres_url: str) -> None:
    """``?prepare_threshold=none`` (for PgBouncer in transaction mode) reached psycopg as text and failed
    with a TypeError traceback; a value that is no number is an error naming the source."""
    with psycopg.connect(postgres_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("CREATE TABLE films (id INTEGER PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO films VALUES (1, 'Kismet'), (2, 'Blonde Venus')")
    docs = SQLSource(postgres_url + "?prepare_threshold=none").read_documents()
    assert [doc.id for doc in docs] == ["films#1", "films#2"]
    with pytest.raises(InputError) as refused:
        SQLSource(postgres_url + "?prepare_threshold=never").read_documents()
    assert str(refused.value) == (
        f"invalid SQL source URL {postgres_url}?prepare_threshold=never: prepare_threshold must be a whole "
        "number or none (none: no prepared statements, as PgBouncer in transaction mode needs)"
    )


@pytest.mark.parametrize("routing", ["exact", "jev"])
async def test_a_row_and_a_text_naming_its_entity_give_one_graph_in_either_order(
    tmp_path: Path,
    new_store: Callable[[], GraphStore],
    scripted_decider: FakeDecisionBackend,
    routing: RoutingMode,
) -> None:
    """A text merges into the node of a row ingested before it (same name); a row ingested after the text
    made a node of its own beside the text's, so the two orders gave two graphs. The row's node, new to
    the graph, now takes the text's node over (the row pins it first from the paper referring to it), and
    retracting either source leaves exactly the graph of the other."""
    db = tmp_path / "people.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, born INTEGER)")
        conn.execute(
            "CREATE TABLE papers (id INTEGER PRIMARY KEY, title TEXT, author_id REFERENCES people(id))"
        )
        conn.execute("INSERT INTO people VALUES (1, 'Ada Lovelace', 1815)")
        conn.execute("INSERT INTO papers VALUES (1, 'Note G', 1)")
    conn.close()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text(
        "Ada Lovelace wrote notes with Charles Babbage in London.\n", encoding="utf-8"
    )

    async def run(store: GraphStore, *order: str) -> GraphStore:
        for name in order:
            source = (
                SQLSource(f"sqlite:///{db}", source_id="db")
                if name == "db"
                else FileSource(notes, source_id=name)
            )
            await ingest(
                source,
                store,
                routing=routing,
                decider=scripted_decider,
                embedder=HashingEmbedder(),
                allow_empty=True,
            )
        return store

    async def tables(store: GraphStore) -> dict[str, Any]:
        return {**await graph_tables(store, "db"), "notes": (await graph_tables(store, "notes"))["ledger"]}

    alone = {name: await tables(await run(new_store(), name)) for name in ("db", "notes")}
    stores = [await run(new_store(), *order) for order in (("db", "notes"), ("notes", "db")) * 2]
    both = await tables(stores[0])
    assert [await tables(store) for store in stores[1:]] == [both] * 3
    ada = next(n for n in both["nodes"] if n["name"] == "Ada Lovelace")
    assert ada["id"].startswith("n_sql_") and ada["type"] == "person" and ada["attributes"] == {"born": 1815}
    assert sorted({p["source_id"] for p in ada["provenance"]}) == [
        "db/papers#1",
        "db/people#1",
        "notes/a.txt",
    ]
    assert sorted(n["name"] for n in both["nodes"]) == ["Ada Lovelace", "Charles Babbage", "London", "Note G"]

    (notes / "a.txt").unlink()
    for store in stores[:2]:
        await run(store, "notes")
        assert await tables(store) == alone["db"]
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM papers")
        conn.execute("DELETE FROM people")
    conn.close()
    for store in stores[2:]:
        await run(store, "db")
        assert await tables(store) == alone["notes"]


async def test_a_row_read_by_the_previous_version_takes_the_texts_node_over_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph where ``sql:1`` left a row's node beside the node a text ingested before it made: the new
    extractor version processes the row once more, and the graph becomes a fresh ingest's."""
    db = tmp_path / "people.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        conn.execute("INSERT INTO people VALUES (1, 'Ada Lovelace')")
    conn.close()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Ada Lovelace met Charles Babbage.\n", encoding="utf-8")
    store, fresh = MemoryGraphStore(), MemoryGraphStore()
    await ingest(FileSource(notes, source_id="notes"), store, routing="exact")
    with monkeypatch.context() as old:
        old.setattr(sql_source, "SQL_EXTRACTOR", "sql:1")
        old.setattr(Router, "_absorbable", lambda self, entity: None)
        await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    assert len(await store.find_nodes(name="Ada Lovelace")) == 2
    report = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    assert report.changed == 1 and len(await store.find_nodes(name="Ada Lovelace")) == 1
    for source in (SQLSource(f"sqlite:///{db}", source_id="db"), FileSource(notes, source_id="notes")):
        await ingest(source, fresh, routing="exact")
    assert await graph_tables(store, "db") == await graph_tables(fresh, "db")
