"""Offline NLP extractor (no model): named spans, quoted titles and years, linked by co-occurrence.

In the spirit of GraphRAG's fast NLP extraction: an entity is a capitalized (multi)word span, a quoted
title (type ``work``) or a year (type ``year``); two entities in the same sentence are joined by a
``co_occurs_with`` relation (in reading order). Each entity's description is the first sentence naming it.
"""

from __future__ import annotations

import re
from itertools import combinations

from graphwalk_core.ingest.extraction.base import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractorResult,
)
from graphwalk_core.ingest.extraction.cleanup import clean_extraction
from graphwalk_core.ingest.text import is_abbreviation

NLP_VERSION = "nlp:2"
COOCCURRENCE = "co_occurs_with"
#: At most this many entities per sentence take part in co-occurrence pairs.
MAX_PAIRED_PER_SENTENCE = 8
#: A line break, or whitespace after ``.!?`` before a quote, bracket, digit or letter (a capital one:
#: :func:`sentences` checks, as a character class would know the ASCII capitals only).
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[\"“'‘(\[0-9]|[^\W\d_])|\n+")
_LAST_WORD = re.compile(r"(\S+)\s*$")
_TOKEN = re.compile(r"\S+")
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,80}?)[\"”]")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_CONNECTORS = frozenset({"of", "the", "de", "da", "del", "der", "van", "von", "la", "le", "du"})
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "his",
        "her",
        "its",
        "their",
        "our",
        "my",
        "your",
        "this",
        "that",
        "these",
        "those",
        "both",
        "in",
        "on",
        "at",
        "after",
        "before",
        "when",
        "while",
        "it",
        "he",
        "she",
        "they",
        "we",
        "i",
        "you",
        "but",
        "and",
        "or",
        "as",
        "by",
        "for",
        "from",
        "with",
        "to",
        "of",
        "during",
        "since",
        "until",
        "also",
        "however",
        "there",
        "here",
        "then",
        "thus",
        "so",
        "if",
        "although",
        "though",
        "because",
        "yet",
        "not",
        "no",
        "one",
        "some",
        "many",
        "most",
        "all",
        "each",
        "every",
        "another",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "why",
        "how",
    ]
)
_STRIP = "\"'“”‘’()[]{}<>,;:!?*_`"
#: Stripped from a word's start only: a trailing one is part of a name ("C#", "F#").
_LEADING = "#"


def _is_cap(word: str) -> bool:
    return bool(word) and word[0].isupper() and any(ch.isalpha() for ch in word)


def _spans(sentence: str) -> list[str]:
    """Capitalized word runs (connectors allowed inside), with leading stopwords removed."""
    spans: list[str] = []
    current: list[str] = []

    def flush() -> None:
        while current and current[-1].lower() in _CONNECTORS:
            current.pop()
        while current and current[0].lower() in _STOP:
            current.pop(0)
        if current and not all(w.isdigit() for w in current):
            spans.append(" ".join(current))
        current.clear()

    for match in _TOKEN.finditer(sentence):
        raw = match.group()
        word = raw.strip(_STRIP).lstrip(_LEADING).strip(_STRIP)
        abbreviation = is_abbreviation(word)
        ends_span = raw[-1:] in ',;:!?)"”' or (raw.endswith(".") and not abbreviation)
        word = word if abbreviation else word.rstrip(".")
        if _is_cap(word) or (current and word.lower() in _CONNECTORS and not ends_span):
            current.append(word)
        else:
            flush()
        if ends_span:
            flush()
    flush()
    return spans


def sentences(text: str) -> list[str]:
    """Split at line breaks and at ``.!?`` before a capital, except after initials and abbreviations."""
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if "\n" not in match.group():
            if not text[match.end()].isupper() and text[match.end()].isalpha():
                continue
            last = _LAST_WORD.search(text, start, match.start())
            word = last.group(1).strip(_STRIP) if last else ""
            if is_abbreviation(word):
                continue
        out.append(text[start : match.start()])
        start = match.end()
    out.append(text[start:])
    return [s for s in out if s.strip()]


def extract_nlp(text: str) -> Extraction:
    """Entities and co-occurrence relations of one text, deterministically."""
    entities: list[ExtractedEntity] = []
    relations: list[ExtractedRelation] = []
    for sentence in sentences(text):
        sentence = sentence.strip().lstrip("#").strip()
        if not sentence:
            continue
        found: list[ExtractedEntity] = []
        description = sentence if len(sentence) <= 300 else sentence[:297] + "..."
        for title in _QUOTED.findall(sentence):
            if not title.strip():  # a quoted run of spaces names nothing
                continue
            found.append(ExtractedEntity(name=title, type="work", description=description))
        for span in _spans(sentence):
            found.append(ExtractedEntity(name=span, description=description))
        for year in _YEAR.findall(sentence):
            found.append(ExtractedEntity(name=year, type="year"))
        names = list(dict.fromkeys(e.name for e in found))
        entities.extend(found)
        for a, b in combinations(names[:MAX_PAIRED_PER_SENTENCE], 2):
            relations.append(ExtractedRelation(source=a, type=COOCCURRENCE, target=b))
    return clean_extraction(Extraction(entities=entities, relations=relations))


class NLPExtractor:
    """The offline extractor: no model, no calls, the default when no LLM is configured."""

    @property
    def version(self) -> str:
        return NLP_VERSION

    @property
    def model_id(self) -> str:
        return ""

    @property
    def cacheable(self) -> bool:
        return False

    async def extract(self, text: str) -> ExtractorResult:
        return ExtractorResult(extraction=extract_nlp(text))
