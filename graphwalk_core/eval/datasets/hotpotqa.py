"""HotpotQA distractor questions (IRCoT JSONL or the original JSON) over their pooled paragraphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import (
    Dataset,
    Knowledge,
    Passage,
    Question,
    jsonl_rows,
    parse_json,
    read_text_file,
    require_file,
    seeded_subset,
    unique_id,
)
from graphwalk_core.eval.datasets.passages import PassagePool

DEFAULT_FILE = Path("hotpotqa") / "hotpotqa_dev_ircotfmt_300.jsonl"
#: The IRCoT record key of each Question field, for errors.
_IRCOT_KEYS = {"id": "question_id", "text": "question_text", "gold": "answers_objects spans"}


def _ircot_record(record: dict[str, Any], where: str) -> tuple[Question, list[tuple[str, str, bool]]]:
    try:
        answers = [span for obj in record["answers_objects"] for span in obj["spans"]]
        contexts = [
            (c["title"], c["paragraph_text"], bool(c.get("is_supporting"))) for c in record["contexts"]
        ]
        question = Question(id=str(record["question_id"]), text=record["question_text"], gold=answers)
    except (KeyError, TypeError) as exc:
        raise InputError(f"{where}: not an IRCoT HotpotQA record (missing {exc})") from exc
    except ValidationError as exc:  # a value of the wrong type
        error = exc.errors()[0]
        key = _IRCOT_KEYS.get(str(error["loc"][0]), str(error["loc"][0])) if error["loc"] else "record"
        raise InputError(f"{where}: not an IRCoT HotpotQA record ({key}: {error['msg']})") from exc
    return question, contexts


def _original_record(record: dict[str, Any], where: str) -> tuple[Question, list[tuple[str, str, bool]]]:
    try:
        supporting = {title for title, _ in record["supporting_facts"]}
        contexts = [
            (title, "".join(sents).strip(), title in supporting) for title, sents in record["context"]
        ]
        question = Question(
            id=str(record["_id"]),
            text=record["question"],
            gold=[record["answer"]],
            qtype=record.get("type"),
            extra={"level": record.get("level")},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: not an original-format HotpotQA record ({exc})") from exc
    return question, contexts


def read_hotpotqa(path: Path) -> list[tuple[Question, list[tuple[str, str, bool]]]]:
    """Records of either format: ``.jsonl`` is IRCoT's, a ``.json`` list is the original; a repeated
    question id is an InputError."""
    require_file(path, "HotpotQA file")
    text = read_text_file(path)
    seen: dict[str, str] = {}
    out = []
    if path.suffix == ".jsonl":
        for i, record in jsonl_rows(text, path):
            out.append(_ircot_record(record, f"{path}:{i}"))
            unique_id(seen, out[-1][0].id, f"line {i}", f"{path}:{i}")
        return out
    records = parse_json(text, path)
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a JSON list of HotpotQA records")
    for i, r in enumerate(records):
        out.append(_original_record(r, f"{path}: record {i}"))
        unique_id(seen, out[-1][0].id, f"record {i}", f"{path}: record {i}")
    return out


def load_hotpotqa(path: Path, *, split: str, n: int | None, seed: int) -> Dataset:
    """A seeded subset of questions; the knowledge is the pooled paragraphs of those questions."""
    records = read_hotpotqa(path)
    by_id = {q.id: (q, ctx) for q, ctx in records}
    chosen = seeded_subset([q for q, _ in records], n, seed)
    pool = PassagePool()
    questions = []
    for q in chosen:
        _, contexts = by_id[q.id]
        ids = [pool.add(title, text) for title, text, _ in contexts]
        supporting = [pid for pid, (_, _, sup) in zip(ids, contexts, strict=True) if sup]
        questions.append(q.model_copy(update={"extra": {**q.extra, "supporting": supporting}}))
    passages: tuple[Passage, ...] = tuple(pool.passages)
    return Dataset(
        name="hotpotqa",
        split=split,
        questions=questions,
        knowledge=Knowledge(graph="passages", passages=passages, source="hotpotqa"),
        match="token",
        info={"file": str(path), "passages": len(passages)},
    )
