"""Records identified by a mapping's ``key`` column: ``<path>#<key>`` ids, so inserting, removing or
reordering records re-processes only what changed; a record whose key cannot be read deletes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.report import IngestReport
from graphwalk_core.ingest.sources import FileSource, load_mappings
from graphwalk_core.ingest.sources.mapping import RecordMapping
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import graph_tables

HEADER = "id,title,year\n"
ROWS = ["f1,Alpha Film,2001\n", "f2,Beta Film,2002\n", "f3,Gamma Film,2003\n", "f4,Delta Film,2004\n"]


def mappings(key: str | None) -> dict[str, dict[str, object]]:
    mapping: dict[str, object] = {"name": "title", "type": "film", "attributes": ["year"]}
    return {"films.csv": mapping | ({"key": key} if key else {})}


async def run(root: Path, store: MemoryGraphStore, rows: list[str], key: str | None = "id") -> IngestReport:
    root.mkdir(parents=True, exist_ok=True)
    (root / "films.csv").write_text(HEADER + "".join(rows), encoding="utf-8", newline="")
    source = FileSource(root, source_id="films", mappings=load_mappings(mappings(key)))
    return await ingest(source, store, routing="exact")


def counts(report: IngestReport) -> tuple[int, int, int, int, int]:
    return report.new, report.changed, report.unchanged, report.deleted, report.kept


async def test_inserting_removing_or_reordering_keyed_records_touches_only_those_records(
    tmp_path: Path,
) -> None:
    store = MemoryGraphStore()
    first = await run(tmp_path, store, ROWS)
    assert counts(first) == (4, 0, 0, 0, 0)
    docs = sorted(
        [d.id async for d in FileSource(tmp_path, mappings=load_mappings(mappings("id"))).documents()]
    )
    assert docs == ["films.csv#f1", "films.csv#f2", "films.csv#f3", "films.csv#f4"]
    inserted = await run(tmp_path, store, ["f0,Omega Film,2000\n", *ROWS])
    assert counts(inserted) == (1, 0, 4, 0, 0)
    assert inserted.update.nodes_added == 1 and inserted.update.nodes_deleted == 0
    reordered = await run(tmp_path, store, ["f0,Omega Film,2000\n", *reversed(ROWS)])
    assert counts(reordered) == (0, 0, 5, 0, 0)
    removed = await run(tmp_path, store, ["f0,Omega Film,2000\n", ROWS[0], ROWS[2], ROWS[3]])
    assert counts(removed) == (0, 0, 4, 1, 0)
    assert sorted([n.name async for n in store.iter_nodes()]) == [
        "Alpha Film",
        "Delta Film",
        "Gamma Film",
        "Omega Film",
    ]


async def test_without_a_key_a_record_inserted_first_shifts_every_later_one(tmp_path: Path) -> None:
    """What ``key`` is for: positional ids change for every record after an inserted one."""
    store = MemoryGraphStore()
    await run(tmp_path, store, ROWS, key=None)
    inserted = await run(tmp_path, store, ["f0,Omega Film,2000\n", *ROWS], key=None)
    assert counts(inserted) == (1, 4, 0, 0, 0)


async def test_a_record_whose_key_cannot_be_read_keeps_every_record_of_its_file(tmp_path: Path) -> None:
    """A bad row's key is unknown, so its skip keeps the whole file: a record removed in the same edit is
    not deleted until the file reads cleanly."""
    store = MemoryGraphStore()
    await run(tmp_path, store, ROWS)
    broken = await run(tmp_path, store, [ROWS[0], '"f2,Beta Film,2002\n', ROWS[3]])
    assert [(s.describe(), s.document_id) for s in broken.skipped] == [
        ("films.csv:3: malformed CSV: a quote opened on this line is never closed", None)
    ]
    assert counts(broken) == (0, 0, 2, 0, 2)  # f1 and f4 read; f2 (bad) and f3 (removed) kept
    assert broken.update.nodes_deleted == 0
    fixed = await run(tmp_path, store, [ROWS[0], ROWS[1], ROWS[3]])
    assert counts(fixed) == (0, 0, 3, 1, 0)
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Alpha Film", "Beta Film", "Delta Film"]


async def test_missing_blank_unusable_and_repeated_keys_are_skips_naming_their_lines(tmp_path: Path) -> None:
    (tmp_path / "people.jsonl").write_text(
        '{"id": 7, "name": "Ann Lee"}\n'
        '{"name": "Bob Ray"}\n'
        '{"id": " ", "name": "Cal Fox"}\n'
        '{"id": 1.5, "name": "Dee Kim"}\n'
        '{"id": true, "name": "Eve Orr"}\n'
        '{"id": "7", "name": "Fay Wu"}\n'
        '{"id": " x9 ", "name": "Gus Oh"}\n',
        encoding="utf-8",
    )
    source = FileSource(tmp_path, mappings=load_mappings({"people.jsonl": {"name": "name", "key": "id"}}))
    docs = [d async for d in source.documents()]
    assert [(d.id, d.metadata["line"]) for d in docs] == [("people.jsonl#7", 1), ("people.jsonl#x9", 7)]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("people.jsonl:2: the key column 'id' is missing", None),
        ("people.jsonl:3: the key column 'id' is blank", None),
        ("people.jsonl:4: the key column 'id' is neither text nor an integer: 1.5", None),
        ("people.jsonl:5: the key column 'id' is neither text nor an integer: true", None),
        ("people.jsonl:6: key '7' repeats the record on line 1 (that one is read)", "people.jsonl#7"),
    ]


async def keyed_films(root: Path, text: str) -> tuple[list[tuple[str, list[Any]]], FileSource]:
    """``films.csv`` holding ``text``, keyed by ``id``: each document's (id, records), and the source."""
    (root / "films.csv").write_text(text, encoding="utf-8")
    source = FileSource(root, mappings=load_mappings(mappings("id")))
    return [(d.id, d.records) async for d in source.documents()], source


async def test_csv_keys_with_leading_zeros_stay_apart(tmp_path: Path) -> None:
    """A "007" key is a code, not the number 7: two records, not a repeated key (cells with a leading zero
    stay text; "0" and numbers without one are still numbers)."""
    records, source = await keyed_films(
        tmp_path,
        "id,title,year,rating\n007,Alpha Film,2001,0.5\n7,Beta Film,02002,7.25\n0,Gamma Film,0,00.5\n",
    )
    assert records == [
        ("films.csv#007", [{"id": "007", "title": "Alpha Film", "year": 2001, "rating": 0.5}]),
        ("films.csv#7", [{"id": 7, "title": "Beta Film", "year": "02002", "rating": 7.25}]),
        ("films.csv#0", [{"id": 0, "title": "Gamma Film", "year": 0, "rating": "00.5"}]),
    ]
    assert source.skipped == []


def test_a_key_leaves_the_mapping_version_as_it_was() -> None:
    """The key names documents, not what a record extracts to: mappings written before keys existed keep
    their version (an upgrade re-processes no record), and adding a key changes it neither."""
    plain = RecordMapping(name="title", type="film", attributes=["year"])
    assert plain.version == "mapping:30ef4611b83a"  # the version before keys existed
    assert RecordMapping(name="title", type="film", attributes=["year"], key="id").version == plain.version


async def test_switching_to_a_key_reprocesses_only_records_whose_id_or_content_changes(
    tmp_path: Path,
) -> None:
    """Positional ``#1`` and keyed ``#1`` here hold the same record: it stays unchanged; the graph then
    equals a fresh keyed ingest."""
    rows = ["3,Alpha Film,2001\n", "1,Beta Film,2002\n", "0,Gamma Film,2003\n"]
    store = MemoryGraphStore()
    await run(tmp_path / "a", store, rows, key=None)
    switched = await run(tmp_path / "a", store, rows)
    assert counts(switched) == (1, 1, 1, 1, 0)  # new #3, changed #0 (now Gamma), unchanged #1, deleted #2
    fresh = MemoryGraphStore()
    await run(tmp_path / "b", fresh, rows)
    assert await graph_tables(store, "films") == await graph_tables(fresh, "films")


async def test_csv_cells_of_other_digits_or_minus_zero_stay_text(tmp_path: Path) -> None:
    """Only ASCII digits written as a number writes them become one: "1٠٧" (an Arabic-Indic zero and
    seven) is not the key 107, "１７" (full-width) stays as written like "٧" does, "-0" is not 0."""
    records, source = await keyed_films(
        tmp_path,
        "id,title,year\n1٠٧,Alpha Film,1.٥\n107,Beta Film,-0\n１７,Gamma Film,-0.5\n",
    )
    assert records == [
        ("films.csv#1٠٧", [{"id": "1٠٧", "title": "Alpha Film", "year": "1.٥"}]),
        ("films.csv#107", [{"id": 107, "title": "Beta Film", "year": "-0"}]),
        ("films.csv#１７", [{"id": "１７", "title": "Gamma Film", "year": -0.5}]),
    ]
    assert source.skipped == []


async def test_a_csv_decimal_too_large_for_a_float_stays_text(tmp_path: Path) -> None:
    """A decimal of 400 digits read as a float is infinity, which no store keeps as a number."""
    huge = "1" + "0" * 400 + ".5"
    records, source = await keyed_films(tmp_path, f"id,title,year\n1,Alpha Film,{huge}\n2,Beta Film,2.5\n")
    assert records == [
        ("films.csv#1", [{"id": 1, "title": "Alpha Film", "year": huge}]),
        ("films.csv#2", [{"id": 2, "title": "Beta Film", "year": 2.5}]),
    ]
    assert source.skipped == []


async def test_a_blank_csv_key_cell_is_named_blank_not_missing(tmp_path: Path) -> None:
    """The column is there, its cell is empty: "missing" would send the user looking for the column."""
    store = MemoryGraphStore()
    report = await run(tmp_path, store, [ROWS[0], " ,Beta Film,2002\n"])
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        ("films.csv:3: the key column 'id' is blank", None)
    ]


async def test_a_key_over_the_limit_is_a_skip_keeping_its_file(tmp_path: Path) -> None:
    """Ids go into indexed store keys: a 3000-byte key crashed the ingest into PostgreSQL (index row size
    exceeds the b-tree maximum). Over MAX_KEY_BYTES it is a skip naming its line that keeps the file."""
    store = MemoryGraphStore()
    await run(tmp_path, store, ROWS)
    long_key = "é" * 513  # 1026 bytes
    report = await run(
        tmp_path, store, [ROWS[0], f"{long_key},Beta Film,2002\n", "x" * 1024 + ",Eta Film,2\n"]
    )
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        (
            "films.csv:3: the key column 'id' is 1026 bytes long, over the limit of 1024 "
            "(a key is an id, not a text)",
            None,
        )
    ]
    assert counts(report) == (1, 0, 1, 0, 3)  # the 1024-byte key is read; f2, f3, f4 are kept


def keyed_people(root: Path, keys: list[str]) -> FileSource:
    """``p.jsonl`` of four people keyed by ``keys`` (JSON escapes every control character and line break)."""
    people = zip(keys, ["Ann Lee", "Bob Ray", "Cal Fox", "Dee Kim"], strict=True)
    lines = "".join(json.dumps({"id": key, "name": name}) + "\n" for key, name in people)
    (root / "p.jsonl").write_text(lines, encoding="utf-8")
    return FileSource(root, mappings=load_mappings({"p.jsonl": {"name": "name", "key": "id"}}))


async def test_a_key_with_a_control_character_is_a_skip_keeping_its_file(tmp_path: Path) -> None:
    """A NUL in a key crashed the ingest into PostgreSQL (no NUL in text); a line break in an id breaks
    every listing. Inside the key (the ends are stripped) it is a skip naming its line."""
    source = keyed_people(tmp_path, ["a\u0000", "b\nc", " d\t", "e\u007f"])
    assert [d.id async for d in source.documents()] == ["p.jsonl#d"]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("""p.jsonl:1: the key column 'id' is "a\\u0000", with a control character (U+0000)""", None),
        ("""p.jsonl:2: the key column 'id' is "b\\nc", with a control character (U+000A)""", None),
        ("""p.jsonl:4: the key column 'id' is "e\\u007f", with a control character (U+007F)""", None),
    ]


async def test_csv_keys_that_look_like_decimals_are_read_as_written(tmp_path: Path) -> None:
    """A CSV has no way to quote a cell into text: "1.10" was read as 1.1, a key that is neither text
    nor an integer, so such a file could never be keyed (and "1.1" and "1.10" are two sections). The key
    cell stays as written; other cells and integer keys are read as before."""
    records, source = await keyed_films(
        tmp_path, "id,title,year\n1.10,Alpha Film,2.5\n1.1,Beta Film,3\n7,Gamma Film,4\n"
    )
    assert records == [
        ("films.csv#1.10", [{"id": "1.10", "title": "Alpha Film", "year": 2.5}]),
        ("films.csv#1.1", [{"id": "1.1", "title": "Beta Film", "year": 3}]),
        ("films.csv#7", [{"id": 7, "title": "Gamma Film", "year": 4}]),
    ]
    assert source.skipped == []


async def test_a_key_column_no_record_has_is_one_skip_for_the_file(tmp_path: Path) -> None:
    """A misspelled ``key`` (or a header without it) was one skip per record; it is one for the file,
    naming the columns there are, and it deletes nothing the file held."""
    store = MemoryGraphStore()
    await run(tmp_path, store, ROWS)
    (tmp_path / "films.csv").write_text("ident,title,year\n" + "".join(ROWS[:2]), encoding="utf-8")
    source = FileSource(tmp_path, source_id="films", mappings=load_mappings(mappings("id")))
    report = await ingest(source, store, routing="exact")
    assert [s.describe() for s in report.skipped] == [
        "films.csv:2: no record has the key column 'id' (columns: ident, title, year): none of it is read"
    ]
    assert counts(report) == (0, 0, 0, 0, 4)
    assert len([n async for n in store.iter_nodes()]) == 4


async def test_a_key_with_a_c1_control_or_a_unicode_line_break_is_a_skip(tmp_path: Path) -> None:
    """U+0085 (NEL) is a control character, and it, U+2028 and U+2029 end a line for str.splitlines: such
    a key was read as an id (a listing of ids split it in two). Inside the key it is a skip."""
    source = keyed_people(tmp_path, ["a\u0085b", "c\u2028d", "e\u2029f", "g\u00a0h"])
    assert [d.id async for d in source.documents()] == ["p.jsonl#g\u00a0h"]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("""p.jsonl:1: the key column 'id' is "a\\u0085b", with a control character (U+0085)""", None),
        ("""p.jsonl:2: the key column 'id' is "c\\u2028d", with a line break (U+2028)""", None),
        ("""p.jsonl:3: the key column 'id' is "e\\u2029f", with a line break (U+2029)""", None),
    ]


SHADOW = (
    "films.csv#f2.txt: its path reads as a record id of films.csv: its documents could take that file's ids; "
    "rename it"
)


async def test_a_file_whose_path_is_a_records_id_is_a_skip_naming_both_not_a_silent_loss(
    tmp_path: Path,
) -> None:
    """``films.csv#f2.txt`` (a text file) and record ``f2.txt`` of ``films.csv`` would share one document
    id: the text file is a skip naming the record file, whatever the records hold, and nothing is lost."""
    store = MemoryGraphStore()
    rows = ["f1,Alpha Film,2001\n", "f2.txt,Beta Film,2002\n"]
    (tmp_path / "films.csv#f2.txt").write_text("Zeta Film is a film.\n", encoding="utf-8")
    first = await run(tmp_path, store, rows)
    assert [(s.describe(), s.document_id) for s in first.skipped] == [(SHADOW, None)]
    assert counts(first) == (2, 0, 0, 0, 0)
    profile = await FileSource(tmp_path, mappings=load_mappings(mappings("id"))).profile()
    assert (profile.documents, profile.rows, len(profile.skipped)) == (2, 2, 1)
    again = await run(tmp_path, store, rows)
    assert counts(again) == (0, 0, 2, 0, 0)
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Alpha Film", "Beta Film"]


async def test_a_record_that_did_not_parse_keeps_its_id_from_a_file_named_like_it(tmp_path: Path) -> None:
    """Record ``f2.txt`` ingested, then its name left blank: its skip keeps what it held, and the text file
    ``films.csv#f2.txt`` stays a skip (not read in its place)."""
    store = MemoryGraphStore()
    (tmp_path / "films.csv#f2.txt").write_text("Zeta Film is a film.\n", encoding="utf-8")
    await run(tmp_path, store, ["f1,Alpha Film,2001\n", "f2.txt,Beta Film,2002\n"])
    again = await run(tmp_path, store, ["f1,Alpha Film,2001\n", "f2.txt,,2002\n"])
    assert [(s.describe(), s.document_id) for s in again.skipped] == [
        ("films.csv:3: the name column 'title' is missing or empty", "films.csv#f2.txt"),
        (SHADOW, None),
    ]
    assert counts(again) == (0, 0, 1, 0, 1)
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Alpha Film", "Beta Film"]


async def test_a_record_file_that_was_not_read_keeps_its_ids_from_a_file_named_like_a_record(
    tmp_path: Path,
) -> None:
    """``films.csv`` empty (caught mid-write): its records are kept, and ``films.csv#f2.txt`` is still a
    skip, not read in place of record ``f2.txt``."""
    store = MemoryGraphStore()
    (tmp_path / "films.csv#f2.txt").write_text("Zeta Film is a film.\n", encoding="utf-8")
    await run(tmp_path, store, ["f1,Alpha Film,2001\n", "f2.txt,Beta Film,2002\n"])
    (tmp_path / "films.csv").write_text("", encoding="utf-8")
    source = FileSource(tmp_path, source_id="films", mappings=load_mappings(mappings("id")))
    again = await ingest(source, store, routing="exact")
    assert [s.describe() for s in again.skipped] == [
        "films.csv: empty file: its documents from earlier runs are kept (delete the file to remove them)",
        SHADOW,
    ]
    assert counts(again) == (0, 0, 0, 0, 2)
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Alpha Film", "Beta Film"]
    profile = await source.profile()
    assert (profile.documents, profile.rows, len(profile.skipped)) == (0, 0, 2)
