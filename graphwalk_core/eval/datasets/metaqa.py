"""MetaQA vanilla 1/2/3-hop questions over the MetaQA KB (``kb.txt``)."""

from __future__ import annotations

import re
from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import (
    Dataset,
    Knowledge,
    Question,
    read_text_file,
    require_file,
    subset_ids,
)

_TOPIC = re.compile(r"\[([^\]]+)\]")
SPLITS = ("dev", "test")


def parse_metaqa_line(line: str, *, path: Path, lineno: int) -> tuple[str, str, list[str]]:
    """(question without brackets, topic entity, gold answers) from ``question<TAB>a|b|c``."""
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 2:
        raise InputError(f"{path}:{lineno}: expected 'question<TAB>answers', got {line[:80]!r}")
    question, answers = parts
    topics = _TOPIC.findall(question)
    if len(topics) != 1:
        raise InputError(f"{path}:{lineno}: expected one [bracketed] topic entity, found {len(topics)}")
    text = _TOPIC.sub(lambda m: m.group(1), question).strip()
    return text, topics[0], [a for a in answers.split("|") if a]


def metaqa_files(hops: int, split: str) -> tuple[Path, Path, Path]:
    """The QA, qtype and KB files of one hop count and split, relative to the data folder."""
    if hops not in (1, 2, 3):
        raise InputError(f"MetaQA hops must be 1, 2 or 3, got {hops}")
    if split not in SPLITS:
        raise InputError(f"MetaQA split must be one of {SPLITS}, got {split!r}")
    folder = Path("metaqa") / f"{hops}-hop"
    return folder / "vanilla" / f"qa_{split}.txt", folder / f"qa_{split}_qtype.txt", Path("metaqa") / "kb.txt"


def load_metaqa(
    hops: int,
    *,
    split: str,
    data_dir: Path,
    kb_path: Path | None = None,
    n: int | None = None,
    seed: int = 0,
) -> Dataset:
    """The questions of one hop count and split: all, or the seeded subset of ``n`` (in subset order)."""
    qa_file, qtype_file, kb_file = metaqa_files(hops, split)
    qa_path = require_file(data_dir / qa_file, "MetaQA QA file")
    qtype_path = require_file(data_dir / qtype_file, "MetaQA qtype file")
    kb = require_file(kb_path or data_dir / kb_file, "MetaQA KB")
    qa_lines = read_text_file(qa_path).splitlines()
    qtypes = read_text_file(qtype_path).splitlines()
    if len(qtypes) != len(qa_lines):
        raise InputError(
            f"{qtype_path}: {len(qtypes)} lines but {qa_path} has {len(qa_lines)}; they must pair up"
        )
    ids = [f"metaqa-{hops}hop-{split}-{i:05d}" for i in range(1, len(qa_lines) + 1)]
    position = {qid: k for k, qid in enumerate(ids)}
    chosen = range(len(ids)) if n is None else [position[qid] for qid in subset_ids(ids, n, seed)]
    questions = []
    for k in chosen:
        i, line, qtype = k + 1, qa_lines[k], qtypes[k]
        text, topic, gold = parse_metaqa_line(line, path=qa_path, lineno=i)
        questions.append(
            Question.model_construct(  # fields are parsed strings already: skip validation
                id=ids[k],
                text=text,
                gold=gold,
                hops=hops,
                qtype=qtype.strip() or None,
                topic=topic,
                extra={"start": topic},
            )
        )
    return Dataset(
        name=f"metaqa-{hops}hop",
        split=split,
        questions=questions,
        knowledge=Knowledge(graph="triples", kb_path=kb, source="metaqa"),
        match="exact",
        info={"qa_file": str(qa_path), "kb": str(kb), "seed": seed},
    )


#: MetaQA node types from the relation an entity appears in: subjects are films.
METAQA_OBJECT_TYPES: dict[str, str] = {
    "directed_by": "person",
    "written_by": "person",
    "starred_actors": "person",
    "release_year": "year",
    "in_language": "language",
    "has_tags": "tag",
    "has_genre": "genre",
    "has_imdb_votes": "imdb_votes",
    "has_imdb_rating": "imdb_rating",
}


def metaqa_node_type(relation: str, role: str) -> str:
    """``film`` for subjects, the relation's object type for objects (``entity`` when unknown)."""
    if role == "subject":
        return "film"
    return METAQA_OBJECT_TYPES.get(relation, "entity")
