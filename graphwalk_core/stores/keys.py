"""The strings a graph store keys on, bounded the same way on every store.

PostgreSQL's B-tree indexes refuse a row over 2,704 bytes and its text holds no NUL character, where
SQLite and the memory store take any string. So every store enforces the same limits on what the SQL
store keeps in an indexed column as is (:func:`check_node`, :func:`check_edge`, :func:`check_metadata`):
node ids, node and edge types and metadata keys have a maximum UTF-8 length, and none of those, nor a
name, an alias or a metadata value, may hold a NUL or a lone surrogate (see :func:`storable`). Names,
aliases and provenance source ids are data of any length: the SQL store indexes them under
:func:`index_key`, which bounds them (the memory store keys its dictionaries on the strings themselves).
An element's summary, attributes and conflicting values hold no lone surrogate either: neither JSON (the
SQL store's records) nor Parquet holds one (a NUL there is escaped, and kept).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from graphwalk_core.errors import InputError
from graphwalk_core.model import Edge, Node

#: UTF-8 bytes of a node id at most (ingest's ids are about 30).
MAX_ID_BYTES = 1024
#: UTF-8 bytes of a node or edge type at most: an edge's (source, type, target) index row fits.
MAX_TYPE_BYTES = 512
#: UTF-8 bytes of a metadata key at most (a ledger key holds a document id: a path, a record key).
MAX_METADATA_KEY_BYTES = 2048
#: UTF-8 bytes of an index key kept as it is; a longer one is bounded (see :func:`index_key`).
MAX_INDEX_KEY_BYTES = 1024
#: Between a bounded key's prefix and the SHA-256 of the whole key.
DIGEST_MARK = "#sha256:"

#: Characters no database keeps in text: NUL (PostgreSQL), lone surrogates (not UTF-8).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: Lone surrogates: no UTF-8 form, so no JSON record or Parquet table holds one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> bool:
    """Whether a database can hold ``text`` (it has no NUL and no lone surrogate): a key that is not is
    in no SQL table (the writes refuse one or store it through :func:`index_key`)."""
    return UNSTORABLE.search(text) is None


def utf8_size(text: str) -> int:
    """``text``'s length in UTF-8 bytes (a lone surrogate counts three)."""
    return len(text.encode("utf-8", "surrogatepass"))


def over_bytes(text: str, limit: int) -> bool:
    """Whether ``text`` is over ``limit`` UTF-8 bytes (one of at most ``limit / 4`` characters is not
    encoded to tell: the check runs on every key written)."""
    return len(text) * 4 > limit and utf8_size(text) > limit


def index_key(key: str) -> str:
    """The indexed form of ``key``: the key itself when it is at most :data:`MAX_INDEX_KEY_BYTES` bytes of
    storable text (every graph written before keeps its keys), else its longest storable prefix of at most
    that many bytes, :data:`DIGEST_MARK` and the SHA-256 of the whole key (hex). A long key's form is
    longer than any key kept as it is, so the two never meet; a key found by it was written through it."""
    bad = UNSTORABLE.search(key)
    if bad is None and not over_bytes(key, MAX_INDEX_KEY_BYTES):
        return key
    head = key if bad is None else key[: bad.start()]
    prefix = head.encode("utf-8")[:MAX_INDEX_KEY_BYTES].decode("utf-8", "ignore")
    return prefix + DIGEST_MARK + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def index_forms(key: str) -> list[str]:
    """The index keys rows of ``key`` may be under: :func:`index_key`'s, and the storable key itself when
    that is longer (a graph written before keys were bounded kept it whole). Reads and deletes use both."""
    bounded = index_key(key)
    return [bounded] if bounded == key or not storable(key) else [bounded, key]


def shown(text: str) -> str:
    """``text`` quoted for a message: its first 60 characters and ``…`` when it is longer."""
    return repr(text) if len(text) <= 60 else repr(text[:60]) + "…"


def _problem(what: str, text: str, limit: int | None, unstorable: re.Pattern[str] = UNSTORABLE) -> str | None:
    """Why no store keeps ``text`` as an element's ``what`` (``limit``: its UTF-8 bytes at most; characters
    matching ``unstorable`` are kept nowhere), or None."""
    bad = None if text.isascii() and "\x00" not in text else unstorable.search(text)  # ASCII: no search
    if bad is not None:
        char = "a NUL character" if bad.group() == "\x00" else "a lone surrogate"
        return f"its {what} {shown(text)} holds {char} (U+{ord(bad.group()):04X}), which no graph store keeps"
    if limit is not None and over_bytes(text, limit):
        size = utf8_size(text)
        return f"its {what} {shown(text)} is {size:,} bytes in UTF-8; a graph store keeps at most {limit:,}"
    return None


def _strings(value: Any, into: list[str]) -> list[str]:
    """``into`` with every string in the JSON value ``value`` (object keys included) added."""
    kind = type(value)
    if kind is str:
        into.append(value)
    elif kind is dict:
        into += value
        for item in value.values():
            _strings(item, into)
    elif kind is list or kind is tuple:
        for item in value:
            _strings(item, into)
    return into


def _has_surrogate(value: Any) -> bool:
    """Whether the JSON value ``value`` holds a lone surrogate in a string (object keys included); an ASCII
    string is passed without a search (the usual case: a write pays a few checks per value)."""
    kind = type(value)
    if kind is str:
        return not value.isascii() and _SURROGATE.search(value) is not None
    if kind is dict:
        for key, item in value.items():
            if _has_surrogate(key) or _has_surrogate(item):
                return True
    elif kind is list or kind is tuple:
        for item in value:
            if _has_surrogate(item):
                return True
    return False


def _data_problem(element: Node | Edge) -> str | None:
    """Why no store keeps ``element``'s data: a lone surrogate in its summary, an attribute's key or value
    or a conflicting value (its provenance is not walked: a write costs what its data holds)."""
    summary = element.summary if isinstance(element, Node) else None
    attributes, conflicting = element.attributes, element.conflicts
    if not (
        (summary is not None and _has_surrogate(summary))
        or (attributes and _has_surrogate(attributes))
        or (conflicting and any(_has_surrogate(cv.value) for c in conflicting.values() for cv in c.values))
    ):
        return None
    conflicts = {key: [cv.value for cv in c.values] for key, c in element.conflicts.items()}
    parts: list[tuple[str, Any]] = [("summary", summary)]
    for what, data in (("attribute", element.attributes), ("conflicting attribute", conflicts)):
        for key, value in data.items():
            parts += [(what, key), (f"{what} {shown(key)} value", value)]
    for what, value in parts:
        for text in _strings(value, []):
            if _SURROGATE.search(text):
                return _problem(what, text, None, _SURROGATE)
    raise AssertionError("unreachable: a text above holds a surrogate")


def check_node(node: Node) -> None:
    """Raise InputError when no store may keep ``node`` (see the module docstring); it runs on every node
    written, so the node is named only on failure."""
    if (problem := _problem("id", node.id, MAX_ID_BYTES)) is not None:
        raise InputError(f"node: {problem}")
    problem = _problem("type", node.type, MAX_TYPE_BYTES) or _problem("name", node.name, None)
    for alias in node.aliases:
        problem = problem or _problem("alias", alias, None)
    if (problem := problem or _data_problem(node)) is not None:
        raise InputError(f"node {shown(node.id)}: {problem}")


def edge_problem(
    source: str, type: str, target: str, roles: tuple[str, str, str] = ("source", "type", "target")
) -> str | None:
    """Why no store keeps an edge ``source -type-> target`` (its endpoints as node ids), named by
    ``roles``; None when every store does."""
    return (
        _problem(roles[0], source, MAX_ID_BYTES)
        or _problem(roles[2], target, MAX_ID_BYTES)
        or _problem(roles[1], type, MAX_TYPE_BYTES)
    )


def check_edge(edge: Edge) -> None:
    """Raise InputError when no store may keep ``edge`` (whose endpoints must be nodes a store keeps)."""
    if (problem := edge_problem(edge.source, edge.type, edge.target) or _data_problem(edge)) is not None:
        raise InputError(f"edge {shown(edge.source)} -> {shown(edge.target)}: {problem}")


def check_metadata(key: str, value: str | None) -> None:
    """Raise InputError when no store may keep metadata ``key`` = ``value``."""
    if (problem := _problem("key", key, MAX_METADATA_KEY_BYTES)) is not None:
        raise InputError(f"metadata: {problem}")
    if value is not None and (problem := _problem("value", value, None)) is not None:
        raise InputError(f"metadata {shown(key)}: {problem}")
