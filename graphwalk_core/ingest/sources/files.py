"""FileSource: a folder (or one file) of .txt, .md, .json, .jsonl and .csv files.

Document ids are stable: the relative POSIX path for a text file, ``<path>#<index>`` for the
``index``-th record of a record file (bad records keep their slot, so one bad row shifts nothing), or
``<path>#<key>`` when the file's mapping names a ``key`` column.
Unreadable input becomes a :class:`SkippedItem` naming the file (and line); the rest is read.
"""

from __future__ import annotations

import csv
import errno
import json
import math
import os
import re
import stat
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from graphwalk_core.errors import InputError
from graphwalk_core.files import json_error
from graphwalk_core.ingest.sources.base import (
    ColumnProfile,
    SkippedItem,
    SourceBase,
    SourceDocument,
    SourceProfile,
    TableProfile,
    control_character,
    oversize,
    unstorable_field,
    unstorable_reason,
)
from graphwalk_core.ingest.sources.mapping import (
    Mappings,
    RecordMapping,
    absent_columns,
    field_of,
    mapping_for,
    mapping_key,
    unmatched_keys,
)
from graphwalk_core.ingest.text import snake_case
from graphwalk_core.model import JSONValue, content_hash, text_hash
from graphwalk_core.stores.keys import storable

TEXT_SUFFIXES = frozenset({".txt", ".md"})
RECORD_SUFFIXES = frozenset({".csv", ".json", ".jsonl"})
#: Default per-file byte limit.
DEFAULT_MAX_BYTES = 10_000_000
#: The one rule for every format: an empty (or blank) file is read as unreadable, not as "no documents",
#: so what it held before stays in the graph (a file truncated mid-write deletes nothing). Deleting
#: the file, or a header-only CSV (with its final newline) / ``[]`` JSON, removes its documents.
EMPTY_FILE = "empty file: its documents from earlier runs are kept (delete the file to remove them)"
#: A .csv or .jsonl file without a final newline that ends in a record that does not parse (or, for a
#: CSV, in its header) is taken to be caught mid-write: one skip for the whole file, at the line that
#: record starts on, so the records not written yet are not deleted. The records before it are read.
MID_WRITE = (
    "the file ends {where}, without a final newline: it may still be being written, "
    "so none of its documents are deleted this run"
)
#: Entries of the folder that cannot be read: skips that keep their documents (``docs/guarantees.md``).
LINKED_FOLDER = "a symbolic link to a folder, not followed (ingest its target as a source of its own)"
DEAD_LINK = "a symbolic link to nothing (its target is missing, or it loops)"
#: A FIFO, socket or device (or a link to one) where a file may have been: reading it could block.
NOT_A_FILE = "a {kind}, not a regular file: not read (reading it could block)"
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "named pipe (FIFO)"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISDIR, "folder"),  # a file replaced by a folder while the folder was listed
)
#: A path that is not UTF-8 (Linux allows any bytes in a name): its document id could not be stored.
NOT_UTF8_NAME = "its path is not UTF-8, so it cannot be a document id: rename it"
#: A path holding a control character or line break (a newline is allowed in a Linux name): as a document
#: id it would break every listing and ledger key, as it would a mapping ``key``'s.
CONTROL_NAME = "its path holds {what}, so it cannot be a document id: rename it"
#: Byte-order marks of text in another Unicode encoding than UTF-8, and its codec (UTF-32 first: its LE
#: mark starts as UTF-16's): such text holds NUL bytes, so it would read as binary.
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: A mapping key that names no record file: its records would silently go through the text extractor.
UNMATCHED_KEY = "matches no file of the source (keys are paths relative to the source folder, or globs)"
#: A JSON escape of a NUL or of a surrogate (a pair is text, but only the parsed record tells).
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
#: Numbers as CSV cells write them, in ASCII digits; digits with a leading zero ("007", a code or an id),
#: "-0" and other digits ("1٠٧") stay text.
_INT = re.compile(r"0|-?[1-9][0-9]{0,17}")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")


class _Scan:
    """One pass over the files: skips and profile counters (the documents go to the reader one by one)."""

    def __init__(self) -> None:
        self.documents = 0
        self.skipped: list[SkippedItem] = []
        self.by_type: Counter[str] = Counter()
        self.encodings: Counter[str] = Counter()
        self.bytes = 0
        self.rows = 0
        self.tables: list[TableProfile] = []


def source_files(root: Path) -> list[tuple[str, Path, str | None]]:
    """``(relative path, path, why it cannot be read or None)`` of every file of a source folder (or the
    one file ``root``), sorted by path; hidden files and folders aside. Passed over in silence, these
    would lose their documents, so each is an entry whose skip keeps them: a link to a folder (not
    followed: it may loop or leave the source), a link to nothing, a FIFO, socket or device (not read: it
    could block), a folder that cannot be listed, an entry that cannot be examined (its folder lists but
    cannot be entered). An unlistable source folder is an InputError."""
    if root.is_file():
        return [(root.name, root, None)]
    out: list[tuple[str, Path, str | None]] = []

    def rel(path: Path) -> str:  # a name that is not UTF-8 as text (it is a skip: NOT_UTF8_NAME)
        return _shown(path.relative_to(root).as_posix())

    def unlisted(exc: OSError) -> None:
        path = Path(exc.filename)
        if path == root:
            raise InputError(f"cannot list the source folder {root}: {exc.strerror}") from exc
        out.append((rel(path), path, f"cannot list the folder: {exc.strerror or exc}"))

    for top, folders, names in os.walk(root, onerror=unlisted):
        base = Path(top)
        walked = []
        for name in (n for n in folders if not n.startswith(".")):
            path = base / name
            try:
                linked = path.is_symlink()
            except OSError as exc:  # listed but not examinable (a parent without execute permission)
                out.append((rel(path), path, f"cannot list the folder: {exc.strerror or exc}"))
                continue
            if linked:
                out.append((rel(path), path, LINKED_FOLDER))
            else:
                walked.append(name)
        folders[:] = walked
        for name in (n for n in names if not n.startswith(".")):
            path = base / name
            listed = path.relative_to(root).as_posix()
            shown = _shown(listed)
            if not storable(listed):  # bytes that are not UTF-8 come as lone surrogates
                out.append((shown, path, NOT_UTF8_NAME))
                continue
            control = control_character(shown)
            if control is not None:  # the path as it is: its skip keeps what earlier runs read from it
                out.append((shown, path, CONTROL_NAME.format(what=control)))
                continue
            try:
                dead = path.is_symlink() and not path.exists()
                mode = 0 if dead else path.stat().st_mode
            except OSError as exc:
                out.append((shown, path, f"cannot read: {exc.strerror or exc}"))
                continue
            out.append((shown, path, DEAD_LINK if dead else _not_a_file(mode)))
    return sorted(out)


def _not_a_file(mode: int) -> str | None:
    """Why an entry of ``mode`` is not read (:data:`NOT_A_FILE`), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((kind for test, kind in _SPECIAL_KINDS if test(mode)), "special file")
    return NOT_A_FILE.format(kind=kind)


class Unread(Exception):
    """A listed file that cannot be read as one (what it is now, or its size): the skip's reason."""


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (a link followed), read through one descriptor opened
    without blocking: a FIFO, socket or device put in its place since it was listed raises :class:`Unread`
    instead of blocking the run, and so does a file over ``limit`` bytes (by what it holds when read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        reason = _not_a_file(os.stat(path).st_mode) if exc.errno == errno.ENXIO else None  # a socket
        if reason is not None:
            raise Unread(reason) from None
        raise
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        reason = _not_a_file(info.st_mode)
        if reason is not None:
            raise Unread(reason)
        if limit is not None and info.st_size > limit:
            raise Unread(f"file is {info.st_size} bytes, over the limit of {limit}")
        data = file.read() if limit is None else file.read(limit + 1)
    if limit is not None and len(data) > limit:  # it grew since
        raise Unread(f"file is over the limit of {limit} bytes")
    return data


def _other_unicode(data: bytes) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` when ``data`` starts with that encoding's byte-order mark and reads in
    it, else None."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                data[len(bom) :].decode(codec)
            except UnicodeDecodeError:
                return None
            return codec[:6].upper()
    return None


def _shown(name: str) -> str:
    """A path that is not UTF-8 as text: each byte that is not UTF-8 as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


class FileSource(SourceBase):
    """Documents from files under ``path`` (hidden files and folders are ignored)."""

    def __init__(
        self,
        path: str | Path,
        *,
        source_id: str | None = None,
        mappings: Mappings | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.root = Path(path)
        if not self.root.exists():
            raise InputError(f"source path {self.root} does not exist")
        if max_bytes <= 0:
            raise InputError(f"max_bytes must be > 0, got {max_bytes}")
        super().__init__(source_id or snake_case(self.root.stem) or "files", mappings)
        self.max_bytes = max_bytes

    @property
    def origin(self) -> str:
        return str(self.root.resolve())

    def _files(self) -> list[tuple[str, Path, str | None]]:
        return source_files(self.root)

    def scan(self) -> _Scan:
        """Read every file once (synchronously): skips and profile counters."""
        scan = _Scan()
        for _ in self._read(scan):
            pass
        return scan

    def _read(self, scan: _Scan) -> Iterator[SourceDocument]:
        """The documents, file by file as read (one file in memory at a time); ``scan`` counts.

        Then a mapping key that matches no record file is a skip of its own (kind ``mapping``).
        """
        files = self._files()
        for document in self._file_documents(files, scan):
            scan.documents += 1
            scan.rows += document.kind == "record"
            yield document
        records = [rel for rel, path, _ in files if path.suffix.lower() in RECORD_SUFFIXES]
        for key in unmatched_keys(self.mappings, records):
            scan.skipped.append(SkippedItem(path=key, reason=UNMATCHED_KEY, kind="mapping"))
        self._skipped = scan.skipped

    def _file_documents(
        self, files: list[tuple[str, Path, str | None]], scan: _Scan
    ) -> Iterator[SourceDocument]:
        """Each file's documents in turn (``scan`` counts files and skips, not documents)."""
        record_files = {rel for rel, path, _ in files if path.suffix.lower() in RECORD_SUFFIXES}
        for rel, path, problem in files:
            if problem is not None:
                scan.skipped.append(SkippedItem(path=rel, reason=problem))
                continue
            suffix = path.suffix.lower()
            if suffix not in TEXT_SUFFIXES | RECORD_SUFFIXES:
                scan.skipped.append(
                    SkippedItem(path=rel, reason=f"unsupported file type {suffix or '(none)'}")
                )
                continue
            owner = _record_file_prefix(rel, record_files)
            if owner is not None:
                reason = f"its path reads as a record id of {owner}: its documents could take that file's ids"
                scan.skipped.append(SkippedItem(path=rel, reason=f"{reason}; rename it"))
                continue
            text = self._read_text(rel, path, scan)
            if text is None:
                continue
            if not text.strip():
                scan.skipped.append(SkippedItem(path=rel, reason=EMPTY_FILE))
                continue
            scan.by_type[suffix.lstrip(".")] += 1
            if suffix in TEXT_SUFFIXES:
                yield _text_document(rel, suffix, text)
            else:
                yield from self._read_records(rel, suffix, text, scan)

    def _read_text(self, rel: str, path: Path, scan: _Scan) -> str | None:
        try:
            data = read_regular(path, self.max_bytes)
        except Unread as exc:
            scan.skipped.append(SkippedItem(path=rel, reason=str(exc)))
            return None
        except OSError as exc:
            scan.skipped.append(SkippedItem(path=rel, reason=f"cannot read: {exc.strerror}"))
            return None
        other = _other_unicode(data)
        if other is not None:
            scan.skipped.append(SkippedItem(path=rel, reason=f"{other} text: save it as UTF-8"))
            return None
        nul = data.find(b"\x00")  # anywhere: a NUL is in no text, and no SQL graph stores one
        if nul >= 0:  # its line too: the file may be text up to a NUL far down
            line = data.count(b"\n", 0, nul) + 1
            reason = f"binary file (NUL byte at offset {nul})"
            scan.skipped.append(SkippedItem(path=rel, line=line, reason=reason))
            return None
        encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            byte = data[exc.start : exc.start + 1].hex()
            scan.skipped.append(
                SkippedItem(
                    path=rel, line=line, reason=f"not UTF-8: invalid byte 0x{byte} at offset {exc.start}"
                )
            )
            return None
        scan.encodings[encoding] += 1
        scan.bytes += len(data)
        return text

    def _read_records(self, rel: str, suffix: str, text: str, scan: _Scan) -> Iterator[SourceDocument]:
        mapping = mapping_for(self.mappings, rel)
        rows: list[tuple[int, int, dict[str, JSONValue]]] = []  # (index, line, record)
        columns: dict[str, None] = {}
        first_skip = len(scan.skipped)
        if suffix == ".csv":
            records = _csv_records(rel, text, scan.skipped, mapping.key if mapping is not None else None)
        elif suffix == ".jsonl":
            records = _jsonl_records(rel, text, scan.skipped)
        else:
            records = _json_records(rel, text, scan.skipped)
        for index, line, record in records:
            columns.update(dict.fromkeys(record))
            rows.append((index, line, record))
        absent = absent_columns(mapping, columns, rel) if mapping is not None and rows else None
        if absent is not None:  # a note: the records are read (keeping nothing: kind "mapping")
            pattern = str(mapping_key(self.mappings, rel))
            scan.skipped.append(SkippedItem(path=pattern, reason=absent, kind="mapping"))
        if mapping is not None and mapping.key is not None:
            identified = _keyed(rel, mapping.key, rows, scan.skipped, first_skip)
        else:
            identified = [(f"{rel}#{index}", index, line, record) for index, line, record in rows]
        # a NUL byte made the file binary and strict UTF-8 has no surrogate: a record holds either only
        # through a JSON escape
        nul = suffix != ".csv" and _UNSTORABLE_ESCAPE.search(text) is not None
        for doc_id, index, line, record in identified:
            doc = _record_document(rel, doc_id, index, line, record, mapping, scan.skipped, nul=nul)
            if doc is not None:
                yield doc
        scan.tables.append(
            TableProfile(name=rel, rows=len(rows), columns=[ColumnProfile(name=c) for c in columns])
        )

    async def profile(self) -> SourceProfile:
        scan = self.scan()
        return SourceProfile(
            source_id=self.source_id,
            kind="files",
            location=str(self.root),
            documents=scan.documents,
            files_by_type=dict(sorted(scan.by_type.items())),
            bytes=scan.bytes,
            encodings=dict(sorted(scan.encodings.items())),
            rows=scan.rows,
            tables=scan.tables,
            skipped=scan.skipped,
        )

    async def documents(self) -> AsyncIterator[SourceDocument]:
        """The documents as each file is read: the source never holds more than one file's."""
        for doc in self._read(_Scan()):
            yield doc


def _record_file_prefix(rel: str, record_files: set[str]) -> str | None:
    """The record file whose ids ``<file>#...`` include ``rel`` or its records' ids (``films.csv`` for
    ``films.csv#f2.txt``), if any: a document id is a path, or a record file's path, ``#`` and more, so
    two files' documents can share an id only when one file's path is such an id of the other."""
    at = rel.find("#")
    while at > 0:
        if rel[:at] in record_files:
            return rel[:at]
        at = rel.find("#", at + 1)
    return None


def _text_document(rel: str, suffix: str, text: str) -> SourceDocument:
    title = Path(rel).stem
    if suffix == ".md":
        for line in text.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    return SourceDocument(
        id=rel,
        text=text,
        content_hash=text_hash(text),
        kind="text",
        metadata={"path": rel, "type": suffix.lstrip("."), "title": title},
    )


def _keyed(
    rel: str,
    key: str,
    rows: list[tuple[int, int, dict[str, JSONValue]]],
    skipped: list[SkippedItem],
    first_skip: int,
) -> list[tuple[str, int, int, dict[str, JSONValue]]]:
    """``(document id, index, line, record)`` of records identified by their ``key`` column. A record
    whose key is missing, blank, neither text nor an integer, over :data:`MAX_KEY_BYTES` or holds a
    control character or line break (:func:`control_character`) is a skip naming its line, and so is one whose
    key repeats an earlier record's (that one is read); a key column that no record has (a misspelled
    ``key``, a CSV header without it) is one skip for the file. Since the key of a record that did not
    parse (or had no key) cannot be known, its skip keeps every document of the file: this file deletes
    nothing until it is fixed. ``skipped[first_skip:]``: this file's skips so far (parse errors)."""
    for at in range(first_skip, len(skipped)):
        if skipped[at].document_id is not None:  # a position: no keyed document's id
            skipped[at] = skipped[at].model_copy(update={"document_id": None})
    if rows and not any(field_of(record, key) is not None for _, _, record in rows):
        columns = ", ".join(dict.fromkeys(c for _, _, record in rows for c in record))
        reason = f"no record has the key column {key!r} (columns: {columns}): none of it is read"
        skipped.append(SkippedItem(path=rel, line=rows[0][1], reason=reason))
        return []
    first_line: dict[str, int] = {}
    out: list[tuple[str, int, int, dict[str, JSONValue]]] = []
    for index, line, record in rows:
        field = field_of(record, key) or key  # the key column in the record's Unicode form
        value = record.get(field)
        name = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
        problem = _key_problem(record, field, name)
        if problem is not None:
            skipped.append(SkippedItem(path=rel, line=line, reason=f"the key column {key!r} is {problem}"))
            continue
        doc_id = f"{rel}#{name}"
        if name in first_line:
            reason = f"key {name!r} repeats the record on line {first_line[name]} (that one is read)"
            skipped.append(SkippedItem(path=rel, line=line, reason=reason, document_id=doc_id))
            continue
        first_line[name] = line
        out.append((doc_id, index, line, record))
    return out


def _key_problem(record: dict[str, JSONValue], key: str, name: str) -> str | None:
    """Why ``name`` (the record's ``key`` value as text) cannot be its id, or None."""
    value = record.get(key)
    if key not in record:
        return "missing"
    if not name and (value is None or isinstance(value, str)):  # a CSV's blank cell is None
        return "blank"
    if not name:
        return f"neither text nor an integer: {json.dumps(value)}"
    control = control_character(name)
    return f"{json.dumps(name)}, with {control}" if control is not None else oversize(name)


def _record_document(
    rel: str,
    doc_id: str,
    index: int,
    line: int,
    record: dict[str, JSONValue],
    mapping: RecordMapping | None,
    skipped: list[SkippedItem],
    *,
    nul: bool = True,
) -> SourceDocument | None:
    """The record's document, or None (a skip naming its line): ``nul`` searches it for a NUL character
    or a lone surrogate first (False: its file's text cannot spell one)."""
    extraction = None
    field = unstorable_field(record) if nul else None
    if field is not None:
        reason = unstorable_reason("field", field)
        skipped.append(SkippedItem(path=rel, line=line, reason=reason, document_id=doc_id))
        return None
    if mapping is not None:
        try:
            extraction = mapping.to_extraction(record, where=f"{rel}:{line}")
        except InputError as exc:
            reason = str(exc).removeprefix(f"{rel}:{line}: ")
            skipped.append(SkippedItem(path=rel, line=line, reason=reason, document_id=doc_id))
            return None
    text = "\n".join(f"{k}: {v}" for k, v in record.items() if v not in (None, ""))
    return SourceDocument(
        id=doc_id,
        text=text,
        # without a mapping it is extracted from its text, whose lines follow the columns' order
        content_hash=content_hash(record) if mapping is not None else text_hash(text),
        kind="record",
        metadata={"path": rel, "index": index, "line": line},
        records=[record],
        extraction=extraction,
        extractor=mapping.version if mapping is not None else None,
    )


def _cell(value: str) -> JSONValue:
    """CSV cells: integers and decimals in ASCII digits become numbers (not digits with a leading zero:
    "007" stays text, as 7 would lose it; nor "-0"; nor a decimal too large for a float), blanks become
    None, the rest stays text. A quoted cell's CRLF line breaks are LF, as the file's lines are read: a
    file switched between CRLF and LF line ends (git's autocrlf switches those inside quotes too) holds
    the same records."""
    value = value.strip()
    if "\r\n" in value:
        value = value.replace("\r\n", "\n")
    if not value:
        return None
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value) and math.isfinite(number := float(value)):  # 400 digits: inf, kept as text
        return number
    return value


def _key_cell(value: str) -> JSONValue:
    """A key column's cell: as :func:`_cell`, but a decimal stays text as written (a key is no float)."""
    cell = _cell(value)
    return value.strip() if isinstance(cell, float) else cell


def _physical_lines(text: str) -> list[str]:
    """The file's lines, each with its ``\n`` (a CRLF keeps its CR; a bare CR ends no line)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    return lines


class _LineFeed:
    """Lines from ``pos`` on, for one ``csv.reader`` record; ``pos`` tells how many it consumed."""

    def __init__(self, lines: list[str], pos: int) -> None:
        self.lines = lines
        self.pos = pos

    def __iter__(self) -> _LineFeed:
        return self

    def __next__(self) -> str:
        if self.pos >= len(self.lines):
            raise StopIteration
        self.pos += 1
        return self.lines[self.pos - 1]


def _csv_error(exc: csv.Error) -> str:
    message = str(exc)
    if message == "unexpected end of data":
        return "malformed CSV: a quote opened on this line is never closed"
    if message.startswith("new-line character seen in unquoted field"):
        return "malformed CSV: a bare CR (\\r) inside an unquoted field"
    return f"malformed CSV: {message}"


def allow_csv_fields_of(text: str) -> None:
    """Let the csv module read a field as long as ``text``: its limit (131,072 characters by default)
    made a valid file's long quoted field an error. The limit is the process's, so it is only raised."""
    if len(text) > csv.field_size_limit():
        csv.field_size_limit(len(text))


def csv_rows(text: str) -> Iterator[tuple[int, int, list[str] | None, str | None]]:
    """(first line, last line, fields, error) per non-blank record of a CSV text, parsed strictly and
    locally.

    A record starts on a line and may span more only through a quoted field. After the header, a
    record that does not parse (an unclosed quote, a bare CR) is an error alone and parsing resumes
    on the line after its first one, so one bad quote never swallows later rows. A record that parses
    with another number of fields than the header is an error too, but its quotes closed: parsing
    resumes after its last line, so its continuation lines are never read as records of their own.
    """
    lines = _physical_lines(text)
    allow_csv_fields_of(text)
    width: int | None = None
    pos = 0
    while pos < len(lines):
        start = pos
        feed = _LineFeed(lines, pos)
        try:
            row: list[str] | None = next(csv.reader(feed, strict=True))
            error = None
        except StopIteration:
            return
        except csv.Error as exc:
            row, error = None, _csv_error(exc)
        if row is not None and not any(cell.strip() for cell in row):
            pos = feed.pos
            continue
        if row is not None and width is not None and len(row) != width:
            error = f"malformed CSV row: {len(row)} fields, the header has {width}"
        if row is not None and width is None:
            width = len(row)
        pos = start + 1 if row is None else feed.pos
        yield start + 1, feed.pos, row, error


#: A record as parsed: its first line, and the record or why it does not parse.
_Parsed = tuple[int, dict[str, Any] | str]


def _indexed(
    rel: str, text: str, parsed: list[_Parsed], skipped: list[SkippedItem]
) -> list[tuple[int, int, dict[str, Any]]]:
    """``(index, first line, record)`` of the records that parse. A bad record is a skip naming its line
    that keeps its index (so its document id: nothing after it shifts), but a bad last record in a file
    without a final newline is the file caught mid-write (:data:`MID_WRITE`, a skip of the whole file)."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    for index, (line, value) in enumerate(parsed):
        if isinstance(value, dict):
            out.append((index, line, value))
        elif index == len(parsed) - 1 and not text.endswith("\n"):
            skipped.append(
                SkippedItem(path=rel, line=line, reason=MID_WRITE.format(where=f"mid-record ({value})"))
            )
        else:
            skipped.append(SkippedItem(path=rel, line=line, reason=value, document_id=f"{rel}#{index}"))
    return out


def _csv_records(
    rel: str, text: str, skipped: list[SkippedItem], key: str | None = None
) -> list[tuple[int, int, dict[str, Any]]]:
    """Records of a CSV file: ``(index, first line, record)`` (see :func:`_indexed`). The ``key``
    column's decimals stay as written ("1.10" is no float 1.1: a CSV cannot quote it into text)."""
    rows = list(csv_rows(text))
    if not rows:  # blank lines only: the caller skips empty files
        return []
    (line, _, header, error), body = rows[0], rows[1:]
    if header is None:
        skipped.append(SkippedItem(path=rel, line=line, reason=f"{error} (in the header)"))
        return []
    header = [h.strip() for h in header]
    key = field_of(dict.fromkeys(header), key) if key is not None else None
    if len(set(header)) != len(header) or not all(header):
        skipped.append(
            SkippedItem(path=rel, line=line, reason=f"CSV header has blank or repeated names: {header}")
        )
        return []
    if not text.endswith("\n"):
        if not body:
            skipped.append(SkippedItem(path=rel, line=line, reason=MID_WRITE.format(where="in its header")))
            return []
        body = _through_last_record(body)
    parsed: list[_Parsed] = [
        (line, {h: _key_cell(c) if h == key else _cell(c) for h, c in zip(header, row, strict=True)})
        if row is not None and error is None
        else (line, error or "malformed CSV")
        for line, _, row, error in body
    ]
    return _indexed(rel, text, parsed, skipped)


def _through_last_record(
    rows: list[tuple[int, int, list[str] | None, str | None]],
) -> list[tuple[int, int, list[str] | None, str | None]]:
    """The rows up to the file's last record: the first bad one that runs to the last row's end (an
    unclosed quote runs to the end of the file: the rows after it were read from its own lines)."""
    last = rows[-1][1]
    cut = next(
        (i for i, (_, end, _, error) in enumerate(rows) if error is not None and end >= last), len(rows) - 1
    )
    return rows[: cut + 1]


class _NotJSON(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's json reads them, JSON has no such numbers."""


def _no_constant(name: str) -> Any:
    raise _NotJSON(name)


#: A JSON string, or one of the constants JSON has not (the first match outside strings is the culprit).
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _float(literal: str) -> float | str:
    """A JSON number with a fraction or exponent: its float, or the literal as written when a float cannot
    hold it (``1e400`` reads as infinity, which no store keeps as a number), as a CSV cell does."""
    number = float(literal)
    return number if math.isfinite(number) else literal


class _Repeated(dict[str, Any]):
    """A JSON object that names a key twice: ``json`` keeps its last value without a word."""

    key: str


class _Decoder(threading.local):
    """A JSON decoder per thread (one per call cost more than the parse) whose object hook notes whether an
    object of the text it last read named a key twice (then a :class:`_Repeated`)."""

    def __init__(self) -> None:
        self.repeated = False
        self.decoder = json.JSONDecoder(
            parse_constant=_no_constant, parse_float=_float, object_pairs_hook=self._object
        )

    def _object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        out, seen = _Repeated(obj), set[str]()
        for key, _ in pairs:
            if key in seen:
                out.key = key
                break
            seen.add(key)
        self.repeated = True
        return out

    def loads(self, text: str) -> tuple[Any, bool]:
        """``json.loads(text)`` with the hooks, and whether an object in it names a key twice."""
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        self.repeated = False
        return self.decoder.decode(text), self.repeated


_DECODER = _Decoder()


def _repeated_key(value: Any) -> str | None:
    """Why ``value`` (a parsed record) cannot be read as written: an object in it names a key twice, so
    one of the values would be dropped in silence; None when none does."""
    if isinstance(value, _Repeated):
        return f"the key {json.dumps(value.key)} appears twice in one object: one of its values would be lost"
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((why for item in items if (why := _repeated_key(item)) is not None), None)


def _loads(text: str) -> tuple[Any, bool]:
    """``json.loads``; what Python cannot read is a JSONDecodeError, not an error that would end the run:
    an integer of more digits than it reads (``sys.get_int_max_str_digits``), at the first such run of
    digits, or arrays and objects nested past its recursion limit, at the first bracket. So is what only
    Python reads: ``NaN`` and ``±Infinity``, at the first one. A number too large for a float stays text
    (:func:`_float`). Returns the value and whether an object in it names a key twice (a :class:`_Repeated`,
    see :func:`_repeated_key`)."""
    try:
        return _DECODER.loads(text)
    except json.JSONDecodeError:
        raise
    except _NotJSON as exc:
        at = next((m.start(1) for m in _CONSTANT.finditer(text) if m.group(1)), 0)
        raise json.JSONDecodeError(f"{exc} is not a JSON number", text, at) from None
    except RecursionError as exc:
        at = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=0)
        raise json.JSONDecodeError("arrays or objects nested too deeply", text, at) from exc
    except ValueError as exc:
        limit = sys.get_int_max_str_digits()
        found = re.search(f"[0-9]{{{limit + 1},}}", text)
        at = found.start() if found is not None else 0
        raise json.JSONDecodeError(f"a number of more than {limit} digits", text, at) from exc


def _jsonl_records(rel: str, text: str, skipped: list[SkippedItem]) -> list[tuple[int, int, dict[str, Any]]]:
    """One record per non-blank line (lines end at ``\n`` only: a U+2028 inside a string ends none)."""
    parsed: list[_Parsed] = []
    for line_no, line in enumerate(_physical_lines(text), start=1):
        if not line.strip():
            continue
        try:
            value, repeats = _loads(line.rstrip("\r\n"))  # an error's column then lies on this line
        except json.JSONDecodeError as exc:
            parsed.append((line_no, json_error(exc)))
            continue
        if not isinstance(value, dict):
            parsed.append((line_no, f"a record must be a JSON object, got {type(value).__name__}"))
        else:
            parsed.append((line_no, (repeats and _repeated_key(value)) or value))
    return _indexed(rel, text, parsed, skipped)


def _json_records(rel: str, text: str, skipped: list[SkippedItem]) -> list[tuple[int, int, dict[str, Any]]]:
    """The object, or each item of the top-level array, with the line it starts on. A file that is
    not valid JSON as a whole, or holds neither an object nor an array, is one skip (its records are
    kept: JSON has no local recovery)."""
    try:
        value, repeats = _loads(text)
    except json.JSONDecodeError as exc:
        skipped.append(SkippedItem(path=rel, line=exc.lineno, reason=json_error(exc)))
        return []
    if not isinstance(value, dict | list):
        start = len(text) - len(text.lstrip())
        skipped.append(
            SkippedItem(
                path=rel,
                line=text.count("\n", 0, start) + 1,
                reason=f"a JSON file must hold an object or an array of objects, got {_json_kind(value)}",
            )
        )
        return []
    items = value if isinstance(value, list) else [value]
    starts = _array_item_offsets(text) if isinstance(value, list) else [len(text) - len(text.lstrip())]
    out: list[tuple[int, int, dict[str, Any]]] = []
    for index, (item, offset) in enumerate(zip(items, starts, strict=True)):
        line = text.count("\n", 0, offset) + 1
        if not isinstance(item, dict):
            reason = f"record #{index} must be a JSON object, got {type(item).__name__}"
        elif not repeats or (reason := _repeated_key(item)) is None:
            out.append((index, line, item))
            continue
        skipped.append(SkippedItem(path=rel, line=line, reason=reason, document_id=f"{rel}#{index}"))
    return out


def _json_kind(value: JSONValue) -> str:
    """A JSON scalar's kind as JSON names it: ``null``, ``a boolean``, ``a number`` or ``a string``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "a string"


_SPACE = re.compile(r"[ \t\n\r]*")


def _array_item_offsets(text: str) -> list[int]:
    """Where each item of the (valid) top-level JSON array in ``text`` starts."""
    decoder = json.JSONDecoder()
    pos = _SPACE.match(text, _SPACE.match(text).end() + 1).end()  # past the opening bracket
    offsets: list[int] = []
    while text[pos] != "]":
        offsets.append(pos)
        _, end = decoder.raw_decode(text, pos)
        pos = _SPACE.match(text, end).end()
        if text[pos] == ",":
            pos = _SPACE.match(text, pos + 1).end()
    return offsets
