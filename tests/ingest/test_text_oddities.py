"""Text and Unicode oddities in source files: lone surrogates, file names that are not UTF-8 or hold a
control character, invisible characters in names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphwalk_core.ingest.sources import FileSource, load_mappings
from graphwalk_core.ingest.sources.fingerprints import source_fingerprint
from graphwalk_core.ingest.sources.specs import SourceSpec
from graphwalk_core.ingest.text import normalize_name
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
