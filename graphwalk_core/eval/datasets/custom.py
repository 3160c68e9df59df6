"""Custom questions from CSV or JSONL: ``question``, ``answers``, optional ``start``, ``id``, ``hops``,
``supporting`` (titles of the corpus passages that support the answer; scored as retrieval recall)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphwalk_core.errors import InputError, OptionError
from graphwalk_core.eval.datasets.base import (
    Dataset,
    Knowledge,
    Question,
    jsonl_rows,
    read_text_file,
    require_file,
    seeded_subset,
    unique_id,
)
from graphwalk_core.eval.datasets.twowiki import load_corpus
from graphwalk_core.eval.metrics import answer_set
from graphwalk_core.ingest.sources.files import csv_rows
from graphwalk_core.stores.open import SQLITE_SUFFIXES, is_parquet_graph


def _answers(value: Any, where: str, column: str = "answers") -> list[str]:
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return [a for a in value if a.strip()]
    if isinstance(value, str):
        return [a.strip() for a in value.split("|") if a.strip()]
    raise InputError(f"{where}: '{column}' must be a list of strings or a '|'-separated string")


def _text(row: dict[str, Any], key: str, where: str) -> str | None:
    """The optional text field ``key`` (None when absent or empty); another JSON value is an InputError."""
    value = row.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: '{key}' must be a string, got {value!r}")
    return value


def _question(row: dict[str, Any], index: int, where: str) -> Question:
    text = str(row.get("question") or "").strip()
    if not text:
        raise InputError(f"{where}: 'question' is missing or empty")
    if "answers" not in row:
        raise InputError(f"{where}: 'answers' is missing")
    gold = _answers(row["answers"], where)
    if not gold:
        raise InputError(f"{where}: 'answers' is empty")
    if not answer_set(gold):  # only an empty prediction would match it
        raise InputError(
            f"{where}: 'answers' {gold} are nothing once normalized (compared lowercased, without "
            "punctuation and the words a/an/the)"
        )
    hops = row.get("hops")
    try:
        if isinstance(hops, bool) or not isinstance(hops, int | str | None):
            raise ValueError(hops)  # int() would cut 2.5 to 2 and read true as 1
        hops_value = int(hops) if hops not in (None, "") else None
    except ValueError as exc:
        raise InputError(f"{where}: 'hops' must be an integer, got {hops!r}") from exc
    start = _text(row, "start", where)
    extra: dict[str, Any] = {"start": start} if start else {}
    if row.get("supporting") not in (None, "", []):
        extra["supporting"] = _answers(row["supporting"], where, "supporting")
    return Question(
        id=str(row.get("id") or f"q{index:05d}"),
        text=text,
        gold=gold,
        hops=hops_value,
        qtype=_text(row, "qtype", where),
        topic=start,
        extra=extra,
    )


def _csv_records(path: Path, text: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(first line, row by header name) of each non-blank record after the header; a record that does not
    parse, or has another number of fields than the header (an unquoted comma), is an InputError naming
    its line."""
    records = csv_rows(text)
    first = next(records, None)
    if first is None:
        return
    line, _, header, error = first
    if header is None:
        raise InputError(f"{path}:{line}: {error} (in the header)")
    names = [name.strip() for name in header]
    for line, _, fields, error in records:
        if error is not None or fields is None:
            raise InputError(f"{path}:{line}: {error}")
        yield line, dict(zip(names, fields, strict=True))


def read_custom_questions(path: Path) -> list[Question]:
    """Rows of a ``.csv`` (header row) or ``.jsonl`` file (UTF-8, any suffix case) as questions;
    ids must be unique, and the file must hold at least one."""
    require_file(path, "custom question file", option="path")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise InputError(f"{path}: custom questions must be .csv or .jsonl, got {path.suffix!r}")
    text = read_text_file(path)
    questions: list[Question] = []
    seen: dict[str, str] = {}
    if suffix == ".csv":
        for index, (i, row) in enumerate(_csv_records(path, text), start=1):
            questions.append(_question(row, index, f"{path}:{i}"))
            unique_id(seen, questions[-1].id, f"line {i}", f"{path}:{i}")
    else:
        for i, row in jsonl_rows(text, path):
            if not isinstance(row, dict):
                raise InputError(f"{path}:{i}: expected a JSON object")
            questions.append(_question(row, i, f"{path}:{i}"))
            unique_id(seen, questions[-1].id, f"line {i}", f"{path}:{i}")
    if not questions:
        raise InputError(f"no questions in {path}")
    return questions


def load_custom(
    path: Path, *, split: str, n: int | None, seed: int, kb: Path | None, corpus: Path | None
) -> Dataset:
    """Custom questions over a triples file (``kb``) or a ``[{title, text}]`` corpus.

    A question's ``supporting`` titles must name corpus passages (they are passage ids).
    """
    if (kb is None) == (corpus is None):
        raise OptionError("a custom dataset needs exactly one of {kb} (triples) or {corpus} (passages)")
    questions = read_custom_questions(path)
    if kb is not None and kb.is_dir() and not is_parquet_graph(kb):
        raise OptionError(
            "{kb} expects a subject|relation|object triples text file, not the folder {given}; a folder of "
            "documents is a source: ingest it into a graph first (`graphwalk ingest {given} --graph "
            "graph.sqlite`), then `graphwalk graph export graph.sqlite --format triples --out kb.txt`",
            given=kb,
        )
    if kb is not None and (kb.is_dir() or kb.suffix.lower() in SQLITE_SUFFIXES):
        raise OptionError(
            "{kb} expects a subject|relation|object triples text file, not the database or folder {given} "
            "(for a graph: `graphwalk graph export {given} --format triples --out kb.txt`)",
            given=kb,
        )
    if kb is not None:
        knowledge = Knowledge(
            graph="triples", kb_path=require_file(kb, "knowledge graph file", option="kb"), source="custom"
        )
    else:
        assert corpus is not None
        knowledge = Knowledge(graph="passages", passages=tuple(load_corpus(corpus)), source="custom")
    ids = {p.id for p in knowledge.passages}
    for q in questions:
        missing = [t for t in q.extra.get("supporting", []) if t not in ids]
        if missing and kb is not None:
            raise OptionError(
                "{file}: question {id}: 'supporting' passages need {corpus}, not {kb}", file=path, id=q.id
            )
        if missing:
            raise InputError(f"{path}: question {q.id}: supporting titles not in {corpus}: {missing}")
    return Dataset(
        name="custom",
        split=split,
        questions=seeded_subset(questions, n, seed),
        knowledge=knowledge,
        match="exact",
        info={"file": str(path)},
    )
