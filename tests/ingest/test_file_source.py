"""FileSource: ids, profile, record mapping and bad input recorded as skips naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources import FileSource, load_mappings, load_sources
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import ScriptedExtractor, graph_tables

REPO = Path(__file__).resolve().parents[2]


def write_corpus(root: Path) -> None:
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# Alpha\n\nAlpha met Beta.\n", encoding="utf-8")
    (root / "b.txt").write_text("\ufeffBeta lives in Paris.\n", encoding="utf-8")
    (root / "films.csv").write_text(
        "title,year,director\nInception,2010,Christopher Nolan\nBroken,2011\nDune,2021,Denis Villeneuve\n",
        encoding="utf-8",
    )
    (root / "people.jsonl").write_text('{"name": "Ann"}\n{"name": oops}\n\n[1, 2]\n{"name": "Bob"}\n')
    (root / "bad.json").write_text('{\n  "a": 1,\n  "b": \n}\n', encoding="utf-8")
    (root / "latin1.txt").write_bytes("line one\ncaf\xe9\n".encode("latin-1"))
    (root / "blob.txt").write_bytes(b"abc\x00def")
    (root / "big.md").write_text("x" * 600, encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG")
    (root / ".hidden.txt").write_text("ignored", encoding="utf-8")


async def test_documents_ids_and_skips(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    source = FileSource(tmp_path, source_id="corpus", max_bytes=500)
    docs = [d async for d in source.documents()]
    assert [d.id for d in docs] == [
        "b.txt",
        "films.csv#0",
        "films.csv#2",
        "notes/a.md",
        "people.jsonl#0",
        "people.jsonl#3",
    ]
    by_id = {d.id: d for d in docs}
    assert by_id["b.txt"].text == "Beta lives in Paris.\n"  # BOM stripped
    assert by_id["films.csv#2"].records == [{"title": "Dune", "year": 2021, "director": "Denis Villeneuve"}]
    assert by_id["films.csv#2"].text == "title: Dune\nyear: 2021\ndirector: Denis Villeneuve"
    assert by_id["notes/a.md"].metadata == {"path": "notes/a.md", "type": "md", "title": "Alpha"}
    assert [s.describe() for s in source.skipped] == [
        "bad.json:4: invalid JSON: Expecting value at column 1",
        "big.md: file is 600 bytes, over the limit of 500",
        "blob.txt:1: binary file (NUL byte at offset 3)",
        "films.csv:3: malformed CSV row: 2 fields, the header has 3",
        "image.png: unsupported file type .png",
        "latin1.txt:2: not UTF-8: invalid byte 0xe9 at offset 12",
        "people.jsonl:2: invalid JSON: Expecting value at column 10",
        "people.jsonl:4: a record must be a JSON object, got list",
    ]
    assert [s.document_id for s in source.skipped if s.document_id] == [
        "films.csv#1",
        "people.jsonl#1",
        "people.jsonl#2",
    ]


async def test_profile(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    profile = await FileSource(tmp_path, source_id="corpus", max_bytes=500).profile()
    assert profile.documents == 6
    assert profile.files_by_type == {"csv": 1, "json": 1, "jsonl": 1, "md": 1, "txt": 1}
    assert profile.encodings == {"utf-8": 4, "utf-8-sig": 1}
    assert profile.rows == 4
    assert [(t.name, t.rows, [c.name for c in t.columns]) for t in profile.tables] == [
        ("bad.json", 0, []),
        ("films.csv", 2, ["title", "year", "director"]),
        ("people.jsonl", 2, ["name"]),
    ]
    assert len(profile.skipped) == 8
    assert profile.bytes == sum(
        (tmp_path / p).stat().st_size
        for p in ("b.txt", "films.csv", "notes/a.md", "people.jsonl", "bad.json")
    )


async def test_mapping_turns_records_into_entities() -> None:
    mappings = load_mappings(REPO / "data" / "films_mapping.yaml")
    source = FileSource(REPO / "data" / "films", mappings=mappings)
    docs = {d.id: d async for d in source.documents()}
    film = docs["films.csv#3"]
    assert film.extraction is not None
    assert film.extractor == mappings["films.csv"].version
    assert [(e.name, e.type, e.attributes) for e in film.extraction.entities] == [
        ("Dunkirk", "film", {"year": 2017, "genre": "war"}),
        ("Christopher Nolan", "person", {}),
        ("Fionn Whitehead", "person", {}),
        ("Tom Hardy", "person", {}),
    ]
    assert [(r.source, r.type, r.target) for r in film.extraction.relations] == [
        ("Dunkirk", "directed_by", "Christopher Nolan"),
        ("Dunkirk", "starred_actors", "Fionn Whitehead"),
        ("Dunkirk", "starred_actors", "Tom Hardy"),
    ]
    assert docs["nolan.md"].extraction is None


async def test_mapping_errors_name_the_record(tmp_path: Path) -> None:
    (tmp_path / "films.csv").write_text("title,year\nInception,2010\n,2011\n", encoding="utf-8")
    source = FileSource(tmp_path, mappings=load_mappings({"name": "title", "type": "film"}))
    docs = [d.id async for d in source.documents()]
    assert docs == ["films.csv#0"]
    assert [s.describe() for s in source.skipped] == [
        "films.csv:3: the name column 'title' is missing or empty"
    ]


async def test_a_name_without_a_letter_or_digit_names_no_entity(tmp_path: Path) -> None:
    """A placeholder ("-", "?") normalizes to no name at all, so every one of them was one node: the films
    of an unknown director were all directed by one "-" node, which took every "?" record's attributes.
    A record so named is a skip naming its line (as an empty name is); a relation cell so filled names no
    target (as an empty cell does), as text extraction drops such names."""
    (tmp_path / "films.csv").write_text(
        "title,year,director\nUp,2009,-\n?,2010,Ann Lee\nCars,2006,Ann Lee|?\n", encoding="utf-8"
    )
    spec = {
        "name": "title",
        "type": "film",
        "relations": [{"column": "director", "type": "by", "split": "|"}],
    }
    source = FileSource(tmp_path, mappings=load_mappings(spec))
    docs = [d async for d in source.documents()]
    assert [(d.id, d.extraction.model_dump() if d.extraction else None) for d in docs] == [
        ("films.csv#0", {"entities": [film("Up", 2009)], "relations": []}),
        (
            "films.csv#2",
            {
                "entities": [film("Cars", 2006), entity("Ann Lee")],
                "relations": [{"source": "Cars", "type": "by", "target": "Ann Lee", "attributes": {}}],
            },
        ),
    ]
    assert [s.describe() for s in source.skipped] == [
        "films.csv:3: the name column 'title' holds no letter or digit: '?'"
    ]


async def test_mapped_types_are_written_as_extraction_writes_types(tmp_path: Path) -> None:
    """A mapping's types were kept as written, while text extraction snake_cases its own: a ``Person``
    record beside a text's ``person`` was a type conflict on the node, a ``Knows`` column beside a text's
    ``knows`` a second edge. A mapping already in snake_case keeps its version (nothing re-processed)."""
    (tmp_path / "people.csv").write_text("name,knows\nAlice,Bob\n", encoding="utf-8")
    (tmp_path / "t.txt").write_text("E Alice|person\nE Bob|person\nR Alice|knows|Bob\n", encoding="utf-8")
    knows = {"column": "knows", "type": "Knows", "target_type": "Person"}
    mappings = load_mappings({"people.csv": {"name": "name", "type": "Person", "relations": [knows]}})
    spec = {
        "name": "name",
        "type": "person",
        "relations": [{**knows, "type": "knows", "target_type": "person"}],
    }
    assert mappings["people.csv"].version == load_mappings(spec)["*"].version
    store = MemoryGraphStore()
    await ingest(
        FileSource(tmp_path, source_id="s", mappings=mappings),
        store,
        extractor=ScriptedExtractor(),
        routing="exact",
    )
    tables = await graph_tables(store)
    assert [(n["name"], n["type"], n["conflicts"]) for n in tables["nodes"]] == [
        ("Alice", "person", {}),
        ("Bob", "person", {}),
    ]
    assert [e["type"] for e in tables["edges"]] == ["knows"]
    with pytest.raises(InputError, match=r"invalid mapping for '\*': type: '\?' has no letter or digit \("):
        load_mappings({"name": "name", "type": "?"})


async def test_a_blank_description_cell_is_no_summary(tmp_path: Path) -> None:
    """A blank cell of the description column gave the node an empty summary backed by the record, so two
    files' blank cells outvoted the summary a text gives (the node's summary was ``""``)."""
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("name,plot\nUp,\n", encoding="utf-8")
    (tmp_path / "t.txt").write_text("E Up|film||A film about balloons\n", encoding="utf-8")
    mappings = load_mappings({"name": "name", "type": "film", "description": "plot"})
    store = MemoryGraphStore()
    source = FileSource(tmp_path, source_id="s", mappings=mappings)
    await ingest(source, store, extractor=ScriptedExtractor(), routing="exact")
    (node,) = (await graph_tables(store))["nodes"]
    assert (node["summary"], list(node["summary_sources"])) == (
        "A film about balloons",
        ["A film about balloons"],
    )


async def test_a_json_list_in_a_relation_column_names_a_target_per_item(tmp_path: Path) -> None:
    """A JSON record's list of names in a relation column named one target by the list's Python text
    (``['Ann Lee', 'Bob Ray']``), and a list or object in the name or description column named the entity
    or described it so. A relation list names a target per item (each split when the relation splits);
    any other list or object where one value is read is a skip naming the line and the column."""
    (tmp_path / "films.jsonl").write_text(
        '{"title": "Up", "cast": ["Ann Lee", "Bob Ray|Cy Dee"]}\n'
        '{"title": ["Cars", "Cars 2"]}\n'
        '{"title": "Jaws", "plot": {"en": "A shark"}}\n'
        '{"title": "Big", "cast": [["Ann Lee"]]}\n',
        encoding="utf-8",
    )
    cast = {"column": "cast", "type": "starred", "split": "|"}
    mappings = load_mappings({"name": "title", "description": "plot", "relations": [cast]})
    source = FileSource(tmp_path, mappings=mappings)
    docs = [d async for d in source.documents()]
    assert [(d.id, [r.target for r in d.extraction.relations]) for d in docs if d.extraction] == [
        ("films.jsonl#0", ["Ann Lee", "Bob Ray", "Cy Dee"])
    ]
    assert [s.describe() for s in source.skipped] == [
        """films.jsonl:2: the name column 'title' holds a list, not a single value: ["Cars","Cars 2"]""",
        "films.jsonl:3: the description column 'plot' holds an object, not a single value: "
        '{"en":"A shark"}',
        """films.jsonl:4: the relation column 'cast' holds a list, not a single value: ["Ann Lee"]""",
    ]


def film(name: str, year: int) -> dict[str, Any]:
    return {"name": name, "type": "film", "description": None, "attributes": {"year": year}, "node_id": None}


def entity(name: str) -> dict[str, Any]:
    return {"name": name, "type": "entity", "description": None, "attributes": {}, "node_id": None}


async def test_mapped_columns_no_record_of_a_file_has_are_named(tmp_path: Path) -> None:
    """A misspelled relation, attribute or description column (or one renamed in the file's header) made
    no edge, attribute or summary without a word, so a header renamed from ``director`` to ``Director``
    retracted every edge it gave. Now it is named, once per file, as a note that keeps nothing (the
    records are read as before); a column some record has is no note (JSON fields are optional)."""
    (tmp_path / "films.csv").write_text("title,Director,year\nUp,Pete Docter,2009\n", encoding="utf-8")
    (tmp_path / "more.jsonl").write_text(
        '{"title": "Jaws", "year": 1975}\n'
        '{"title": "Big", "director": "Penny Marshall", "plot": "Grows up"}\n',
        encoding="utf-8",
    )
    by = {"column": "director", "type": "directed_by"}
    spec = {"name": "title", "description": "plot", "attributes": ["year", "rating"], "relations": [by]}
    source = FileSource(tmp_path, mappings=load_mappings({"*.csv": spec, "more.jsonl": spec}))
    assert [d.id async for d in source.documents()] == ["films.csv#0", "more.jsonl#0", "more.jsonl#1"]
    assert [(s.describe(), s.kind) for s in source.skipped] == [
        (
            "mapping key '*.csv': columns 'plot' (the description), 'rating' (an attribute), 'director' (the "
            "relation 'directed_by') are in no record of films.csv, so they give nothing (misspelled, or "
            "renamed in the file?)",
            "mapping",
        ),
        (
            "mapping key 'more.jsonl': column 'rating' (an attribute) is in no record of more.jsonl, so it "
            "gives nothing (misspelled, or renamed in the file?)",
            "mapping",
        ),
    ]


async def test_mapping_keys_that_match_no_record_file_are_named(tmp_path: Path) -> None:
    """A key naming a file in a subfolder by its bare name, or misspelled, is reported, not ignored."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "films.csv").write_text("title\nDune\n", encoding="utf-8")
    (tmp_path / "people.jsonl").write_text('{"title": "Ann"}\n', encoding="utf-8")
    (tmp_path / "films.txt").write_text("Dune is a film.\n", encoding="utf-8")
    spec = {"name": "title"}
    keys = ["films.csv", "people.jsnol", "sub/films.csv", "*.jsonl", "*.txt"]
    source = FileSource(tmp_path, mappings=load_mappings(dict.fromkeys(keys, spec)))
    assert [d.id async for d in source.documents()] == ["films.txt", "people.jsonl#0", "sub/films.csv#0"]
    unmatched = [
        "mapping key 'films.csv': matches no file of the source (keys are paths relative to the source"
        " folder, or globs)",
        "mapping key 'people.jsnol': matches no file of the source (keys are paths relative to the source"
        " folder, or globs)",
        "mapping key '*.txt': matches no file of the source (keys are paths relative to the source"
        " folder, or globs)",
    ]
    assert [s.describe() for s in source.skipped] == unmatched
    assert [s.describe() for s in (await source.profile()).skipped] == unmatched


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        FileSource(tmp_path / "missing")
    with pytest.raises(InputError, match="invalid source id 'a/b'"):
        FileSource(tmp_path, source_id="a/b")
    with pytest.raises(InputError, match=r"invalid mapping for 'x\.csv'"):
        load_mappings({"x.csv": {"type": "film"}})
    (tmp_path / "m.yaml").write_text("name: [unclosed", encoding="utf-8")
    with pytest.raises(InputError, match="is not valid YAML"):
        load_mappings(tmp_path / "m.yaml")


def test_an_invalid_mapping_names_each_field_and_what_a_mapping_takes(tmp_path: Path) -> None:
    """A misspelled field is named in one line with the fields a mapping takes, not pydantic's report."""
    (tmp_path / "m.yaml").write_text(
        "films.csv:\n  kee: id\n  name: title\n  relations:\n    - {colum: director, type: x}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load_mappings(tmp_path / "m.yaml")
    assert str(caught.value) == (
        f"{tmp_path / 'm.yaml'}: invalid mapping for 'films.csv': relations.0.column: missing; "
        "relations.0.colum: unknown field; kee: unknown field (a mapping takes name, type, key, description, "
        "attributes, relations; a relation takes column, type, target_type, split; docs/mappings.md)"
    )


def test_a_yaml_key_written_twice_is_named_not_dropped(tmp_path: Path) -> None:
    """YAML keeps the last of two values for one key without a word: a ``relations:`` written twice lost
    its first list (every edge it made retracted), a file key twice its first mapping, a source entry's
    field twice its first value. Each is an error naming the file, both lines and the key; a merge key
    (``<<``) still overrides as YAML says."""
    (tmp_path / "m.yaml").write_text(
        "films.csv:\n  name: title\n  relations:\n    - {column: director, type: directed_by}\n"
        "  relations:\n    - {column: stars, type: starred}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load_mappings(tmp_path / "m.yaml")
    assert str(caught.value) == (
        f"mapping file {tmp_path / 'm.yaml'}:5: the key 'relations' repeats the one on line 3 (YAML would "
        "keep the last and drop the other without a word)"
    )
    (tmp_path / "sources.yaml").write_text(
        "- id: films\n  kind: files\n  path_or_url: films\n  path_or_url: other\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"sources\.yaml:4: the key 'path_or_url' repeats the one on line 3"):
        load_sources(tmp_path / "sources.yaml")
    (tmp_path / "merged.yaml").write_text(
        "a.csv: &base\n  name: title\n  type: film\nb.csv:\n  <<: *base\n  name: name\n", encoding="utf-8"
    )
    assert {k: (m.name, m.type) for k, m in load_mappings(tmp_path / "merged.yaml").items()} == {
        "a.csv": ("title", "film"),
        "b.csv": ("name", "film"),
    }


async def test_documents_stream_file_by_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The source hands over each file's documents as it reads the file, never holding the corpus."""
    for name in ("a.txt", "b.csv", "c.txt"):
        (tmp_path / name).write_text("x,y\n1,2\n3,4\n" if name.endswith(".csv") else f"text of {name}\n")
    read: list[str] = []
    from graphwalk_core.ingest.sources import files

    read_regular = files.read_regular
    monkeypatch.setattr(
        files, "read_regular", lambda path, limit=None: read.append(path.name) or read_regular(path, limit)
    )
    documents = FileSource(tmp_path).documents()
    assert (await anext(documents)).id == "a.txt" and read == ["a.txt"]
    assert (await anext(documents)).id == "b.csv#0" and read == ["a.txt", "b.csv"]
    assert [d.id async for d in documents] == ["b.csv#1", "c.txt"] and read == ["a.txt", "b.csv", "c.txt"]


async def test_two_columns_that_become_one_attribute_name_are_named_not_overwritten(tmp_path: Path) -> None:
    """'Year' and 'year' are both the attribute 'year': one would overwrite the other's value without a
    word, so such a record is a skip naming both columns (its documents kept), whatever its values."""
    (tmp_path / "films.csv").write_text(
        "title,Year,year,genre\nInception,2010,2011,sci-fi\nDunkirk,,2017,war\n", encoding="utf-8"
    )
    source = FileSource(tmp_path, mappings=load_mappings({"name": "title", "type": "film"}))
    assert [d.id async for d in source.documents()] == []
    assert [s.describe() for s in source.skipped] == [
        f"films.csv:{line}: columns 'Year' and 'year' are both the attribute 'year' (one would overwrite "
        "the other); rename one, or list the attributes to keep in the mapping"
        for line in (2, 3)
    ]
    listed = load_mappings({"name": "title", "type": "film", "attributes": ["year", "genre"]})
    docs = [d async for d in FileSource(tmp_path, mappings=listed).documents()]
    assert [d.extraction.entities[0].attributes for d in docs if d.extraction] == [
        {"year": 2011, "genre": "sci-fi"},
        {"year": 2017, "genre": "war"},
    ]


async def test_a_record_holding_a_nul_character_is_named_and_skipped(tmp_path: Path) -> None:
    """A JSON escape can put a NUL in a record (a file holding the byte is binary): PostgreSQL keeps no
    NUL in text, so the record would fail its whole window there. It is a skip naming file, line and
    field, with or without a mapping; the other records go on."""
    (tmp_path / "films.jsonl").write_text(
        '{"title": "Heat"}\n'
        '{"title": "Nul\\u0000Film", "year": 1995}\n'
        '{"title": "Ronin", "tags": ["a\\u0000"]}\n',
        encoding="utf-8",
    )
    expected = [
        "films.jsonl:2: field 'title' holds a NUL character (U+0000), which no graph store keeps",
        "films.jsonl:3: field 'tags' holds a NUL character (U+0000), which no graph store keeps",
    ]
    for mappings in (None, load_mappings({"name": "title", "type": "film"})):
        source = FileSource(tmp_path, mappings=mappings)
        assert [d.id async for d in source.documents()] == ["films.jsonl#0"]
        assert [s.describe() for s in source.skipped] == expected


async def test_records_are_searched_for_nul_only_when_the_text_spells_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file holding a NUL byte is binary, so a NUL in a record can only come from a JSON ``\\u0000``
    escape: walking every value of every record for one cost a fifth of the time to read a big JSON
    Lines file. Only a JSON file whose text holds the escape has its records searched."""
    from graphwalk_core.ingest.sources import files

    searched: list[dict[str, object]] = []
    unstorable_field = files.unstorable_field

    def counted(record: dict[str, object]) -> tuple[str, str] | None:
        searched.append(record)
        return unstorable_field(record)

    monkeypatch.setattr(files, "unstorable_field", counted)
    (tmp_path / "a.csv").write_text("title\nHeat\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text('{"title": "Ronin"}\n', encoding="utf-8")
    (tmp_path / "c.json").write_text('[{"title": "Nul\\u0000Film"}, {"title": "Tron"}]', encoding="utf-8")
    source = FileSource(tmp_path)
    assert [d.id async for d in source.documents()] == ["a.csv#0", "b.jsonl#0", "c.json#1"]
    assert [s.describe() for s in source.skipped] == [
        "c.json:1: field 'title' holds a NUL character (U+0000), which no graph store keeps"
    ]
    assert searched == [{"title": "Nul\x00Film"}, {"title": "Tron"}]


async def test_a_csv_field_longer_than_the_csv_modules_limit_is_read(tmp_path: Path) -> None:
    """The csv module refuses a field over 131,072 characters by default: a valid file with one long
    quoted field (within the file size limit) was a malformed record, and the lines inside its quotes
    were read as records of their own (``x,y`` inside the field became a document)."""
    long = "x,y\n" * 40_000
    (tmp_path / "a.csv").write_text(f'name,bio\nCarol,"{long}"\nDan,short\n', encoding="utf-8")
    source = FileSource(tmp_path, source_id="s")
    docs = [d async for d in source.documents()]
    assert [(d.id, d.records[0]["name"], len(str(d.records[0]["bio"]))) for d in docs] == [
        ("a.csv#0", "Carol", len(long.strip())),
        ("a.csv#1", "Dan", 5),
    ]
    assert source.skipped == []
