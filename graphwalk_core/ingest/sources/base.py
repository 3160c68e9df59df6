"""The Source protocol and its JSON-serializable outputs: documents and profiles."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.extraction.base import Extraction
from graphwalk_core.ingest.sources.mapping import Mappings
from graphwalk_core.model import JSONValue
from graphwalk_core.stores.keys import UNSTORABLE

DocumentKind = Literal["text", "record", "row"]


class SourceDocument(BaseModel):
    """One unit of the ledger: a text file, one CSV/JSON record, or one SQL row.

    ``records`` holds the raw record(s) behind a record/row document. ``extraction`` is set when a
    declarative mapping (or a SQL schema) already turned the record into entities and relations, so
    the document skips chunking and text extraction. ``extractor`` then names that mapping.
    """

    id: str
    text: str
    content_hash: str
    kind: DocumentKind = "text"
    metadata: dict[str, JSONValue] = Field(default_factory=dict)
    records: list[dict[str, JSONValue]] | None = None
    extraction: Extraction | None = None
    extractor: str | None = None


class SkippedItem(BaseModel):
    """Input that could not be read (the run goes on); ``document_id`` is what it would have been.

    ``kind="mapping"``: a mapping key (in ``path``) that matched no file or table; it skips no input,
    so it keeps no documents from earlier runs.
    """

    path: str
    reason: str
    line: int | None = None
    document_id: str | None = None
    kind: Literal["input", "mapping"] = "input"

    def describe(self) -> str:
        """One line: a control character or line break in a path (or a reason) is written escaped."""
        if self.kind == "mapping":
            return escaped(f"mapping key {self.path!r}: {self.reason}")
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return escaped(f"{where}: {self.reason}")


#: A key's limit in UTF-8 bytes: document ids go into indexed store keys (PostgreSQL's b-tree takes
#: about 2700 bytes for the whole ``ingest/ledger/<source>/<path>#<key>``).
MAX_KEY_BYTES = 1024
#: Not in a document id: PostgreSQL stores no NUL in text, and an id with a line break breaks every
#: listing and ledger key (C0 and C1 control characters; U+2028 and U+2029 end a line for
#: ``str.splitlines`` too), nor a lone surrogate (a JSON escape's, which has no UTF-8 form).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def control_character(text: str) -> str | None:
    """The first character of ``text`` no document id may hold (:data:`_CONTROL`), described
    (``"a control character (U+000A)"``, ``"a line break (U+2028)"``, ``"a lone surrogate (U+DC00)"``);
    None when there is none."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    char = found.group()
    what = "a line break" if char in "\u2028\u2029" else "a control character"
    what = "a lone surrogate" if "\ud800" <= char <= "\udfff" else what
    return f"{what} (U+{ord(char):04X})"


def oversize(key: str) -> str | None:
    """Why ``key`` is too long for a document id (over :data:`MAX_KEY_BYTES` in UTF-8), or None."""
    size = len(key.encode("utf-8"))
    if size <= MAX_KEY_BYTES:
        return None
    return f"{size} bytes long, over the limit of {MAX_KEY_BYTES} (a key is an id, not a text)"


def escaped(text: str) -> str:
    """``text`` with each character of :data:`_CONTROL` as its Python escape (``\\n``, ``\\x01``,
    ``\\u2028``), so it shows on one line."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


def unstorable_field(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, character)``: the first field of ``record`` whose name or value (in any nested list or
    object) holds a character no graph store keeps (:data:`~graphwalk_core.stores.keys.UNSTORABLE`: a
    NUL, or a lone surrogate from a JSON escape such as ``"\\ud800"``), and the first such character;
    None when there is none."""

    def found(value: Any) -> str | None:
        if isinstance(value, str):
            match = UNSTORABLE.search(value)
            return match.group() if match is not None else None
        if isinstance(value, dict):
            return next((c for k, v in value.items() if (c := found(k) or found(v))), None)
        if isinstance(value, list | tuple):
            return next((c for v in value if (c := found(v))), None)
        return None

    for field, value in record.items():
        char = found(field) or found(value)
        if char is not None:
            return str(field), char
    return None


def unstorable_reason(kind: str, field: tuple[str, str]) -> str:
    """Why a record or row whose ``field`` (``(name, character)``, from :func:`unstorable_field`) holds a NUL
    character or a lone surrogate is skipped."""
    name, char = field
    if char == "\x00":
        return f"{kind} {name!r} holds a NUL character (U+0000), which no graph store keeps"
    return (
        f"{kind} {name!r} holds a lone surrogate (U+{ord(char):04X}, from a JSON escape), which is no "
        "character: it has no UTF-8 form, so no graph store keeps it"
    )


class ColumnProfile(BaseModel):
    name: str
    type: str = ""
    nullable: bool = True
    primary_key: bool = False


class ForeignKeyProfile(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


class TableProfile(BaseModel):
    """A SQL table, or a CSV/JSON record file seen as a table."""

    name: str
    rows: int = 0
    columns: list[ColumnProfile] = Field(default_factory=list)
    primary_key: list[str] = Field(default_factory=list)
    foreign_keys: list[ForeignKeyProfile] = Field(default_factory=list)


class SourceProfile(BaseModel):
    """What a source holds, before anything is extracted."""

    source_id: str
    kind: Literal["files", "sql"]
    location: str
    documents: int = 0
    files_by_type: dict[str, int] = Field(default_factory=dict)
    bytes: int = 0
    encodings: dict[str, int] = Field(default_factory=dict)
    rows: int = 0
    tables: list[TableProfile] = Field(default_factory=list)
    skipped: list[SkippedItem] = Field(default_factory=list)


@runtime_checkable
class Source(Protocol):
    """Anything that yields documents with stable ids and content hashes."""

    @property
    def source_id(self) -> str: ...

    async def profile(self) -> SourceProfile: ...

    def documents(self) -> AsyncIterator[SourceDocument]:
        """Every readable document, in a stable order."""

    @property
    def skipped(self) -> list[SkippedItem]:
        """Input skipped by the last ``documents()`` pass (file, line, reason)."""


@runtime_checkable
class OriginAware(Protocol):
    """A source that can say where its documents come from."""

    @property
    def origin(self) -> str:
        """The folder, file or database read (a resolved path; a URL without its password): one source id
        read from two origins would retract each one's documents in favour of the other's."""


def check_source_id(source_id: str) -> str:
    """Source ids prefix provenance (``<source>/<doc>``) and ledger keys, so no ``/`` and not blank."""
    if not source_id or "/" in source_id or source_id != source_id.strip():
        raise InputError(f"invalid source id {source_id!r}: non-blank, no '/' and no outer spaces")
    return source_id


class SourceBase:
    """What every source keeps: its checked id, mappings, and the input skipped by the last pass."""

    def __init__(self, source_id: str, mappings: Mappings | None) -> None:
        self._source_id = check_source_id(source_id)
        self.mappings = mappings or {}
        self._skipped: list[SkippedItem] = []

    @property
    def source_id(self) -> str:
        return self._source_id

    @property
    def skipped(self) -> list[SkippedItem]:
        return list(self._skipped)
