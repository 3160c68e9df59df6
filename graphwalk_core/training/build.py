"""Decision examples from eval datasets (labeled questions over their graph) and from trace folders."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.training.examples import (
    DecisionExample,
    LabeledQuestion,
    read_traces,
    trace_examples,
    weak_examples,
)

#: Labeled datasets ``graphwalk train decider --dataset`` knows.
DATASETS = ("metaqa",)


def labeled(questions: Iterable[Question], split: str, where: Path | None = None) -> list[LabeledQuestion]:
    """Labeled questions from dataset questions: text, gold start, gold answers (nothing else is read); a
    question without a start is an InputError naming ``where`` (the questions' file) when given."""
    out = []
    for q in questions:
        if q.gold_start is None:
            file = f"{where}: " if where is not None else ""
            raise InputError(f"{file}question {q.id} has no start node: weak supervision needs one")
        mentions = [q.topic] if q.topic else [q.gold_start]
        out.append(LabeledQuestion(q.id, q.text, [q.gold_start], list(q.gold), split, mentions))
    return out


def labeled_graph(datasets: Sequence[Dataset]) -> Knowledge:
    """The one graph ``datasets`` are over, to label their questions on; a dataset over another graph than
    the first, or over passages (no graph before ingestion, no start nodes), is an InputError naming it."""
    first = datasets[0]
    for ds in datasets:
        if ds.knowledge.graph == "passages":
            raise InputError(
                f"{ds.name}-{ds.split} is answered from passages, not a graph: weak supervision labels "
                "questions over a graph from their start node (metaqa, 2wiki, custom)"
            )
        if ds.knowledge != first.knowledge:
            raise InputError(
                f"{ds.name}-{ds.split} is over another graph than {first.name}-{first.split}: label one "
                "graph's datasets at a time"
            )
    return first.knowledge


async def dataset_examples(
    datasets: Sequence[Dataset],
    store: GraphStore,
    *,
    max_depth: int = 3,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[DecisionExample], int]:
    """Weak-supervision examples of the questions of ``datasets`` (all over the graph ``store`` holds) over
    ``store``, and how many had none; datasets :func:`labeled_graph` refuses are an InputError."""
    labeled_graph(datasets)
    questions = [q for ds in datasets for q in labeled(ds.questions, ds.split)]
    return await weak_examples(store, questions, max_depth=max_depth, progress=progress)


def folder_trace_examples(folder: Path, *, split: str = "train") -> list[DecisionExample]:
    """Soft-label examples from every trace file under ``folder`` (question id: the file's path)."""
    return [
        ex
        for name, trace in read_traces(folder)
        for ex in trace_examples(trace, question_id=name, split=split)
    ]


async def labeled_sources(
    *,
    dataset: str | None,
    questions: Path | None,
    graph: str | None,
    split: str,
    hops: Sequence[int] | None = None,
    n: int | None = None,
    data_dir: Path | None = None,
) -> tuple[GraphStore, list[LabeledQuestion], str | None]:
    """The graph, labeled questions (a built-in ``dataset``, or a ``questions`` file over ``graph``) and the
    graph's identity for the model's manifest (:func:`~graphwalk_core.training.graphs.store_identity`)."""
    from graphwalk_core.eval.datasets.custom import read_custom_questions
    from graphwalk_core.eval.datasets.registry import load_dataset
    from graphwalk_core.eval.systems.graphs import graph_from_triples
    from graphwalk_core.stores.open import open_store
    from graphwalk_core.training.graphs import store_identity

    if (dataset is None) == (questions is None):
        raise InputError("give exactly one of --dataset NAME or --questions FILE")
    if dataset is not None:
        if dataset not in DATASETS:
            raise InputError(f"unknown dataset {dataset!r}: expected one of {list(DATASETS)}")
        sets = [
            load_dataset(f"metaqa-{h}hop", split=split, n=n, data_dir=data_dir) for h in hops or (1, 2, 3)
        ]
        found = [q for ds in sets for q in labeled(ds.questions, split)]
        store = open_store(graph) if graph is not None else graph_from_triples(sets[0].knowledge)
    else:
        assert questions is not None
        if graph is None:
            raise InputError("--questions needs --graph (the graph the questions are about)")
        store = open_store(graph)
        found = await starts_by_name(
            store, labeled(read_custom_questions(questions), split, questions), questions
        )
    return store, found, await store_identity(store)


async def starts_by_name(
    store: GraphStore, questions: list[LabeledQuestion], where: Path
) -> list[LabeledQuestion]:
    """``questions`` with each start that is no node id of ``store`` replaced by the nodes of that exact name
    or alias (an ingested graph's ids are hashes, so a question file names its starts); a start that is
    neither is an InputError naming ``where``, the question and close names."""
    from dataclasses import replace

    from graphwalk_core.traversal.ask import did_you_mean, named_starts

    named, names = await named_starts(store, [s for q in questions for s in q.start])
    out = []
    for q in questions:
        for start in q.start:
            if not named[start]:
                raise InputError(
                    f"{where}: question {q.id}: start {start!r} is neither a node id nor a node name of the "
                    f"graph{did_you_mean(start, names)}"
                )
        out.append(replace(q, start=list(dict.fromkeys(node for s in q.start for node in named[s]))))
    return out
