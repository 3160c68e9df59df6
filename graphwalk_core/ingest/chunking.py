"""Chunking: whole paragraphs packed up to ``max_chars``, each chunk an exact slice ``text[start:end]``."""

from __future__ import annotations

import re

from pydantic import BaseModel

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.text import is_abbreviation
from graphwalk_core.model import text_hash

DEFAULT_CHUNK_CHARS = 2_000
#: A paragraph ends at a blank line: a line break, then whitespace holding another (a CRLF file's, or a
#: line ending in spaces, is one too).
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=[^\S\n]*\n\s*\n|\s*\Z)", re.DOTALL)
#: A word ending in ``.!?`` (group 1) and the whitespace after it (where a sentence cut falls).
_SENTENCE_END = re.compile(r"(?<!\S)(\S*[.!?])\s+")
_SPACE = re.compile(r"\s+")


class Chunk(BaseModel):
    """A slice of one document; ``content_hash`` keys the extraction cache."""

    document_id: str
    index: int
    text: str
    start: int
    end: int
    content_hash: str

    @property
    def id(self) -> str:
        return f"{self.document_id}@{self.index}"


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph: runs of text separated by blank lines, trimmed."""
    return [(m.start(), m.end()) for m in _PARAGRAPH.finditer(text)]


def _split_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """A paragraph longer than ``max_chars`` split at sentence ends (not after initials or abbreviations),
    else between words (hard cuts as a last resort: a window without whitespace)."""
    spans: list[tuple[int, int]] = []
    cursor = start
    while end - cursor > max_chars:
        window = text[cursor : cursor + max_chars + 1]  # a cut at whitespace just past max_chars fits too
        cuts = [m.end(1) for m in _SENTENCE_END.finditer(window) if not is_abbreviation(m.group(1))]
        cuts = cuts if cuts and cuts[-1] > 0 else [m.start() for m in _SPACE.finditer(window)]
        cut = cursor + (cuts[-1] if cuts and cuts[-1] > 0 else max_chars)
        spans.append((cursor, cut))
        cursor = cut
        while cursor < end and text[cursor].isspace():
            cursor += 1
    if cursor < end:
        spans.append((cursor, end))
    return spans


def chunk_text(document_id: str, text: str, *, max_chars: int = DEFAULT_CHUNK_CHARS) -> list[Chunk]:
    """Pack whole paragraphs into chunks of at most ``max_chars`` characters (offsets into ``text``)."""
    if max_chars < 50:
        raise InputError(f"chunk size must be >= 50 characters, got {max_chars}")
    pieces: list[tuple[int, int]] = []
    for start, end in paragraph_spans(text):
        pieces.extend(_split_long(text, start, end, max_chars) if end - start > max_chars else [(start, end)])
    groups: list[tuple[int, int]] = []
    for start, end in pieces:
        if groups and end - groups[-1][0] <= max_chars:
            groups[-1] = (groups[-1][0], end)
        else:
            groups.append((start, end))
    return [
        Chunk(
            document_id=document_id,
            index=i,
            text=text[start:end],
            start=start,
            end=end,
            content_hash=text_hash(text[start:end]),
        )
        for i, (start, end) in enumerate(groups)
    ]
