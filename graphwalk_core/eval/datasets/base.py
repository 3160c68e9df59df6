"""Dataset model: questions, the knowledge a system answers from, seeded subsets, data paths."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graphwalk_core.errors import InputError, MissingFileError, OptionError
from graphwalk_core.eval.metrics import MatchMode
from graphwalk_core.files import file_sha256, first_undecodable, json_error
from graphwalk_core.model import content_hash

REPO_ROOT = Path(__file__).resolve().parents[3]


class Question(BaseModel):
    """One evaluation question. ``gold`` is the full answer set; ``extra['start']`` a gold entry node."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    gold: list[str]
    hops: int | None = None
    qtype: str | None = None
    topic: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def gold_start(self) -> str | None:
        """The gold entry node (MetaQA's bracketed topic, 2Wiki's first evidence subject), if known."""
        return self.extra.get("start") or None

    def content_key(self) -> str:
        """A hash of everything in the question (text, gold, start, hops, …): a checkpointed answer is
        reused only for the question exactly as it was asked."""
        return content_hash(self)


class Passage(BaseModel):
    """A text passage; ``id`` becomes the document id whose provenance the graph keeps."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    text: str


class Knowledge(BaseModel):
    """What systems answer from: a triples file, in-memory triples, and/or a corpus of passages.

    ``graph`` says where a graph comes from: ``triples`` (``kb_path`` or ``triples``) or ``passages``
    (built by the ingestion pipeline).
    """

    model_config = ConfigDict(frozen=True)

    graph: Literal["triples", "passages"]
    kb_path: Path | None = None
    triples: tuple[tuple[str, str, str], ...] = ()
    passages: tuple[Passage, ...] = ()
    source: str = "corpus"

    def fingerprint(self) -> str:
        """A content hash of the knowledge itself (the KB file's bytes, the triples, the passages).

        Eval run ids include it, so answers over a changed graph are never reused from a checkpoint.
        """
        kb = file_sha256(self.kb_path) if self.kb_path is not None else None
        return content_hash(
            [self.graph, self.source, kb, list(self.triples), [p.model_dump() for p in self.passages]]
        )

    def key(self) -> str:
        """A stable identity (used to cache a graph built from this knowledge): its content fingerprint,
        so a KB file rewritten with the same size and timestamp never serves the old graph."""
        return self.fingerprint()


class Dataset(BaseModel):
    """A named split: its questions and the knowledge to answer them from."""

    model_config = ConfigDict(frozen=True)

    name: str
    split: str
    questions: list[Question]
    knowledge: Knowledge
    #: How answers are compared: ``exact`` entity sets, or ``token`` (free text); see metrics.py.
    match: MatchMode = "exact"
    #: Anything worth recording with a run (files, counts, subset seed).
    info: dict[str, Any] = Field(default_factory=dict)


def unique_id(seen: dict[str, str], qid: str, at: str, where: str) -> None:
    """Remember that question ``qid`` is ``at`` (``line 3``, ``record 2``) of a file; one already seen is an
    InputError at ``where`` naming the first: a seeded subset would keep one of the two, and a loader
    keyed by id would give both one's passages."""
    first = seen.setdefault(qid, at)
    if first != at:
        raise InputError(f"{where}: question id {qid!r} repeats the one at {first}")


def subset_ids(ids: list[str], n: int, seed: int) -> list[str]:
    """The ``n`` ids with the smallest sha256 of ``"<seed>\\0<id>"``: independent of file order."""
    if n < 1:
        raise OptionError("{n} must be at least 1, got {got}", got=n)
    return sorted(ids, key=lambda i: hashlib.sha256(f"{seed}\x00{i}".encode()).hexdigest())[:n]


def seeded_subset(questions: list[Question], n: int | None, seed: int) -> list[Question]:
    """The ``n`` questions chosen by ``subset_ids`` (in that order); ``n=None`` keeps all in file order."""
    if n is None:
        return list(questions)
    by_id = {q.id: q for q in questions}
    return [by_id[i] for i in subset_ids(list(by_id), n, seed)]


def default_data_dir() -> Path:
    """``$GRAPHWALK_DATA_DIR``, else ``../shared/data`` beside the repository."""
    env = os.environ.get("GRAPHWALK_DATA_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def require_file(path: Path, what: str, *, option: str | None = None) -> Path:
    """``path`` if it is a file, else an OptionError naming it, what it should hold and the ``option``
    (key) that gave it (by default it came from the data folder, option ``data_dir``)."""
    if not path.is_file():
        hint = f"check {{{option}}}" if option else "set {data_dir} or GRAPHWALK_DATA_DIR"
        if path.is_dir():
            raise OptionError(f"{{what}} {{file}} is a folder, not a file ({hint})", what=what, file=path)
        raise MissingFileError(f"{{what}} not found: {{file}} ({hint})", what=what, file=path)
    return path


def read_text_file(path: Path) -> str:
    """``path`` decoded as UTF-8 (a leading byte-order mark, as Excel writes, is dropped); other bytes
    are an InputError naming file and line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, byte = first_undecodable(data)
        raise InputError(f"{path}:{line}: not UTF-8 text (byte 0x{byte}); save the file as UTF-8") from exc


def parse_json(text: str, path: Path) -> Any:
    """``text`` (the contents of ``path``) as JSON; invalid JSON is an InputError naming file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: {json_error(exc)}") from exc


def jsonl_rows(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of ``text`` (the contents of ``path``) as JSON Lines;
    an invalid line is an InputError naming file and line."""
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{i}: {json_error(exc)}") from exc
