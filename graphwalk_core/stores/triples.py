"""MetaQA-style triples files: ``subject|relation|object`` lines."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.files import atomic_path, first_undecodable
from graphwalk_core.stores.keys import MAX_TYPE_BYTES, edge_problem, shown

#: What a triples file's fields are, in error messages.
_ROLES = ("subject", "relation", "object")
#: A line of at most this many characters has no field over a store's limits (4 UTF-8 bytes a character).
_SHORT = MAX_TYPE_BYTES // 4


def read_triples(path: str | Path) -> Iterator[tuple[str, str, str]]:
    """``subject|relation|object`` lines (MetaQA KB format); blank lines are skipped. Lines end at ``\\n``
    (or ``\\r\\n``) only, and a UTF-8 BOM is dropped, as ingest reads files. Whitespace around a field
    is layout, not part of it (``Alice | knows | Bob`` is ``Alice|knows|Bob``), as ingest strips names.

    A malformed line, a field no graph store keeps (a name over the node id limit, a relation over the
    type limit, a NUL: see :mod:`graphwalk_core.stores.keys`), or bytes that are not UTF-8 (a binary
    file, a graph database) raise InputError naming the file and line number.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"triples file not found: {path}")
    try:
        with path.open(encoding="utf-8-sig", newline="\n") as lines:
            for number, line in enumerate(lines, 1):
                parts = [field.strip() for field in line.split("|")]  # the last one's line end too
                if len(parts) == 3 and all(parts):
                    # text decoded from UTF-8 holds no lone surrogate; a short line without NUL is keepable
                    if (len(line) > _SHORT or "\x00" in line) and (
                        problem := edge_problem(*parts, roles=_ROLES)
                    ) is not None:
                        raise InputError(f"{path}:{number}: {problem}")
                    yield parts[0], parts[1], parts[2]
                elif line.strip():
                    raise InputError(
                        f"{path}:{number}: expected 'subject|relation|object' with 3 non-empty fields, "
                        f"got {shown(line.rstrip())}"
                    )
    except UnicodeDecodeError as exc:
        number, byte = first_undecodable(path.read_bytes())  # read again only on that error
        raise InputError(
            f"{path}:{number}: not UTF-8 text (byte 0x{byte}): a triples file holds "
            "'subject|relation|object' lines (a graph database or Parquet graph is not one)"
        ) from exc


def write_triples(path: str | Path, triples: Iterable[tuple[str, str, str]]) -> int:
    """Write ``subject|relation|object`` lines atomically; returns the number written."""
    count = 0
    with atomic_path(Path(path)) as tmp, tmp.open("w", encoding="utf-8") as out:
        for triple in triples:
            if len(triple) != 3 or any(not t or "|" in t or "\n" in t for t in triple):
                raise InputError(
                    f"cannot write triple {triple!r}: fields must be non-empty, without | or newline"
                )
            out.write("|".join(triple) + "\n")
            count += 1
    return count
