"""2WikiMultihopQA: official-format questions over the pooled evidence graph, and the retrieval set."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import (
    Dataset,
    Knowledge,
    Passage,
    Question,
    parse_json,
    read_text_file,
    require_file,
    seeded_subset,
    unique_id,
)
from graphwalk_core.eval.datasets.passages import PassagePool

DEFAULT_FILE = Path("2wiki") / "format_sample_2.json"
CORPUS_FILE = Path("2wiki") / "corpus.json"
RETRIEVAL_FILE = Path("2wiki") / "retrieval_questions_51.json"


def _read_json(path: Path, what: str) -> Any:
    return parse_json(read_text_file(require_file(path, what)), path)


def _listish(value: Any) -> Any:
    """2Wiki releases store some list fields as Python-literal strings; accept both."""
    if isinstance(value, str):
        return ast.literal_eval(value)
    return value


def load_twowiki(path: Path, *, split: str, n: int | None, seed: int) -> Dataset:
    """Questions (all four types) and a graph pooled from every record's evidence triples."""
    records = _read_json(path, "2Wiki question file")
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a JSON list of 2Wiki records")
    questions: list[Question] = []
    triples: dict[tuple[str, str, str], None] = {}
    pool = PassagePool()
    seen: dict[str, str] = {}
    for i, record in enumerate(records):
        try:
            evidences = [tuple(e) for e in _listish(record["evidences"])]
            contexts = _listish(record["context"])
            supporting_titles = {title for title, _ in _listish(record["supporting_facts"])}
            ids = [pool.add(title, " ".join(s.strip() for s in sents)) for title, sents in contexts]
            supporting = [pid for pid, (t, _) in zip(ids, contexts, strict=True) if t in supporting_titles]
            for s, r, o in evidences:
                triples.setdefault((str(s), str(r), str(o)), None)
            questions.append(
                Question(
                    id=str(record["_id"]),
                    text=record["question"],
                    gold=[record["answer"]],
                    hops=len(evidences) or None,
                    qtype=record.get("type"),
                    extra={
                        "start": evidences[0][0] if evidences else None,
                        "evidences": [list(e) for e in evidences],
                        "supporting": supporting,
                    },
                )
            )
        except (KeyError, TypeError, ValueError, SyntaxError) as exc:
            raise InputError(f"{path}: record {i} is not an official 2Wiki record ({exc!r})") from exc
        unique_id(seen, questions[-1].id, f"record {i}", f"{path}: record {i}")
    passages: tuple[Passage, ...] = tuple(pool.passages)
    return Dataset(
        name="2wiki",
        split=split,
        questions=seeded_subset(questions, n, seed),
        knowledge=Knowledge(graph="triples", triples=tuple(triples), passages=passages, source="2wiki"),
        match="token",
        info={"file": str(path), "triples": len(triples), "passages": len(passages)},
    )


def load_corpus(path: Path) -> list[Passage]:
    """A ``[{"title", "text"}, ...]`` corpus; ids are titles (``#2`` on a clash)."""
    records = _read_json(path, "passage corpus")
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a JSON list of {{title, text}} passages")
    pool = PassagePool()
    for i, record in enumerate(records):
        if not isinstance(record, dict) or "title" not in record or "text" not in record:
            raise InputError(f"{path}: passage {i} needs 'title' and 'text'")
        pool.add(str(record["title"]), str(record["text"]))
    return pool.passages


def load_twowiki_retrieval(
    corpus: Path, questions_path: Path, *, split: str, n: int | None, seed: int
) -> Dataset:
    """Retrieval questions (no answers): a question is solved when all its supporting passages are found."""
    passages = load_corpus(corpus)
    titles = {p.title for p in passages}
    records = _read_json(questions_path, "2Wiki retrieval questions")
    if not isinstance(records, list):
        raise InputError(f"{questions_path}: expected a JSON list of {{question, supporting_titles}}")
    questions = []
    for i, record in enumerate(records):
        try:
            text, support = record["question"], list(record["supporting_titles"])
        except (KeyError, TypeError) as exc:
            raise InputError(
                f"{questions_path}: record {i} needs 'question' and 'supporting_titles'"
            ) from exc
        missing = [t for t in support if t not in titles]
        if missing:
            raise InputError(f"{questions_path}: record {i}: supporting titles not in {corpus}: {missing}")
        questions.append(
            Question(id=f"2wr-{i:03d}", text=text, gold=[], extra={"supporting": support, "no_gold": True})
        )
    return Dataset(
        name="2wiki-retrieval",
        split=split,
        questions=seeded_subset(questions, n, seed),
        knowledge=Knowledge(graph="passages", passages=tuple(passages), source="2wiki"),
        match="token",
        info={"corpus": str(corpus), "questions": str(questions_path), "passages": len(passages)},
    )
