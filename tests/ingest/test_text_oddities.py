"""Text and Unicode oddities in sources: lone surrogates, file names that are not UTF-8 or hold a control
character, SQL keys holding one, UTF-16 files, invisible characters in names, column names in NFD."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources import FileSource, SQLSource, load_mappings
from graphwalk_core.ingest.sources import files as files_module
from graphwalk_core.ingest.sources import sql as sql_module
from graphwalk_core.ingest.sources.fingerprints import source_fingerprint
from graphwalk_core.ingest.sources.specs import SourceSpec
from graphwalk_core.ingest.text import name_words, normalize_name
from graphwalk_core.stores.memory import MemoryGraphStore
from tests.ingest.test_cli import graph_triples, invoke

SURROGATE = "field 'name' holds a lone surrogate (U+D800, from a JSON escape), which is no character"


async def test_a_lone_surrogate_escape_is_a_skip_naming_file_line_and_field(tmp_path: Path) -> None:
    """``"\\ud800"`` is valid JSON and Python reads it, but it has no UTF-8 form: hashing the record
    crashed the whole ingest (with a mapping, building its entity did). It is a skip like a NUL's, with
    or without a mapping; a surrogate pair is text."""
    (tmp_path / "a.jsonl").write_text(
        '{"name": "Heat"}\n{"name": "Bad\\ud800"}\n{"name": "Emoji \\ud83d\\ude00"}\n'
        '{"tags": {"k\\uDFFF": 1}, "name": "Nested"}\n',
        encoding="utf-8",
    )
    for mappings in (None, load_mappings({"name": "name"})):
        source = FileSource(tmp_path, mappings=mappings)
        docs = [d async for d in source.documents()]
        assert [d.id for d in docs] == ["a.jsonl#0", "a.jsonl#2"]
        assert docs[1].records == [{"name": "Emoji \U0001f600"}]
        assert [s.describe() for s in source.skipped] == [
            f"a.jsonl:2: {SURROGATE}: it has no UTF-8 form, so no graph store keeps it",
            "a.jsonl:4: field 'tags' holds a lone surrogate (U+DFFF, from a JSON escape), which is no "
            "character: it has no UTF-8 form, so no graph store keeps it",
        ]


async def test_a_key_holding_a_lone_surrogate_is_a_bad_key(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('[{"name": "Ronin", "id": 1},\n {"name": "X", "id": "k\\uDC00"}]')
    source = FileSource(tmp_path, mappings=load_mappings({"name": "name", "key": "id"}))
    assert [d.id async for d in source.documents()] == ["b.json#1"]
    assert [(s.describe(), s.document_id) for s in source.skipped] == [
        ("b.json:2: the key column 'id' is \"k\\udc00\", with a lone surrogate (U+DC00)", None)
    ]


@pytest.mark.parametrize("graph", ["g.sqlite", "parquet"])
def test_a_lone_surrogate_keeps_what_the_record_gave_and_the_run_goes_on(tmp_path: Path, graph: str) -> None:
    """Through the command, into SQLite and a Parquet folder: the record edited to hold a surrogate keeps
    its entity and edge, the other records are read, and nothing crashes mid-run."""
    source, store = tmp_path / "people", str(tmp_path / graph)
    source.mkdir()
    mapping = tmp_path / "m.yaml"
    mapping.write_text("name: name\nrelations: [{column: friend, type: knows}]\n", encoding="utf-8")
    rows = source / "p.jsonl"
    rows.write_text('{"name": "Ann", "friend": "Bob"}\n{"name": "Cy"}\n', encoding="utf-8")
    args = ("--graph", store, "--mapping", str(mapping), "--routing", "exact")
    assert invoke(str(source), *args)[0] == 0
    rows.write_text('{"name": "Ann\\ud800", "friend": "Bob"}\n{"name": "Dee"}\n', encoding="utf-8")
    code, out = invoke(str(source), *args)
    assert code == 0, out
    assert f"skipped p.jsonl:1: {SURROGATE}" in out
    assert "new 0, changed 1, retried 0, unchanged 0, deleted 0, failed 0" in out
    assert graph_triples(Path(store)) == [("Ann", "knows", "Bob")]


def test_a_file_name_that_is_not_utf8_is_a_skip_naming_its_bytes(tmp_path: Path) -> None:
    """Linux allows any bytes in a file name; Python lists one that is not UTF-8 with lone surrogates,
    and its document id crashed the ingest (hashing it). Such a file, or a file in such a folder, is a
    skip naming the path with each byte that is not UTF-8 as ``\\xNN``; the other files are read."""
    source = tmp_path / "notes"
    (source / os.fsdecode(b"d\xff")).mkdir(parents=True)
    (source / "ok.txt").write_text("Ada Lovelace met Charles Babbage.\n", encoding="utf-8")
    (source / os.fsdecode(b"caf\xe9.txt")).write_text("Grace Hopper met Alan Turing.\n", encoding="utf-8")
    (source / os.fsdecode(b"d\xff") / "x.txt").write_text("Edsger Dijkstra.\n", encoding="utf-8")
    code, out = invoke(str(source), "--graph", str(tmp_path / "g.sqlite"), "--routing", "exact")
    assert code == 0, out
    assert "skipped caf\\xe9.txt: its path is not UTF-8, so it cannot be a document id: rename it" in out
    assert "skipped d\\xff/x.txt: its path is not UTF-8, so it cannot be a document id: rename it" in out
    assert "new 1, changed 0" in out
    fingerprint = source_fingerprint(SourceSpec(id="notes", kind="files", path_or_url=str(source)))
    assert len(fingerprint) == 64  # the sensor lists the folder as the ingest does (it crashed too)


def test_invisible_characters_and_unicode_forms_do_not_split_a_name() -> None:
    """A zero-width space, joiner, soft hyphen, word joiner or stray BOM inside a name was read as a
    word break (``"Ali\\u200bce"`` was ``"ali ce"``, another entity than ``"Alice"``)."""
    variants = ["Alice", "Ali\u200bce", "Ali\u200cce", "Ali\u200dce", "Ali\u00adce", "Ali\u2060ce"]
    variants += ["\ufeffAlice", "\u200eAlice", "Ａｌｉｃｅ", "ALICE"]
    assert [normalize_name(v) for v in variants] == ["alice"] * len(variants)
    assert [normalize_name(v) for v in ["Café", "Cafe\u0301", "Cafe", "Ali ce"]] == ["cafe"] * 3 + ["ali ce"]


def test_a_vowel_sign_is_part_of_its_word_not_a_word_break() -> None:
    """Indic, Thai and other scripts write vowels as marks that ``\\w`` lacks: they were read as word
    breaks, so "राम" (Ram) and "रोम" (Rome) were both ``"र म"``, one node, and a name's words were letters."""
    assert [normalize_name(n) for n in ["राम", "रोम", "ภาษาไทย", "Café"]] == ["राम", "रोम", "ภาษาไทย", "cafe"]
    assert name_words("राम चरण") == {"राम", "चरण"}


def test_invisible_characters_route_to_one_entity_named_as_it_shows(tmp_path: Path) -> None:
    """One entity, not two; named by its plain spelling (a tie went to the longest name: the one with an
    invisible character, or the decomposed ``"Cafe\u0301"`` over ``"Café"``)."""
    source = tmp_path / "people"
    source.mkdir()
    mapping = tmp_path / "m.yaml"
    mapping.write_text("name: name\nrelations: [{column: friend, type: knows}]\n", encoding="utf-8")
    rows = "name,friend\nAnn,Ali\u200bce\nBo,Alice\nCy,Ali\u00adce\nDi,Cafe\u0301\nEd,Caf\u00e9\n"
    (source / "p.csv").write_text(rows, encoding="utf-8")
    store = tmp_path / "g.sqlite"
    code, out = invoke(str(source), "--graph", str(store), "--mapping", str(mapping), "--routing", "exact")
    assert code == 0, out
    assert sorted({target for _, _, target in graph_triples(store)}) == ["Alice", "Caf\u00e9"]


async def test_a_path_holding_a_control_character_is_a_skip_that_keeps_its_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newline, a C0/C1 control character or a U+2028 in a file's (or a folder's) name went into its
    document ids, breaking every listing and ledger key. It is a skip naming the path with the character
    escaped, as a bad ``key`` is, and keeps what earlier runs read from the file."""
    source = tmp_path / "people"
    (source / "d\u2028e").mkdir(parents=True)
    (source / "ok.csv").write_text("name\nAnn\n", encoding="utf-8")
    (source / "a\nb.csv").write_text("name\nBo\n", encoding="utf-8")
    (source / "d\u2028e" / "c.csv").write_text("name\nCy\n", encoding="utf-8")
    store, mappings = MemoryGraphStore(), load_mappings({"name": "name"})
    with monkeypatch.context() as patched:  # as before the rule: such ids were ingested
        patched.setattr(files_module, "control_character", lambda text: None)
        first = await ingest(FileSource(source, mappings=mappings), store, routing="exact")
    assert first.new == 3
    report = await ingest(FileSource(source, mappings=mappings), store, routing="exact")
    assert [(s.describe(), s.path) for s in report.skipped] == [
        (
            "a\\nb.csv: its path holds a control character (U+000A), so it cannot be a document id: "
            "rename it",
            "a\nb.csv",
        ),
        (
            "d\\u2028e/c.csv: its path holds a line break (U+2028), so it cannot be a document id: rename it",
            "d\u2028e/c.csv",
        ),
    ]
    assert (report.new, report.unchanged, report.deleted, report.kept) == (0, 1, 0, 2)
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Ann", "Bo", "Cy"]


def test_a_control_character_in_a_file_name_is_shown_escaped_on_one_line(tmp_path: Path) -> None:
    source = tmp_path / "notes"
    source.mkdir()
    for name in ("ok.txt", "t\x01.txt", "u\x85.md", "v\t.txt"):
        (source / name).write_text("Ada Lovelace met Charles Babbage.\n", encoding="utf-8")
    code, out = invoke(str(source), "--graph", str(tmp_path / "g.sqlite"), "--routing", "exact")
    assert code == 0, out
    why = "so it cannot be a document id: rename it"
    assert [line for line in out.splitlines() if line.startswith("skipped")] == [
        f"skipped t\\x01.txt: its path holds a control character (U+0001), {why}",
        f"skipped u\\x85.md: its path holds a control character (U+0085), {why}",
        f"skipped v\\t.txt: its path holds a control character (U+0009), {why}",
    ]
    assert "new 1, changed 0" in out


async def test_a_sql_primary_key_follows_the_rule_of_a_mapping_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A primary key holding a control character or line break, or over 1024 bytes, made a document id of
    it (``films#a\\nb``). Such a row is a skip naming it, escaped, whose id keeps what earlier runs read
    from it; a table whose name holds one is a skip of the table."""
    db = tmp_path / "films.sqlite"
    long = "x" * 1100
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE films (id TEXT PRIMARY KEY, title TEXT)")
        rows = [("1", "Heat"), ("a\nb", "Ronin"), ("c\x01", "Up"), ("u\u2028", "Cars"), (long, "Long")]
        conn.executemany("INSERT INTO films VALUES (?, ?)", rows)
        conn.execute('CREATE TABLE "t\nv" (id INTEGER PRIMARY KEY, title TEXT)')
        conn.execute("INSERT INTO \"t\nv\" VALUES (1, 'Alf')")
    store = MemoryGraphStore()
    with monkeypatch.context() as patched:  # as before the rule: such ids were ingested
        patched.setattr(sql_module, "control_character", lambda text: None)
        patched.setattr(sql_module, "oversize", lambda key: None)
        first = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    assert first.new == 6
    report = await ingest(SQLSource(f"sqlite:///{db}", source_id="db"), store, routing="exact")
    no_id = "so it cannot be a document id"
    assert [(s.describe(), s.document_id) for s in report.skipped] == [
        (f"films: row a\\nb: its primary key holds a control character (U+000A), {no_id}", "films#a\nb"),
        (f"films: row c\\x01: its primary key holds a control character (U+0001), {no_id}", "films#c\x01"),
        (f"films: row u\\u2028: its primary key holds a line break (U+2028), {no_id}", "films#u\u2028"),
        (
            f"films: row {'x' * 40}…: its primary key is 1100 bytes long, over the limit of 1024 (a key is "
            "an id, not a text)",
            f"films#{long}",
        ),
        (
            "t\\nv: its name holds a control character (U+000A), so its rows cannot have document ids: "
            "rename it",
            None,
        ),
    ]
    assert (report.new, report.unchanged, report.deleted, report.kept) == (0, 1, 0, 5)
    assert sorted([n.name async for n in store.iter_nodes()]) == [
        "Alf",
        "Cars",
        "Heat",
        "Long",
        "Ronin",
        "Up",
    ]


async def test_a_utf16_or_utf32_file_is_named_as_such_and_keeps_its_documents(tmp_path: Path) -> None:
    """A UTF-16 file (with its byte-order mark) was "binary file (NUL byte at offset 1)"; it is a skip
    saying what it is and what to do, and keeps what the file gave earlier runs. A mark followed by what
    the encoding cannot read is just bytes that are not UTF-8."""
    source = tmp_path / "people"
    source.mkdir()
    rows = source / "p.csv"
    rows.write_text("name\nAnn\n", encoding="utf-8")
    (source / "q.jsonl").write_bytes('{"name": "Bo"}\n'.encode("utf-32"))
    (source / "r.csv").write_bytes(b"\xfe\xff" + "name\nCy\n".encode("utf-16-be"))
    (source / "s.jsonl").write_bytes(b"\x00\x00\xfe\xff" + '{"name": "Di"}\n'.encode("utf-32-be"))
    (source / "t.csv").write_bytes(b"\xff\xfeodd")  # no UTF-16 text after its mark: 3 bytes
    store, mappings = MemoryGraphStore(), load_mappings({"name": "name"})
    assert (await ingest(FileSource(source, mappings=mappings), store, routing="exact")).new == 1
    rows.write_bytes("name\nAnn\n".encode("utf-16"))
    report = await ingest(FileSource(source, mappings=mappings), store, routing="exact")
    assert [s.describe() for s in report.skipped] == [
        "p.csv: UTF-16 text: save it as UTF-8",
        "q.jsonl: UTF-32 text: save it as UTF-8",
        "r.csv: UTF-16 text: save it as UTF-8",
        "s.jsonl: UTF-32 text: save it as UTF-8",
        "t.csv:1: not UTF-8: invalid byte 0xff at offset 0",
    ]
    assert (report.new, report.deleted, report.kept) == (0, 0, 1)
    assert [n.name async for n in store.iter_nodes()] == ["Ann"]


async def test_mapping_columns_match_record_columns_in_any_unicode_form(tmp_path: Path) -> None:
    """A mapping saved in NFD matched no column of an NFC header (every record was skipped: "the name
    column is missing or empty"), and an NFD header's column lost its accents in its attribute name
    (``Anne\u0301e`` was ``anne_e``). Columns match, and name attributes, in NFC."""
    (tmp_path / "f.csv").write_text(
        "Intitulé,Clé,Année,Réalisateur\nHeat,k1,1995,Michael Mann\n", encoding="utf-8"
    )
    (tmp_path / "g.csv").write_text("Intitule\u0301,Anne\u0301e\nUp,2009\n", encoding="utf-8")
    nfd = {
        "name": "Intitule\u0301",
        "key": "Cle\u0301",
        "attributes": ["Anne\u0301e"],
        "relations": [{"column": "Re\u0301alisateur", "type": "directed_by"}],
    }
    mappings = load_mappings({"f.csv": nfd, "g.csv": {"name": "Intitulé"}})
    source = FileSource(tmp_path, mappings=mappings)
    docs = [d async for d in source.documents()]
    assert source.skipped == []
    assert [d.id for d in docs] == ["f.csv#k1", "g.csv#0"]
    extractions = [d.extraction for d in docs if d.extraction is not None]
    assert [[(e.name, e.attributes) for e in x.entities] for x in extractions] == [
        [("Heat", {"année": 1995}), ("Michael Mann", {})],
        [("Up", {"année": 2009})],
    ]
    assert [(r.source, r.type, r.target) for r in extractions[0].relations] == [
        ("Heat", "directed_by", "Michael Mann")
    ]


async def test_one_column_name_in_two_unicode_forms_is_one_attribute_named_not_overwritten(
    tmp_path: Path,
) -> None:
    (tmp_path / "f.csv").write_text("name,Année,Anne\u0301e\nHeat,1995,1996\n", encoding="utf-8")
    source = FileSource(tmp_path, mappings=load_mappings({"name": "name"}))
    assert [d.id async for d in source.documents()] == []
    assert [s.describe() for s in source.skipped] == [
        "f.csv:2: columns 'Année' and 'Anne\u0301e' (one name in two Unicode forms: 'Ann\\xe9e' and "
        "'Anne\\u0301e') are both the attribute 'année' (one would overwrite the other); rename one, or "
        "list the attributes to keep in the mapping"
    ]


async def test_a_sql_mapping_names_a_column_in_any_unicode_form(tmp_path: Path) -> None:
    """The mapping's name column in NFC, the table's in NFD: it names the row (it went to the first text
    column, and the name column became an attribute)."""
    db = tmp_path / "films.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE films (id INTEGER PRIMARY KEY, code TEXT, "Intitule\u0301" TEXT)')
        conn.execute("INSERT INTO films VALUES (1, 'F1', 'Heat')")
    source = SQLSource(
        f"sqlite:///{db}", source_id="films", mappings=load_mappings({"films": {"name": "Intitulé"}})
    )
    docs = [d async for d in source.documents()]
    assert source.skipped == []
    assert [(e.name, e.attributes) for d in docs if d.extraction for e in d.extraction.entities] == [
        ("Heat", {"code": "F1"})
    ]
