"""Bad input loses nothing: strict, local parsing (a bad row is a skip naming its own line that shifts
nothing) and a document that failed to parse is never a deleted document; one rule for empty files."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.ledger import read_ledger
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.report import IngestReport
from graphwalk_core.ingest.sources import FileSource, SQLSource, load_mappings
from graphwalk_core.ingest.stages import EmptySourceError
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import ScriptedExtractor, graph_tables

FILMS = (
    "title,year,director\n"
    "Alpha Film,2001,Ann Lee\n"
    "Beta Film,2002,Bob Ray\n"
    "Gamma Film,2003,Cal Fox\n"
    "Delta Film,2004,Dee Kim\n"
    "Epsilon Film,2005,Eve Orr\n"
)
MAPPING = {
    "films.csv": {
        "name": "title",
        "type": "film",
        "attributes": ["year"],
        "relations": [{"column": "director", "type": "directed_by", "target_type": "person"}],
    }
}


async def ingest_films(root: Path, store: MemoryGraphStore) -> IngestReport:
    source = FileSource(root, source_id="films", mappings=load_mappings(MAPPING))
    return await ingest(source, store, routing="exact")


async def names(store: MemoryGraphStore) -> list[str]:
    return sorted([n.name async for n in store.iter_nodes()])


@pytest.mark.parametrize(
    ("broken", "skip"),
    [
        (
            '"Beta Film,2002,Bob Ray\n',
            "films.csv:3: malformed CSV: a quote opened on this line is never closed",
        ),
        ("Beta\rFilm,2002,Bob Ray\n", r"films.csv:3: malformed CSV: a bare CR (\r) inside an unquoted field"),
        (
            'Beta Film,"two\nlines",2002,Bob Ray\n',
            "films.csv:3: malformed CSV row: 4 fields, the header has 3",
        ),
    ],
    ids=["unbalanced-quote", "bare-cr", "multi-line-wrong-width"],
)
async def test_a_bad_csv_row_retracts_nothing_and_names_its_line(
    tmp_path: Path, broken: str, skip: str
) -> None:
    (tmp_path / "films.csv").write_text(FILMS, encoding="utf-8", newline="")
    store = MemoryGraphStore()
    await ingest_films(tmp_path, store)
    before = await graph_tables(store, "films")
    assert len([n for n in await names(store) if n.endswith(" Film")]) == 5
    (tmp_path / "films.csv").write_text(
        FILMS.replace("Beta Film,2002,Bob Ray\n", broken), encoding="utf-8", newline=""
    )
    report = await ingest_films(tmp_path, store)
    assert [s.describe() for s in report.skipped] == [skip]
    assert [s.document_id for s in report.skipped] == ["films.csv#1"]
    assert (report.new, report.changed, report.deleted, report.unchanged, report.kept) == (0, 0, 0, 4, 1)
    assert report.update.nodes_deleted == report.update.nodes_added == 0
    assert await graph_tables(store, "films") == before  # nothing shifted, retracted or invented
    (tmp_path / "films.csv").write_text(FILMS, encoding="utf-8", newline="")
    fixed = await ingest_films(tmp_path, store)
    assert (fixed.unchanged, fixed.changed, fixed.new, fixed.skipped) == (5, 0, 0, [])


MID_WRITE = (
    "the file ends {where}, without a final newline: it may still be being written, "
    "so none of its documents are deleted this run"
)
PEOPLE = '{"name": "Ann Lee"}\n{"name": "Bob Ray"}\n{"name": "Cal Fox"}\n'


async def test_a_jsonl_file_caught_mid_write_deletes_none_of_its_records(tmp_path: Path) -> None:
    """Record 2 cut mid-line with no final newline: records 2 and 3 are not yet written, not deleted."""
    path = tmp_path / "people.jsonl"
    path.write_text(PEOPLE, encoding="utf-8", newline="")
    store = MemoryGraphStore()
    mappings = load_mappings({"people.jsonl": {"name": "name", "type": "person"}})

    async def run() -> IngestReport:
        source = FileSource(tmp_path, source_id="people", mappings=mappings)
        return await ingest(source, store, routing="exact")

    assert (await run()).new == 3
    before = await graph_tables(store, "people")
    path.write_text('{"name": "Ann Lee"}\n{"name": "Bo', encoding="utf-8", newline="")
    report = await run()
    where = "mid-record (invalid JSON: Unterminated string starting at column 10)"
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        ("people.jsonl:2: " + MID_WRITE.format(where=where), None)
    ]
    assert (report.new, report.changed, report.deleted, report.unchanged, report.kept) == (0, 0, 0, 1, 2)
    assert await graph_tables(store, "people") == before
    assert await names(store) == ["Ann Lee", "Bob Ray", "Cal Fox"]
    path.write_text(PEOPLE, encoding="utf-8", newline="")  # the writer is done
    done = await run()
    assert (done.unchanged, done.new, done.deleted, done.skipped) == (3, 0, 0, [])


@pytest.mark.parametrize(
    ("cut", "line", "where"),
    [
        ("Beta Film,20", 3, "mid-record (malformed CSV row: 2 fields, the header has 3)"),
        (
            'Beta Film,2002,"Bob R',
            3,
            "mid-record (malformed CSV: a quote opened on this line is never closed)",
        ),
        (
            'Beta Film,2002,"Bob\nRay,x,y',  # the line after the open quote parses as a row of 3
            3,
            "mid-record (malformed CSV: a quote opened on this line is never closed)",
        ),
        ("", 1, "in its header"),
    ],
    ids=["too-few-fields", "open-quote", "open-quote-over-lines", "in-the-header"],
)
async def test_a_csv_file_caught_mid_write_deletes_none_of_its_records(
    tmp_path: Path, cut: str, line: int, where: str
) -> None:
    """The rows after the complete ones are not yet written: none is deleted (nor read from the lines
    of an open quote); the complete rows are read as usual."""
    path = tmp_path / "films.csv"
    path.write_text(FILMS, encoding="utf-8", newline="")
    store = MemoryGraphStore()
    await ingest_films(tmp_path, store)
    before = await graph_tables(store, "films")
    head = "title,year,director" if not cut else "title,year,director\nAlpha Film,2001,Ann Lee\n" + cut
    path.write_text(head, encoding="utf-8", newline="")
    report = await ingest_films(tmp_path, store)
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        (f"films.csv:{line}: " + MID_WRITE.format(where=where), None)
    ]
    unchanged = 1 if cut else 0
    assert (report.new, report.changed, report.deleted, report.unchanged, report.kept) == (
        0,
        0,
        0,
        unchanged,
        5 - unchanged,
    )
    assert await graph_tables(store, "films") == before


@pytest.mark.parametrize(
    ("name", "text", "deleted", "skipped"),
    [
        ("films.csv", FILMS.split("Delta")[0].removesuffix("\n"), ["films.csv#3", "films.csv#4"], []),
        (
            "films.csv",
            FILMS.replace("Beta Film,2002,Bob Ray", "Beta Film").split("Delta")[0].removesuffix("\n"),
            ["films.csv#3", "films.csv#4"],
            ["films.csv:3: malformed CSV row: 1 fields, the header has 3"],
        ),
        ("people.jsonl", PEOPLE.split("\n")[0], ["people.jsonl#1", "people.jsonl#2"], []),
        (
            "people.jsonl",
            '{"name": "Ann Lee"}\n{"name":\n{"name": "Cal Fox"}',
            [],
            ["people.jsonl:2: invalid JSON: Expecting value at column 9"],
        ),
    ],
    ids=["csv-complete", "csv-bad-row-not-last", "jsonl-complete", "jsonl-bad-record-not-last"],
)
async def test_a_file_without_a_final_newline_whose_last_record_parses_is_complete(
    tmp_path: Path, name: str, text: str, deleted: list[str], skipped: list[str]
) -> None:
    """Its removed records are deleted as usual, and a bad record before the last is one record's skip."""
    path = tmp_path / name
    path.write_text(FILMS if name == "films.csv" else PEOPLE, encoding="utf-8", newline="")
    store = MemoryGraphStore()
    mapping = MAPPING["films.csv"] if name == "films.csv" else {"name": "name", "type": "person"}

    async def run() -> tuple[IngestReport, list[str]]:
        source = FileSource(tmp_path, source_id="s", mappings=load_mappings({name: mapping}))
        report = await ingest(source, store, routing="exact")
        return report, sorted((await read_ledger(store, "s")).keys())

    first, ids = await run()
    assert first.new == len(ids)
    path.write_text(text, encoding="utf-8", newline="")
    report, left = await run()
    assert [s.describe() for s in report.skipped] == skipped
    assert (report.deleted, report.kept, report.new, report.changed) == (len(deleted), len(skipped), 0, 0)
    assert left == [i for i in ids if i not in deleted]


async def test_quoted_fields_may_span_lines_and_are_named_by_their_first_line(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(
        'name,note\nAnn,"two\nlines"\nBob,"a ""quoted"" word"\nCal,x,extra\n"Dee,"oops\nEve,ok\n',
        encoding="utf-8",
        newline="",
    )
    source = FileSource(tmp_path)
    docs = [d async for d in source.documents()]
    assert [(d.id, d.metadata["line"], d.records) for d in docs] == [
        ("t.csv#0", 2, [{"name": "Ann", "note": "two\nlines"}]),
        ("t.csv#1", 4, [{"name": "Bob", "note": 'a "quoted" word'}]),
        ("t.csv#4", 7, [{"name": "Eve", "note": "ok"}]),
    ]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("t.csv:5: malformed CSV row: 3 fields, the header has 2", "t.csv#2"),
        ("t.csv:6: malformed CSV: ',' expected after '\"'", "t.csv#3"),
    ]


async def test_switching_a_csv_between_crlf_and_lf_line_ends_changes_no_record(tmp_path: Path) -> None:
    """A quoted cell's line break read as written kept its CR: the same file with CRLF line ends (as git's
    autocrlf writes it, inside quotes too) held another value, so switching re-processed the record and
    changed the attribute in the graph (docs/guarantees.md: it changes no record)."""
    text = 'id,name,note\n1,Ann,"two\nlines"\n2,Bob,plain\n'
    mappings = load_mappings({"name": "name", "key": "id"})
    (tmp_path / "t.csv").write_text(text, encoding="utf-8", newline="")
    store = MemoryGraphStore()
    await ingest(FileSource(tmp_path, source_id="s", mappings=mappings), store, routing="exact")
    before = await graph_tables(store, "s")
    (tmp_path / "t.csv").write_text(text.replace("\n", "\r\n"), encoding="utf-8", newline="")
    source = FileSource(tmp_path, source_id="s", mappings=mappings)
    assert [d.records async for d in source.documents()] == [
        [{"id": 1, "name": "Ann", "note": "two\nlines"}],
        [{"id": 2, "name": "Bob", "note": "plain"}],
    ]
    report = await ingest(source, store, routing="exact")
    assert (report.unchanged, report.changed) == (2, 0)
    assert await graph_tables(store, "s") == before


async def test_json_lines_end_at_newlines_only_and_array_items_name_their_line(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        '{"name": "Ann\u2028Lee"}\n{"name": "Bob"}\n', encoding="utf-8", newline=""
    )
    (tmp_path / "b.json").write_text(
        '[\n  {"name": "Cal"},\n  7,\n\n  {"name": "Dee"}\n]\n', encoding="utf-8"
    )
    source = FileSource(tmp_path)
    docs = [d async for d in source.documents()]
    assert [(d.id, d.metadata["line"]) for d in docs] == [
        ("a.jsonl#0", 1),
        ("a.jsonl#1", 2),
        ("b.json#0", 2),
        ("b.json#2", 5),
    ]
    assert [s.describe() for s in source.skipped] == ["b.json:3: record #1 must be a JSON object, got int"]


async def test_a_skipped_multi_line_record_is_one_record_and_keeps_one_slot(tmp_path: Path) -> None:
    """Its quotes closed, so its continuation lines are not read again as records (nothing invented),
    and it takes one index: fixing it shifts nothing after it."""
    path = tmp_path / "films.csv"
    path.write_text(
        'title,year,director\nAlpha,"two\nBeta",2001,Ann Lee\nDelta,2004,Dan Moe\n',
        encoding="utf-8",
        newline="",
    )
    source = FileSource(tmp_path)
    docs = [d async for d in source.documents()]
    assert [(d.id, d.metadata["line"], d.records) for d in docs] == [
        ("films.csv#1", 4, [{"title": "Delta", "year": 2004, "director": "Dan Moe"}])
    ]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("films.csv:2: malformed CSV row: 4 fields, the header has 3", "films.csv#0")
    ]
    path.write_text(
        'title,year,director\nAlpha,"two\nBeta",Ann Lee\nDelta,2004,Dan Moe\n', encoding="utf-8", newline=""
    )
    assert [(d.id, d.metadata["line"]) async for d in source.documents()] == [
        ("films.csv#0", 2),
        ("films.csv#1", 4),
    ]


@pytest.mark.parametrize("scalar", ["null", "3", '"x"', "true"])
async def test_a_json_file_holding_a_scalar_is_a_file_skip_that_keeps_its_records(
    tmp_path: Path, scalar: str
) -> None:
    path = tmp_path / "p.json"
    path.write_text('[{"name": "P1", "spouse": "Q1"}, {"name": "P2", "spouse": "Q2"}]', encoding="utf-8")
    store = MemoryGraphStore()
    mappings = load_mappings({"name": "name", "relations": [{"column": "spouse", "type": "spouse"}]})

    async def run() -> IngestReport:
        return await ingest(FileSource(tmp_path, source_id="p", mappings=mappings), store, routing="exact")

    assert (await run()).new == 2
    before = await graph_tables(store, "p")
    path.write_text(f"\n  {scalar}\n", encoding="utf-8")
    report = await run()
    kind = {"null": "null", "3": "a number", '"x"': "a string", "true": "a boolean"}[scalar]
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        (f"p.json:2: a JSON file must hold an object or an array of objects, got {kind}", None)
    ]
    assert (report.new, report.changed, report.deleted, report.kept) == (0, 0, 0, 2)
    assert await graph_tables(store, "p") == before


async def test_a_mapping_key_matching_no_file_is_reported_and_keeps_nothing(tmp_path: Path) -> None:
    """A mapping key that matches no record file is named in the report; it is not skipped input, so
    the documents of a deleted file it names are still deleted."""
    (tmp_path / "films.csv").write_text(FILMS, encoding="utf-8")
    store = MemoryGraphStore()
    first = await ingest_films(tmp_path, store)
    assert (first.new, first.skipped) == (5, [])
    (tmp_path / "films.csv").unlink()
    (tmp_path / "notes.txt").write_text("E Ann Lee|person\n", encoding="utf-8")
    source = FileSource(tmp_path, source_id="films", mappings=load_mappings(MAPPING))
    report = await ingest(source, store, extractor=ScriptedExtractor(), routing="exact")
    assert [s.describe() for s in report.skipped] == [
        "mapping key 'films.csv': matches no file of the source (keys are paths relative to the source"
        " folder, or globs)"
    ]
    assert (report.new, report.deleted, report.kept) == (1, 5, 0)
    assert await names(store) == ["Ann Lee"]


EMPTY_CASES = {
    "a.txt": "E Ann Lee|person\n",
    "a.md": "E Ann Lee|person\n",
    "a.jsonl": '{"name": "Ann Lee"}\n',
    "a.json": '[{"name": "Ann Lee"}]',
    "a.csv": "name\nAnn Lee\n",
}


@pytest.mark.parametrize("empty", ["", "  \n\n"], ids=["zero-bytes", "blank"])
@pytest.mark.parametrize("name", sorted(EMPTY_CASES))
async def test_an_empty_file_keeps_its_documents_in_every_format(
    tmp_path: Path, name: str, empty: str
) -> None:
    """The rule (docs/guarantees.md): an empty or blank file is skipped as unreadable and keeps what it
    held; deleting the file deletes its documents."""
    text = EMPTY_CASES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    store, extractor = MemoryGraphStore(), ScriptedExtractor()
    specs = {"a.json": {"name": "name", "type": "person"}, "a.csv": {"name": "name"}}
    specs["a.jsonl"] = specs["a.json"]
    mappings = load_mappings({name: specs[name]} if name in specs else None)  # a key matches a file

    async def run(*, allow_empty: bool = False) -> IngestReport:
        source = FileSource(tmp_path, source_id="docs", mappings=mappings)
        return await ingest(source, store, extractor=extractor, routing="exact", allow_empty=allow_empty)

    first = await run()
    assert first.new == 1 and await names(store) == ["Ann Lee"]
    before = await graph_tables(store, "docs")
    path.write_text(empty, encoding="utf-8")
    report = await run()
    assert [s.describe() for s in report.skipped] == [
        f"{name}: empty file: its documents from earlier runs are kept (delete the file to remove them)"
    ]
    assert (report.deleted, report.kept, report.changed) == (0, 1, 0)
    assert await graph_tables(store, "docs") == before
    path.unlink()  # the source's last file: an empty source deletes only when allowed
    with pytest.raises(EmptySourceError, match=r"^source 'docs' lists no documents at "):
        await run()
    assert await graph_tables(store, "docs") == before
    gone = await run(allow_empty=True)
    assert (gone.deleted, gone.kept) == (1, 0) and await names(store) == []


async def test_a_sql_table_that_fails_to_read_keeps_its_rows_and_the_rest_is_read(tmp_path: Path) -> None:
    db = tmp_path / "src.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("CREATE TABLE cities (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO people VALUES (1, 'Ann Lee'), (2, 'Bob Ray')")
        conn.execute("INSERT INTO cities VALUES (1, 'Paris')")
    store = MemoryGraphStore()
    first = await ingest(SQLSource(f"sqlite:///{db}"), store, routing="exact")
    assert first.new == 3 and await names(store) == ["Ann Lee", "Bob Ray", "Paris"]
    with sqlite3.connect(db) as conn:  # row 2 now holds bytes that are not UTF-8, and a city is added
        conn.execute("UPDATE people SET name = CAST(x'ff41' AS TEXT) WHERE id = 2")
        conn.execute("INSERT INTO cities VALUES (2, 'Rome')")
    report = await ingest(SQLSource(f"sqlite:///{db}"), store, routing="exact")
    assert [s.describe() for s in report.skipped] == [
        "people: cannot read a row among its first 1,000: Could not decode to UTF-8 column 'name' "
        "with text '\ufffdA'"
    ]
    assert (report.new, report.unchanged, report.deleted, report.kept) == (1, 1, 0, 2)
    assert await names(store) == ["Ann Lee", "Bob Ray", "Paris", "Rome"]


async def test_json_python_cannot_read_is_a_skip_naming_its_line_not_a_crash(tmp_path: Path) -> None:
    """Python reads no integer of over 4300 digits (``sys.get_int_max_str_digits``) nor arrays nested past
    its recursion limit: json.loads raised a ValueError or RecursionError that ended the whole run. Each
    is invalid JSON at its line, and deletes nothing."""
    huge = "1" + "0" * 4300
    (tmp_path / "a.jsonl").write_text(f'{{"n": 1}}\n{{"n": {huge}}}\n{{"n": 3}}\n', encoding="utf-8")
    (tmp_path / "b.json").write_text(f'[\n  {{"n": 1}},\n  {{"n": -{huge}}}\n]\n', encoding="utf-8")
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "c.jsonl").write_text(f'{{"n": 1}}\n{{"n": {deep}}}\n', encoding="utf-8")
    source = FileSource(tmp_path, source_id="nums")
    assert [d.id async for d in source.documents()] == ["a.jsonl#0", "a.jsonl#2", "c.jsonl#0"]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("a.jsonl:2: invalid JSON: a number of more than 4300 digits at column 7", "a.jsonl#1"),
        ("b.json:3: invalid JSON: a number of more than 4300 digits at column 10", None),
        ("c.jsonl:2: invalid JSON: arrays or objects nested too deeply at column 1", "c.jsonl#1"),
    ]


async def test_links_not_followed_and_folders_not_listed_keep_their_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder replaced by a symbolic link to it (moved to another disk), a file whose link now points
    nowhere, or a loop, were passed over in silence: their documents were deleted. Each is now a skip
    naming it that keeps what it held, and so is a folder that cannot be listed (PermissionError, which
    ``Path.rglob`` swallowed)."""
    src, moved = tmp_path / "src", tmp_path / "moved"
    for folder in ("sub", "locked"):
        (src / folder).mkdir(parents=True)
        (src / folder / "a.txt").write_text(f"E Ann {folder}|person\n", encoding="utf-8")
    (src / "b.txt").write_text("E Bob Ray|person\n", encoding="utf-8")
    (src / "c.txt").write_text("E Cal Fox|person\n", encoding="utf-8")
    store, extractor = MemoryGraphStore(), ScriptedExtractor()

    async def run() -> IngestReport:
        return await ingest(FileSource(src, source_id="docs"), store, extractor=extractor, routing="exact")

    assert (await run()).new == 4
    before = await graph_tables(store, "docs")
    moved.mkdir()
    (src / "sub").rename(moved / "sub")
    (src / "sub").symlink_to(moved / "sub", target_is_directory=True)
    (src / "b.txt").unlink()
    (src / "b.txt").symlink_to(tmp_path / "gone.txt")
    (src / "c.txt").unlink()
    (src / "c.txt").symlink_to(src / "c.txt")
    scandir = os.scandir

    def locked(path: Any) -> Any:
        if Path(path) == src / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", locked)
    report = await run()
    assert [s.describe() for s in report.skipped] == [
        "b.txt: a symbolic link to nothing (its target is missing, or it loops)",
        "c.txt: a symbolic link to nothing (its target is missing, or it loops)",
        "locked: cannot list the folder: Permission denied",
        "sub: a symbolic link to a folder, not followed (ingest its target as a source of its own)",
    ]
    assert (report.new, report.changed, report.deleted, report.kept) == (0, 0, 0, 4)
    assert await graph_tables(store, "docs") == before
    monkeypatch.undo()
    for link in ("sub", "b.txt", "c.txt"):
        (src / link).unlink()
    gone = await run()
    assert (gone.deleted, gone.kept, gone.skipped) == (3, 0, [])
    assert await names(store) == ["Ann locked"]


async def test_a_file_replaced_by_a_fifo_or_socket_is_a_skip_that_keeps_its_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO or socket where a file was (reading it could block) was left out of the listing in silence,
    so the file's documents were retracted. Each is now a skip naming it and what it is, which keeps them;
    once it is removed, the next run deletes them."""
    src = tmp_path / "src"
    src.mkdir()
    for name, who in (("a.txt", "Ann Lee"), ("b.txt", "Bob Ray"), ("c.txt", "Cal Fox")):
        (src / name).write_text(f"E {who}|person\n", encoding="utf-8")
    store, extractor = MemoryGraphStore(), ScriptedExtractor()

    async def run() -> IngestReport:
        return await ingest(FileSource(src, source_id="docs"), store, extractor=extractor, routing="exact")

    assert (await run()).new == 3
    before = await graph_tables(store, "docs")
    monkeypatch.chdir(src)  # a socket's path has a length limit: bound by its relative name
    (src / "a.txt").unlink()
    os.mkfifo(src / "a.txt")
    (src / "b.txt").unlink()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("b.txt")
        report = await run()
        assert [s.describe() for s in report.skipped] == [
            "a.txt: a named pipe (FIFO), not a regular file: not read (reading it could block)",
            "b.txt: a socket, not a regular file: not read (reading it could block)",
        ]
        assert (report.new, report.changed, report.deleted, report.kept) == (0, 0, 0, 2)
        assert await graph_tables(store, "docs") == before
    for name in ("a.txt", "b.txt"):
        (src / name).unlink()
    gone = await run()
    assert (gone.deleted, gone.kept, gone.skipped) == (2, 0, [])
    assert await names(store) == ["Cal Fox"]


async def test_a_file_that_turns_into_a_fifo_after_the_listing_is_a_skip_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing saw a regular file, then a FIFO took its place before it was read: the read blocked
    forever (no writer ever came). It is now opened without blocking and skipped as what it is."""
    from graphwalk_core.ingest.sources import files

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("E Ann Lee|person\n", encoding="utf-8")
    (src / "b.txt").write_text("E Bob Ray|person\n", encoding="utf-8")
    store, extractor = MemoryGraphStore(), ScriptedExtractor()
    listed = files.source_files(src)
    (src / "a.txt").unlink()
    os.mkfifo(src / "a.txt")
    monkeypatch.setattr(files, "source_files", lambda root: listed)
    done: list[IngestReport] = []

    def run() -> None:
        source = FileSource(src, source_id="docs")
        done.append(asyncio.run(ingest(source, store, extractor=extractor, routing="exact")))

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(60)
    if not done:  # the old code blocks in the FIFO's open: a writer (if it is there) lets it go on
        with contextlib.suppress(OSError):
            os.close(os.open(src / "a.txt", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO listed as a file blocked the run")
    assert [s.describe() for s in done[0].skipped] == [
        "a.txt: a named pipe (FIFO), not a regular file: not read (reading it could block)"
    ]
    assert await names(store) == ["Bob Ray"]


async def test_a_source_folder_that_cannot_be_listed_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unreadable source folder read as empty, which deleted every document of the source."""
    (tmp_path / "a.txt").write_text("E Ann Lee|person\n", encoding="utf-8")
    scandir = os.scandir

    def locked(path: Any) -> Any:
        if Path(path) == tmp_path:
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", locked)
    with pytest.raises(InputError, match=f"^cannot list the source folder {tmp_path}: Permission denied$"):
        [d async for d in FileSource(tmp_path, source_id="docs").documents()]


async def test_nan_and_infinity_are_invalid_json_not_values(tmp_path: Path) -> None:
    """Python's json reads NaN, Infinity and -Infinity, which JSON has not: such a record was ingested,
    its value stored as NaN in memory and as null in a SQL graph. Each is invalid JSON at its line and
    column (a string "NaN" is text, as ever)."""
    (tmp_path / "a.jsonl").write_text(
        '{"name": "Ann", "score": 1.5}\n{"name": "NaN", "score": NaN}\n{"name": "Cal", "x": [-Infinity]}\n',
        encoding="utf-8",
    )
    (tmp_path / "b.json").write_text('[\n  {"name": "Dee", "score": Infinity}\n]\n', encoding="utf-8")
    source = FileSource(tmp_path, source_id="nums")
    assert [d.id async for d in source.documents()] == ["a.jsonl#0"]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("a.jsonl:2: invalid JSON: NaN is not a JSON number at column 26", "a.jsonl#1"),
        ("a.jsonl:3: invalid JSON: -Infinity is not a JSON number at column 23", "a.jsonl#2"),
        ("b.json:2: invalid JSON: Infinity is not a JSON number at column 28", None),
    ]


async def test_a_json_number_too_large_for_a_float_stays_text(tmp_path: Path) -> None:
    """``1e400`` is a JSON number that Python reads as infinity (kept as a float in memory, null in a SQL
    graph): it stays the text written, as a CSV cell does; numbers a float holds are numbers."""
    (tmp_path / "a.jsonl").write_text(
        '{"name": "Ann", "big": 1e400, "small": -2.5e-3, "n": 7}\n', encoding="utf-8"
    )
    records = [d.records async for d in FileSource(tmp_path, source_id="nums").documents()]
    assert records == [[{"name": "Ann", "big": "1e400", "small": -0.0025, "n": 7}]]


async def test_a_nul_byte_past_the_first_8_kib_is_a_binary_file(tmp_path: Path) -> None:
    """Only the first 8 KiB were searched for a NUL byte: a NUL further on went into a node's name (a
    PostgreSQL graph cannot store it, which failed the run)."""
    rows = "".join(f"Film {i},{i}\n" for i in range(1000))
    data = f"title,n\n{rows}".encode()
    (tmp_path / "a.csv").write_bytes(data + b"Nul\x00Film,1\n")
    source = FileSource(tmp_path, source_id="films")
    assert [d.id async for d in source.documents()] == []
    assert [s.describe() for s in source.skipped] == [  # the line too: the rest of the file is text
        f"a.csv:1002: binary file (NUL byte at offset {len(data) + 3})"
    ]
    assert len(data) > 8192


async def test_entries_that_cannot_be_examined_are_skips_that_keep_their_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that lists but cannot be entered (read permission, no execute) names its entries but
    cannot tell what they are: ``Path.is_symlink`` raised PermissionError and ended the run with a
    traceback. Each such entry is a skip naming it that keeps its documents; the rest is read."""
    src = tmp_path / "src"
    (src / "shut" / "inner").mkdir(parents=True)
    (src / "shut" / "a.txt").write_text("E Ann Lee|person\n", encoding="utf-8")
    (src / "shut" / "inner" / "b.txt").write_text("E Bob Ray|person\n", encoding="utf-8")
    (src / "c.txt").write_text("E Cal Fox|person\n", encoding="utf-8")
    store, extractor = MemoryGraphStore(), ScriptedExtractor()

    async def run() -> IngestReport:
        return await ingest(FileSource(src, source_id="docs"), store, extractor=extractor, routing="exact")

    assert (await run()).new == 3
    stat = os.stat

    def shut(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path).parent == src / "shut":
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", shut)
    (src / "c.txt").write_text("E Cal Fox|person\nE Dee Kim|person\n", encoding="utf-8")
    report = await run()
    assert [s.describe() for s in report.skipped] == [
        "shut/a.txt: cannot read: Permission denied",
        "shut/inner: cannot list the folder: Permission denied",
    ]
    assert (report.changed, report.deleted, report.kept) == (1, 0, 2)
    assert await names(store) == ["Ann Lee", "Bob Ray", "Cal Fox", "Dee Kim"]


async def test_a_document_whose_ledger_key_no_store_keeps_is_a_skip(tmp_path: Path) -> None:
    """A path of thousands of bytes gives a ledger key over every store's limit: the whole run failed."""
    deep = tmp_path.joinpath(*["d" * 250] * 9)
    deep.mkdir(parents=True)
    (deep / "far.txt").write_text("Ann Lee met Bo Chen.", encoding="utf-8")
    (tmp_path / "near.txt").write_text("Ann Lee met Bo Chen.", encoding="utf-8")
    store = MemoryGraphStore()
    report = await ingest(
        FileSource(tmp_path, source_id="docs"), store, extractor=ScriptedExtractor(), routing="exact"
    )
    far = "/".join(["d" * 250] * 9) + "/far.txt"
    assert (report.new, [s.describe() for s in report.skipped]) == (
        1,
        [
            f"{far}: its document id is 2,266 bytes in UTF-8; the ledger keeps ids of at most 2,029 for this "
            "source (shorten the path, or key the records by a shorter column)"
        ],
    )
    assert list(await read_ledger(store, "docs")) == ["near.txt"]


async def test_a_json_object_naming_a_key_twice_is_a_skip_that_keeps_what_the_record_gave(
    tmp_path: Path,
) -> None:
    """JSON would keep the last of two values for one key without a word (as a CSV header naming a column
    twice would); the record is a skip naming its line, in .jsonl and .json, nested or not, and keeps what
    it gave before."""
    mappings = load_mappings({"name": "name", "type": "film"})
    (tmp_path / "a.jsonl").write_text('{"name": "Up", "year": 2009}\n{"name": "Cars"}\n', encoding="utf-8")
    (tmp_path / "b.json").write_text('[\n  {"name": "Big"},\n  {"name": "Jaws"}\n]\n', encoding="utf-8")
    store = MemoryGraphStore()
    await ingest(FileSource(tmp_path, source_id="s", mappings=mappings), store, routing="exact")
    before = await graph_tables(store, "s")
    (tmp_path / "a.jsonl").write_text(
        '{"name": "Up", "year": 2009, "year": 2010}\n{"name": "Cars"}\n', encoding="utf-8"
    )
    (tmp_path / "b.json").write_text(
        '[\n  {"name": "Big"},\n  {"name": "Jaws", "cast": {"shark": "Bruce", "shark": "Brucie"}}\n]\n',
        encoding="utf-8",
    )
    source = FileSource(tmp_path, source_id="s", mappings=mappings)
    report = await ingest(source, store, routing="exact")
    assert [s.describe() for s in report.skipped] == [
        'a.jsonl:1: the key "year" appears twice in one object: one of its values would be lost',
        'b.json:3: the key "shark" appears twice in one object: one of its values would be lost',
    ]
    assert (report.unchanged, report.deleted, report.kept) == (2, 0, 2)
    assert await graph_tables(store, "s") == before
