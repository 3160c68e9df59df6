"""``graphwalk graph import|export|stats`` through typer's CliRunner."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.model import Edge, Node
from graphwalk_core.stores import sql_engine
from graphwalk_core.stores.open import open_store
from graphwalk_core.stores.triples import read_triples

KB = """Kismet|directed_by|William Dieterle
Kismet|starred_actors|Marlene Dietrich
Kismet|release_year|1944
Kismet|release_year|1944
Blonde Venus|starred_actors|Marlene Dietrich
Blonde Venus|directed_by|Josef von Sternberg
"""
runner = CliRunner()


async def check_types(db: Path) -> None:
    store = open_store(db)
    kismet = await store.get_node("Kismet")
    assert kismet is not None and kismet.type == "film"
    assert [n.type for n in await store.find_nodes(name="marlene dietrich")] == ["person"]
    await store.close()


def kb_file(tmp_path: Path) -> Path:
    path = tmp_path / "kb.txt"
    path.write_text(KB, encoding="utf-8")
    return path


def test_import_triples_to_sqlite_and_stats(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    args = ["graph", "import", str(kb_file(tmp_path)), "--out", str(db), "--node-types", "metaqa"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote 6 nodes and 5 edges to {db}\n"
    asyncio.run(check_types(db))
    stats = runner.invoke(app, ["graph", "stats", str(db), "--top", "2"])
    assert stats.exit_code == 0, stats.output
    lines = [line.strip("│") for line in stats.output.splitlines() if "│" in line]
    rows = [[cell.strip() for cell in line.split("│")] for line in lines]
    assert rows == [
        ["nodes", "6"],
        ["edges", "5"],
        ["directed_by", "2"],
        ["starred_actors", "2"],
        ["release_year", "1"],
        ["Kismet", "3"],
        ["Blonde Venus", "2"],
    ]


def test_stats_print_names_as_text_not_markup(tmp_path: Path) -> None:
    """Relation and node names like rich markup are printed as they are ([/x] crashed the printout)."""
    kb = tmp_path / "kb.txt"
    kb.write_text("[bold]Zed|[b]rel|x [/y] z\n", encoding="utf-8")
    db = tmp_path / "g.db"
    assert runner.invoke(app, ["graph", "import", str(kb), "--out", str(db)]).exit_code == 0
    stats = runner.invoke(app, ["graph", "stats", str(db), "--top", "2"])
    assert stats.exit_code == 0, stats.output
    lines = [line.strip("│") for line in stats.output.splitlines() if "│" in line]
    rows = [[cell.strip() for cell in line.split("│")] for line in lines]
    assert rows[2:] == [["[b]rel", "1"], ["[bold]Zed", "1"], ["x [/y] z", "1"]]


def test_import_to_parquet_export_triples_and_reimport(tmp_path: Path) -> None:
    folder = tmp_path / "graph"
    result = runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(folder)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == [
        "conflicts.parquet",
        "edges.parquet",
        "metadata.parquet",
        "nodes.parquet",
        "provenance.parquet",
    ]
    out = tmp_path / "back.txt"
    exported = runner.invoke(app, ["graph", "export", str(folder), "--format", "triples", "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert list(read_triples(out)) == [
        ("Blonde Venus", "directed_by", "Josef von Sternberg"),
        ("Blonde Venus", "starred_actors", "Marlene Dietrich"),
        ("Kismet", "directed_by", "William Dieterle"),
        ("Kismet", "release_year", "1944"),
        ("Kismet", "starred_actors", "Marlene Dietrich"),
    ]
    again = runner.invoke(
        app, ["graph", "import", str(folder), "--format", "parquet", "-o", str(tmp_path / "copy.db")]
    )
    assert again.exit_code == 0, again.output
    assert again.output == f"wrote 6 nodes and 5 edges to {tmp_path / 'copy.db'}\n"
    parquet = runner.invoke(app, ["graph", "export", str(tmp_path / "copy.db"), "-o", str(tmp_path / "p")])
    assert parquet.exit_code == 0, parquet.output
    for table in ("nodes", "edges", "provenance"):
        written = (tmp_path / "p" / f"{table}.parquet").read_bytes()
        assert written == (folder / f"{table}.parquet").read_bytes()


def test_cli_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("a|r|b\nbroken line\n")
    result = runner.invoke(app, ["graph", "import", str(bad), "-o", str(tmp_path / "g")])
    assert result.exit_code == 2
    assert "bad.txt:2: expected 'subject|relation|object'" in result.output
    assert not (tmp_path / "g").exists()
    missing = runner.invoke(app, ["graph", "stats", str(tmp_path / "missing.db")])
    assert missing.exit_code == 2
    assert f"graph database not found: {tmp_path / 'missing.db'}" in missing.output.replace("\n", "")


async def write_hashed_graph(db: Path) -> None:
    """Two films and their director under hash-like ids, as an ingest names its nodes."""
    store = open_store(db, create=True)
    try:
        await store.upsert_node(Node(id="n_b2", name="Dune", type="film"))
        await store.upsert_node(Node(id="n_a1", name="Arrival", type="film"))
        await store.upsert_node(Node(id="n_c3", name="Denis Villeneuve", type="person"))
        for film in ("n_a1", "n_b2"):
            await store.upsert_edge(Edge(source=film, type="directed_by", target="n_c3"))
    finally:
        await store.close()


def test_export_and_stats_name_the_nodes_of_an_ingested_graph(tmp_path: Path) -> None:
    """Triples hold names, as a MetaQA-style file does, not an ingest's hash ids."""
    db = tmp_path / "g.sqlite"
    asyncio.run(write_hashed_graph(db))
    out = tmp_path / "kb.txt"
    exported = runner.invoke(app, ["graph", "export", str(db), "--format", "triples", "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert out.read_text(encoding="utf-8") == (
        "Arrival|directed_by|Denis Villeneuve\nDune|directed_by|Denis Villeneuve\n"
    )
    stats = runner.invoke(app, ["graph", "stats", str(db), "--top", "2"])
    assert stats.exit_code == 0, stats.output
    lines = [line.strip("│") for line in stats.output.splitlines() if "│" in line]
    rows = [[cell.strip() for cell in line.split("│")] for line in lines]
    assert rows[-2:] == [["Denis Villeneuve (n_c3)", "2"], ["Arrival (n_a1)", "1"]]


def test_stats_of_a_postgresql_graph_hide_its_password(postgres_url: str, tmp_path: Path) -> None:
    """The test server trusts 127.0.0.1, so a URL with a password opens; the output must not show it. A
    database holding no graph yet is refused (and left without graph tables) rather than read as empty."""
    with_password = postgres_url.replace("://postgres@", "://postgres:s3cret@")
    shown = postgres_url.replace("://postgres@", "://postgres:***@")
    empty = runner.invoke(app, ["graph", "stats", with_password, "--top", "1"])
    assert (empty.exit_code, " ".join(empty.output.split())) == (
        2,
        f"error: no graphwalk graph in {shown} (left as it was): build one there with graphwalk ingest or "
        "graphwalk graph import",
    )
    imported = runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", with_password])
    assert imported.exit_code == 0, imported.output
    stats = runner.invoke(app, ["graph", "stats", with_password, "--top", "1"])
    assert stats.exit_code == 0, stats.output
    assert "s3cret" not in imported.output + stats.output
    assert stats.output.splitlines()[0] == "graph " + shown


def test_import_refuses_to_replace_a_graph_unless_asked(tmp_path: Path) -> None:
    """Importing into a graph that holds one replaced it without a word (a mistyped --out, or a shared
    database someone else's graph is in)."""
    first = runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(tmp_path / "g.db")])
    assert first.exit_code == 0, first.output
    other = tmp_path / "other.txt"
    other.write_text("A|r|B\n", encoding="utf-8")
    for target in (tmp_path / "g.db", tmp_path / "folder"):
        if target.suffix != ".db":
            assert (
                runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(target)]).exit_code
                == 0
            )
        refused = runner.invoke(app, ["graph", "import", str(other), "-o", str(target)])
        assert (refused.exit_code, refused.output) == (
            2,
            f"error: {target} already holds a graph (6 nodes, 5 edges, 0 metadata entries): pass --replace "
            "to replace it with the import\n",
        )
        assert asyncio.run(open_store(target).counts()) == (6, 5)
        replaced = runner.invoke(app, ["graph", "import", str(other), "-o", str(target), "--replace"])
        assert (replaced.exit_code, replaced.output) == (0, f"wrote 2 nodes and 1 edges to {target}\n")


def test_import_names_the_ledger_of_a_graph_without_elements(tmp_path: Path) -> None:
    """A graph whose documents gave no element holds only its ledger: the refusal said "0 nodes, 0 edges"."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("the and of.\n", encoding="utf-8")
    graph = tmp_path / "g.sqlite"
    assert runner.invoke(app, ["ingest", str(notes), "--graph", str(graph)]).exit_code == 0
    refused = runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(graph)])
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: {graph} already holds a graph (0 nodes, 0 edges, 2 metadata entries): pass --replace to "
        "replace it with the import\n",
    )


def test_a_sqlite_graph_moves_to_postgresql_with_its_ledger(tmp_path: Path, postgres_url: str) -> None:
    """docs/deploy.md's move: export the SQLite graph, import it into PostgreSQL; a re-ingest there
    finds every document unchanged. The URL's password is not printed."""
    repo = Path(__file__).resolve().parents[2]
    source = ["ingest", str(repo / "data" / "films"), "--mapping", str(repo / "data" / "films_mapping.yaml")]
    assert runner.invoke(app, [*source, "--graph", str(tmp_path / "g.sqlite")]).exit_code == 0
    exported = runner.invoke(
        app, ["graph", "export", str(tmp_path / "g.sqlite"), "-o", str(tmp_path / "out")]
    )
    assert exported.exit_code == 0, exported.output
    url = postgres_url.replace("://postgres@", "://postgres:s3cret@")
    shown = postgres_url.replace("://postgres@", "://postgres:***@")
    moved = runner.invoke(app, ["graph", "import", str(tmp_path / "out"), "-f", "parquet", "-o", url])
    assert (moved.exit_code, moved.output) == (0, f"wrote 28 nodes and 38 edges to {shown}\n")
    again = runner.invoke(app, ["graph", "import", str(tmp_path / "out"), "-f", "parquet", "-o", url])
    assert (again.exit_code, again.output) == (
        2,
        f"error: {shown} already holds a graph (28 nodes, 38 edges, 12 metadata entries): pass --replace to "
        "replace it with the import\n",
    )
    rerun = runner.invoke(app, [*source, "--graph", url])
    assert rerun.exit_code == 0, rerun.output
    assert "new 0, changed 0, retried 0, unchanged 11, deleted 0" in rerun.output
    back = runner.invoke(app, ["graph", "export", url, "-o", str(tmp_path / "back")])
    assert back.exit_code == 0, back.output
    for table in ("nodes", "edges", "provenance", "metadata"):
        assert (tmp_path / "back" / f"{table}.parquet").read_bytes() == (
            tmp_path / "out" / f"{table}.parquet"
        ).read_bytes()


def test_export_refuses_a_target_it_would_destroy_or_cannot_write(tmp_path: Path) -> None:
    """``export g.db -o g.db -f triples`` replaced the graph database with a triples file (the graph was
    gone), as it did any SQLite graph named by -o, and a triples export replaced any other file without a
    word; a triples export into a folder, or a Parquet export onto a file, ended in a traceback. Each is an
    error naming the target, and the target is left as it was (a file is replaced with --replace)."""
    db = tmp_path / "g.db"
    assert runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(db)]).exit_code == 0
    other = tmp_path / "other.sqlite"
    other.write_bytes(db.read_bytes())
    folder = tmp_path / "folder"
    folder.mkdir()
    plain = tmp_path / "plain.txt"
    plain.write_text("keep\n", encoding="utf-8")
    cases = [
        (db, "triples", f"{db} is a graph database: export to another file"),
        (other, "triples", f"{other} is a graph database: export to another file"),
        (folder, "triples", f"{folder} is a folder: a triples export writes a file"),
        (plain, "parquet", f"{plain} is a file: a Parquet export writes a folder of tables"),
        (plain, "triples", f"{plain} holds a file already: pass --replace to replace it with the export"),
    ]
    for target, fmt, message in cases:
        before = sorted(p.name for p in tmp_path.rglob("*"))
        result = runner.invoke(app, ["graph", "export", str(db), "-f", fmt, "-o", str(target)])
        assert (result.exit_code, result.output) == (2, f"error: {message}\n")
        assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert asyncio.run(open_store(db).counts()) == (6, 5)
    assert asyncio.run(open_store(other).counts()) == (6, 5)
    assert plain.read_text(encoding="utf-8") == "keep\n"
    replaced = runner.invoke(
        app, ["graph", "export", str(db), "-f", "triples", "-o", str(plain), "--replace"]
    )
    assert (replaced.exit_code, replaced.output) == (0, f"wrote 5 triples to {plain}\n")
    assert plain.read_text(encoding="utf-8").count("\n") == 5


def test_import_of_a_name_no_store_keeps_writes_nothing(tmp_path: Path) -> None:
    """It went into a Parquet folder, and into SQLite failed naming no line, leaving an empty g.db."""
    kb = tmp_path / "kb.txt"
    kb.write_text("a|r|b\n" + "x" * 2000 + "|r|c\n", encoding="utf-8")
    for target in (tmp_path / "g.db", tmp_path / "folder"):
        result = runner.invoke(app, ["graph", "import", str(kb), "-o", str(target)])
        assert (result.exit_code, result.output) == (
            2,
            f"error: {kb}:2: its subject '{'x' * 60}'… is 2,000 bytes in UTF-8; a graph store keeps at "
            "most 1,024\n",
        )
        assert not target.exists()


def test_a_failed_import_into_a_new_sqlite_file_leaves_no_file(tmp_path: Path) -> None:
    """A Parquet graph holding a node id no store keeps (written by the memory store, which checks none in
    bulk) failed to import into SQLite and left an empty g.db behind (a graph ingest or stats then opened)."""
    from graphwalk_core.stores.memory import MemoryGraphStore

    MemoryGraphStore.from_triples([("x" * 2000, "r", "c")], source_id="kb.txt").save(tmp_path / "p")
    db = tmp_path / "g.db"
    result = runner.invoke(app, ["graph", "import", str(tmp_path / "p"), "-f", "parquet", "-o", str(db)])
    assert (result.exit_code, result.output) == (
        2,
        f"error: node: its id '{'x' * 60}'… is 2,000 bytes in UTF-8; a graph store keeps at most 1,024\n",
    )
    assert not db.exists()


def test_import_over_a_parquet_graph_with_a_truncated_table_names_the_file(tmp_path: Path) -> None:
    """Counting the rows of the graph an import would replace read each table's footer: a truncated
    nodes.parquet ended the import in pyarrow's traceback ("Parquet magic bytes not found in footer")."""
    folder = tmp_path / "g"
    assert runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(folder)]).exit_code == 0
    nodes = folder / "nodes.parquet"
    nodes.write_bytes(nodes.read_bytes()[:100])
    result = runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(folder)])
    assert (result.exit_code, result.output) == (
        2,
        f"error: cannot read {nodes}: Parquet magic bytes not found in footer. Either the file is corrupted "
        "or this is not a parquet file.\n",
    )
    assert len(nodes.read_bytes()) == 100


def test_a_parquet_export_refuses_a_folder_holding_another_graph_unless_asked(tmp_path: Path) -> None:
    """``export g.db -o folder`` replaced the Parquet graph the folder held without a word (a mistyped -o),
    where import refuses to. The folder's own graph exported onto itself is no loss; --replace replaces."""
    db, folder = tmp_path / "g.db", tmp_path / "folder"
    assert runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(db)]).exit_code == 0
    other = tmp_path / "other.txt"
    other.write_text("A|r|B\n", encoding="utf-8")
    assert runner.invoke(app, ["graph", "import", str(other), "-o", str(folder)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    refused = runner.invoke(app, ["graph", "export", str(db), "-o", str(folder)])
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: {folder} already holds a graph (2 nodes, 1 edges, 0 metadata entries): pass --replace to "
        "replace it with the export\n",
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    itself = runner.invoke(app, ["graph", "export", str(folder), "-o", str(folder)])
    assert (itself.exit_code, itself.output) == (0, f"wrote 2 nodes and 1 edges to {folder}\n")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    replaced = runner.invoke(app, ["graph", "export", str(db), "-o", str(folder), "--replace"])
    assert (replaced.exit_code, replaced.output) == (0, f"wrote 6 nodes and 5 edges to {folder}\n")
    assert asyncio.run(open_store(folder).counts()) == (6, 5)


def test_import_refuses_a_file_that_is_no_graph_and_leaves_it(tmp_path: Path) -> None:
    """-o naming an existing file that is no SQLite graph (a .txt, a .parquet) ended in a FileExistsError
    traceback: the import writes a Parquet folder there. It is an error naming the file, which is kept."""
    for name in ("notes.txt", "nodes.parquet"):
        target = tmp_path / name
        target.write_text("keep\n", encoding="utf-8")
        result = runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(target)])
        assert (result.exit_code, result.output) == (
            2,
            f"error: {target} is a file: a Parquet import writes a folder of tables (a SQLite graph is a "
            ".db/.sqlite/.sqlite3 file)\n",
        )
        assert target.read_text(encoding="utf-8") == "keep\n"


def test_import_of_a_source_of_the_other_format_says_so(tmp_path: Path) -> None:
    """A Parquet graph folder imported as triples (the default format) said 'triples file not found', and a
    graph database imported as Parquet 'graph folder not found': both are there, of the other kind."""
    folder, db = tmp_path / "folder", tmp_path / "g.db"
    for target in (folder, db):
        assert (
            runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(target)]).exit_code == 0
        )
    cases = [
        ([str(folder)], f"{folder} is a folder: pass --format parquet to import a Parquet graph folder"),
        (
            [str(db), "-f", "parquet"],
            f"{db} is a file: --format parquet imports a folder of Parquet tables (`graphwalk graph export` "
            "writes one from any graph)",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["graph", "import", *args, "-o", str(tmp_path / "new")])
        assert (result.exit_code, result.output) == (2, f"error: {message}\n")
        assert not (tmp_path / "new").exists()


def test_a_database_failure_mid_command_names_the_graph_and_the_cause(
    postgres_url: str, tmp_path: Path
) -> None:
    """A statement the database ends during the command (here a lock held longer than the session's
    ``lock_timeout``, as a migration or another writer would; a lost connection ends the same way) used to
    end ``graph import``, ``export`` and ``stats`` with a traceback (``query`` reports it as the walk's
    error)."""
    assert runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", postgres_url]).exit_code == 0
    impatient = postgres_url.replace("://postgres@", "://postgres:s3cret@") + "?options=-clock_timeout%3D1s"
    shown = impatient.replace("s3cret", "***")
    with psycopg.connect(postgres_url.replace("+psycopg", "")) as holder:
        holder.execute("LOCK TABLE edges IN ACCESS EXCLUSIVE MODE")
        holder.execute(f"SELECT pg_advisory_xact_lock({sql_engine.WRITER_LOCK})")
        commands = [
            (["graph", "stats", impatient], "Run the command again"),
            (["graph", "export", impatient, "-o", str(tmp_path / "out")], "Run the command again"),
            (
                ["graph", "import", str(kb_file(tmp_path)), "-o", impatient, "--replace"],
                "Nothing was imported; run the command again",
            ),
        ]
        cause = "canceling statement due to lock timeout"
        for args, after in commands:
            failed = runner.invoke(app, args)
            assert (failed.exit_code, " ".join(failed.output.split())) == (
                2,
                f"error: the graph {shown} failed during the run: {cause}. {after}",
            )
            assert failed.exception is None or isinstance(failed.exception, SystemExit)
    assert not (tmp_path / "out").exists()


def test_a_parquet_import_refuses_the_options_of_a_triples_import(tmp_path: Path) -> None:
    """``--source-id`` and ``--node-types metaqa`` with ``--format parquet`` were accepted and silently
    unused (the tables keep their own provenance and types); now an error naming them, nothing written."""
    folder = tmp_path / "folder"
    assert runner.invoke(app, ["graph", "import", str(kb_file(tmp_path)), "-o", str(folder)]).exit_code == 0
    base = ["graph", "import", str(folder), "-f", "parquet", "-o", str(tmp_path / "new.db")]
    outputs = []
    for extra in (
        ["--source-id", "films"],
        ["--node-types", "metaqa"],
        ["--source-id", "f", "--node-types", "metaqa"],
    ):
        result = runner.invoke(app, [*base, *extra])
        outputs.append((result.exit_code, result.output))
    assert outputs == [
        (2, f"error: {given} set what imported triples become: a Parquet graph keeps its own\n")
        for given in ("--source-id", "--node-types metaqa", "--source-id, --node-types metaqa")
    ]
    assert not (tmp_path / "new.db").exists()
