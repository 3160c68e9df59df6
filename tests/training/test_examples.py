"""Decision examples: weak supervision over relation paths, traces as soft labels, the Parquet table."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphwalk_core.decisions import FakeDecisionBackend
from graphwalk_core.decisions.views import DecisionView
from graphwalk_core.model import Edge
from graphwalk_core.training.examples import (
    LabeledQuestion,
    PathLabeler,
    read_examples,
    trace_examples,
    weak_examples,
    write_examples,
)
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.engine import Traverser

from .kb import questions, store

FILM_MOVES = (("directed_by", "out"), ("release_year", "out"), ("starred_actors", "out"))


async def test_one_hop_question_gives_the_move_then_stop() -> None:
    q = LabeledQuestion("q", "who directed Film 1", ["Film 1"], ["Director 1"], "dev", ["Film 1"])
    examples = await PathLabeler(store()).examples(q)
    assert [(ex.view, ex.target, ex.kind) for ex in examples] == [
        (DecisionView("who directed ENTITY", (), FILM_MOVES), (1.0, 0.0, 0.0), "first"),
        (
            DecisionView("who directed ENTITY", (("directed_by", "out"),), (("directed_by", "in"), None)),
            (0.0, 1.0),
            "stop",
        ),
    ]
    assert {ex.source for ex in examples} == {"weak"}


async def test_two_hops_shortest_best_path_and_stop_at_its_end() -> None:
    q = questions(range(12))[2]  # which films share the director of Film 0: Film 4, Film 8
    assert q.gold == ["Film 4", "Film 8"]
    examples = await PathLabeler(store()).examples(q)
    assert [(ex.view.path, ex.target) for ex in examples] == [
        ((), (1.0, 0.0, 0.0)),
        ((("directed_by", "out"),), (1.0, 0.0)),  # back along directed_by, not STOP
        ((("directed_by", "out"), ("directed_by", "in")), (0.0, 0.0, 0.0, 1.0)),
    ]
    assert examples[1].kind == "later" and examples[2].kind == "stop"
    assert examples[0].view.question == "which films share the director of ENTITY"


async def test_tied_paths_share_the_target() -> None:
    graph = store()
    # Film 1 is also written by its director: two paths reach the gold
    await graph.upsert_edge(Edge(source="Film 1", target="Director 1", type="written_by"))
    q = LabeledQuestion("q", "who made Film 1", ["Film 1"], ["Director 1"], "dev", ["Film 1"])
    first = (await PathLabeler(graph).examples(q))[0]
    assert dict(zip(first.view.options, first.target, strict=True)) == {
        ("directed_by", "out"): 0.5,
        ("starred_actors", "out"): 0.0,
        ("release_year", "out"): 0.0,
        ("written_by", "out"): 0.5,
    }


async def test_one_graph_gives_the_same_example_bytes_from_memory_and_sqlite(tmp_path: Path) -> None:
    """Moves are offered in the engine's order (outgoing, then by relation), not in the store's (the
    memory store keeps insertion order, the SQL store key order): the same graph read from a triples
    file and from SQLite gives the same examples, so the same table and the same model."""
    from graphwalk_core.stores.base import upsert_many
    from graphwalk_core.stores.sql import SQLGraphStore

    memory = store()
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'kb.sqlite'}")
    await upsert_many(sql, [n async for n in memory.iter_nodes()], [e async for e in memory.iter_edges()])
    tables = []
    for graph in (memory, sql):
        examples, unlabeled = await weak_examples(graph, questions(range(12)))
        assert unlabeled == 0 and len(examples) == 84
        tables.append(write_examples(examples, tmp_path / f"{len(tables)}.parquet").read_bytes())
    await sql.close()
    assert tables[0] == tables[1]


async def test_unreachable_gold_gives_no_example() -> None:
    q = LabeledQuestion("q", "who directed Film 1", ["Film 1"], ["Nobody"], "dev")
    examples, unlabeled = await weak_examples(store(), [q, *questions(range(1))])
    assert unlabeled == 1
    assert {ex.question_id for ex in examples} == {"dir-0", "year-0", "same-0"}


async def test_trace_steps_become_soft_labels_with_their_path(tmp_path: Path) -> None:
    config = TraversalConfig(hop_mode="relation", strategy="greedy", allow_stop_at_start=False)
    result = await Traverser(store(), FakeDecisionBackend(seed=3), config=config).walk(
        "who directed Film 2", ["Film 2"]
    )
    examples = trace_examples(result.trace, question_id="t1")
    asked = [s for s in result.trace.steps if not s.forced]
    assert len(examples) == len(asked) > 0
    for ex, step in zip(examples, asked, strict=True):
        assert ex.source == "trace" and ex.view.question == "who directed ENTITY"
        assert ex.target == tuple(step.distribution.values())
        assert len(ex.view.path) == step.depth
    # the path of each step is the moves the walk took to get there
    taken = [s.options[s.chosen] for s in asked if s.chosen != "STOP"]
    for ex in examples[1:]:
        assert [m[0] for m in ex.view.path] == [o["relation"] for o in taken[: len(ex.view.path)]]


async def test_trace_examples_mask_every_start_as_the_live_decider_does() -> None:
    """A walk from two starts of an ingested graph (ids are hashes, not names): the live decider reads the
    question with every start's name masked, but training masked only the first start step's names, so it
    learned from another text than the one it later read."""
    from graphwalk_core.decisions.views import view_of
    from graphwalk_core.model import Node
    from graphwalk_core.stores.memory import MemoryGraphStore

    graph = MemoryGraphStore()
    for node_id, name in (("n_a", "Film 1"), ("n_b", "Film 2"), ("n_d", "Director 1")):
        await graph.upsert_node(Node(id=node_id, name=name))
    for film in ("n_a", "n_b"):
        await graph.upsert_edge(Edge(source=film, target="n_d", type="directed_by"))
    live: list[str] = []

    def script(question, state):  # type: ignore[no-untyped-def]
        live.append(view_of(state, question).question)
        return {label: 1.0 / len(question.options) for label in question.options}

    config = TraversalConfig(hop_mode="entity", strategy="beam", beam_width=2, allow_stop_at_start=False)
    result = await Traverser(graph, FakeDecisionBackend(script=script), config=config).walk(
        "who directed Film 1 and Film 2", ["n_a", "n_b"]
    )
    examples = trace_examples(result.trace, question_id="t")
    assert examples and set(live) == {"who directed ENTITY and ENTITY"}
    assert {ex.view.question for ex in examples} == {"who directed ENTITY and ENTITY"}


async def test_table_round_trip(tmp_path: Path) -> None:
    examples, _ = await weak_examples(store(), questions(range(3)))
    path = write_examples(examples, tmp_path / "decision_examples.parquet")
    assert read_examples(path) == examples


def test_masking_replaces_whole_mentions_only() -> None:
    from graphwalk_core.decisions.views import mask_mentions

    assert (
        mask_mentions("describe the movie O in a few words", ["O"])
        == "describe the movie ENTITY in a few words"
    )
    assert mask_mentions("who directed Heat (1995)?", ["Heat (1995)"]) == "who directed ENTITY?"
    assert mask_mentions("films like Alien and Aliens", ["Alien", "Aliens"]) == "films like ENTITY and ENTITY"


async def test_datasets_over_different_graphs_are_refused() -> None:
    """``dataset_examples`` labels every dataset over the one store it is given (the Dagster asset opens
    the first dataset's graph): a dataset over another graph is an InputError naming both, not its
    questions labeled over the wrong graph (most of them silently without a path)."""
    import pytest

    from graphwalk_core.errors import InputError
    from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
    from graphwalk_core.training.build import dataset_examples

    from .kb import TRIPLES

    asked = [
        Question(
            id="a", text="who directed Film 1", gold=["Director 1"], topic="Film 1", extra={"start": "Film 1"}
        )
    ]
    films = Dataset(
        name="films",
        split="dev",
        questions=asked,
        knowledge=Knowledge(graph="triples", triples=tuple(TRIPLES)),
    )
    other = Knowledge(graph="triples", triples=(("Alice", "works_at", "Acme"),))
    people = films.model_copy(update={"name": "people", "knowledge": other})
    assert len((await dataset_examples([films, films], store()))[0]) == 4
    with pytest.raises(
        InputError, match=r"^people-dev is over another graph than films-dev: label one graph"
    ):
        await dataset_examples([films, people], store())


async def test_a_write_of_examples_that_fails_leaves_the_earlier_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``graphwalk train --examples-out`` wrote the table in place: a run killed (or out of disk) while
    writing left a truncated file where the earlier examples were, and a run reading them meanwhile read
    part of a file. The table is now written beside and renamed over."""
    import pyarrow.parquet as pq

    examples, _ = await weak_examples(store(), questions(range(3)))
    path = write_examples(examples[:2], tmp_path / "decision_examples.parquet")

    def disk_full(self: pq.ParquetWriter, *args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_examples(examples, path)
    assert read_examples(path) == examples[:2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decision_examples.parquet"]
