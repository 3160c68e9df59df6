"""Chunking offsets, the offline NLP extractor and extraction cleanup."""

from __future__ import annotations

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.chunking import chunk_text, paragraph_spans
from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation, Extraction
from graphwalk_core.ingest.extraction.cleanup import clean_extraction
from graphwalk_core.ingest.extraction.nlp import NLPExtractor, extract_nlp, sentences
from graphwalk_core.ingest.text import normalize_name


def test_chunks_pack_whole_paragraphs_with_offsets() -> None:
    text = "First para one.\n\nSecond para, a bit longer.\n\n\nThird.\n" + "\n\n" + "Y" * 70
    chunks = chunk_text("d", text, max_chars=50)
    assert [(c.start, c.end) for c in chunks] == [(0, 43), (46, 52), (55, 105), (105, 125)]
    assert all(text[c.start : c.end] == c.text for c in chunks)
    assert chunks[0].text == "First para one.\n\nSecond para, a bit longer."
    assert [c.id for c in chunks] == ["d@0", "d@1", "d@2", "d@3"]


def test_long_paragraph_splits_at_sentences() -> None:
    text = "Aaaa aaaa aaaa. " * 10  # 160 chars, one paragraph
    chunks = chunk_text("d", text.strip(), max_chars=64)
    assert [(c.start, c.end) for c in chunks] == [(0, 63), (64, 127), (128, 159)]
    assert chunk_text("d", "") == []
    with pytest.raises(InputError, match="chunk size must be >= 50"):
        chunk_text("d", "x", max_chars=10)


def test_sentences_keep_abbreviations_and_initials() -> None:
    assert sentences("Mr. Smith met J. R. R. Tolkien. Warner Bros. Pictures paid. Done") == [
        "Mr. Smith met J. R. R. Tolkien.",
        "Warner Bros. Pictures paid.",
        "Done",
    ]


def test_nlp_extraction() -> None:
    text = (
        'Christopher Nolan directed "Inception" in 2010. The film starred Tom Hardy and Elliot Page.\n'
        "Nolan was born in London."
    )
    extraction = extract_nlp(text)
    assert [(e.name, e.type) for e in extraction.entities] == [
        ("Inception", "work"),
        ("Christopher Nolan", "entity"),
        ("2010", "year"),
        ("Tom Hardy", "entity"),
        ("Elliot Page", "entity"),
        ("Nolan", "entity"),
        ("London", "entity"),
    ]
    assert extraction.entities[1].description == 'Christopher Nolan directed "Inception" in 2010.'
    assert [(r.source, r.target) for r in extraction.relations] == [
        ("Inception", "Christopher Nolan"),
        ("Inception", "2010"),
        ("Christopher Nolan", "2010"),
        ("Tom Hardy", "Elliot Page"),
        ("Nolan", "London"),
    ]
    assert {r.type for r in extraction.relations} == {"co_occurs_with"}


async def test_nlp_extractor_protocol() -> None:
    extractor = NLPExtractor()
    result = await extractor.extract("Ada Lovelace met Charles Babbage.")
    assert (extractor.version, extractor.cacheable, result.calls) == ("nlp:2", False, 0)
    assert [e.name for e in result.extraction.entities] == ["Ada Lovelace", "Charles Babbage"]


def test_cleanup() -> None:
    raw = Extraction(
        entities=[
            ExtractedEntity(name="Nolan", type="Film Director", attributes={"born": 1970}),
            ExtractedEntity(
                name="nolan ", type="entity", description="A director.", attributes={"born": 1971}
            ),
            ExtractedEntity(name="Inception", type="filmWork"),
            ExtractedEntity(name="Memento", type="film " * 103),  # 514 bytes in snake_case
        ],
        relations=[
            ExtractedRelation(source="Inception", type="Directed By", target="NOLAN"),
            ExtractedRelation(source="inception", type="directed_by", target="Nolan"),
            ExtractedRelation(source="Nolan", type="self", target="nolan"),
            ExtractedRelation(source="Inception", type="scored by", target="Hans Zimmer"),
            ExtractedRelation(source="Memento", type="é" * 257, target="Nolan"),
            ExtractedRelation(source="Memento", type="é" * 256, target="Nolan"),
        ],
    )
    clean = clean_extraction(raw)
    assert [(e.name, e.type, e.description, e.attributes) for e in clean.entities] == [
        ("Nolan", "film_director", "A director.", {"born": 1970}),
        ("Inception", "film_work", None, {}),
        ("Memento", "entity", None, {}),
        ("Hans Zimmer", "entity", None, {}),
    ]
    assert [(r.source, r.type, r.target) for r in clean.relations] == [
        ("Inception", "directed_by", "Nolan"),
        ("Inception", "scored_by", "Hans Zimmer"),
        ("Memento", "é" * 256, "Nolan"),
    ]


def test_crlf_and_trailing_spaces_end_paragraphs_as_a_bare_blank_line_does() -> None:
    """A blank line after ``\\r\\n`` or after a line ending in spaces/tabs did not end a paragraph: a CRLF
    file was one paragraph, packed by sentence cuts across its paragraph breaks."""
    lf = "First para one.\n\nSecond para, a bit longer.\n\n\nThird.\n"
    for text in (lf, lf.replace("\n", "\r\n"), lf.replace("\n\n", " \t\n \n")):
        assert [text[s:e] for s, e in paragraph_spans(text)] == [
            "First para one.",
            "Second para, a bit longer.",
            "Third.",
        ]
        chunks = chunk_text("d", text, max_chars=50)
        assert [c.text.split() for c in chunks] == [lf.split()[:8], ["Third."]]
        assert all(text[c.start : c.end] == c.text for c in chunks)


def test_a_long_paragraph_without_sentence_ends_splits_between_words() -> None:
    """Without a sentence end in reach the cut fell at exactly ``max_chars``, mid-word ("Nolan" as "No" and
    "lan"); it falls at the last whitespace, and only a window without any is cut hard."""
    text = "word " * 11 + "Christopher Nolan " + "word " * 10  # "Nolan" spans offsets 67-72
    chunks = chunk_text("d", text.strip(), max_chars=70)
    assert [(c.start, c.end) for c in chunks] == [(0, 66), (67, 122)]
    assert chunks[1].text.startswith("Nolan word")
    assert [(c.start, c.end) for c in chunk_text("d", "x" * 120, max_chars=50)] == [
        (0, 50),
        (50, 100),
        (100, 120),
    ]
    spaced = "Ada" + " " * 200 + "Lovelace"
    assert [c.text for c in chunk_text("d", spaced, max_chars=50)] == ["Ada", "Lovelace"]


def test_a_trailing_plus_or_hash_keeps_names_apart() -> None:
    """ "C", "C++" and "C#" were one name ("c": ``normalize_name`` dropped the signs, the extractor stripped
    a trailing ``#``), so cleanup merged them into one entity; a sign ending a word is part of the name."""
    assert [normalize_name(n) for n in ["C++", "C#", "C", "Ｃ＋＋", "#MeToo", "a+b", "C + +"]] == [
        *("c++", "c#", "c", "c++", "metoo", "a b", "c"),
    ]
    text = (
        "Anders Hejlsberg designed C# at Microsoft. Bjarne Stroustrup wrote C++ in 1985, after C and #Simula."
    )
    assert [e.name for e in extract_nlp(text).entities] == [
        *("Anders Hejlsberg", "C#", "Microsoft", "Bjarne Stroustrup", "C++", "C", "Simula", "1985"),
    ]


def test_a_sentence_may_start_with_any_capital() -> None:
    """Only ``A-Z`` began a sentence: "Babbage. Émile Zola" was one sentence, so its names co-occurred."""
    text = (
        "Ada Lovelace met Charles Babbage. Émile Zola wrote. Über Alles. Ödön was here. Then the end. etc. ok"
    )
    assert sentences(text) == [
        *("Ada Lovelace met Charles Babbage.", "Émile Zola wrote.", "Über Alles.", "Ödön was here."),
        "Then the end. etc. ok",
    ]
    pairs = {(r.source, r.target) for r in extract_nlp(text).relations}
    assert pairs == {("Ada Lovelace", "Charles Babbage")}


def test_a_long_paragraph_is_not_cut_after_initials_or_an_abbreviation() -> None:
    """The cut fell at the last ``.`` before whitespace, so "J. R. R. Tolkien" near a chunk's end became
    "J. R. R." in one chunk and "Tolkien" in the next; initials and abbreviations end no sentence."""
    text = "Aaaa aaaa aaaa. Bbbb bbbb wrote a book on J. R. R. Tolkien. Then Dr. Who came by."
    chunks = chunk_text("d", text, max_chars=50)
    assert [c.text for c in chunks] == [
        *("Aaaa aaaa aaaa.", "Bbbb bbbb wrote a book on J. R. R. Tolkien.", "Then Dr. Who came by."),
    ]
    text = "Bbbb bbbb wrote of J. R. R. Tolkien and Dr. Who at length here."
    assert [c.text for c in chunk_text("d", text, max_chars=50)] == [text[:50], "length here."]
