"""A re-materialized eval partition answers over the current graph, never from a stale checkpoint."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster_fixtures import copy_data, metadata_values, warehouse_rows

from graphwalk_dagster.demo import evaluate, ingest_sources, offline_resources

DUNKIRK = (
    '{"id": "d1", "question": "Who starred in Dunkirk?", "answers": ["Mark Rylance"], "start": "Dunkirk"}'
)
PARTITION = [("custom", "relation-greedy")]


def _answers(root: Path) -> list[tuple[object, ...]]:
    return warehouse_rows(root, "select question_id, predicted, reused from eval_results order by 1")


def test_changed_fact_is_answered_again(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    films = tmp_path / "data" / "films" / "films.csv"
    questions = tmp_path / "questions.jsonl"
    questions.write_text(DUNKIRK + "\n", encoding="utf-8")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    config = {"questions": str(questions)}
    quiet = {"log": lambda _: None, "questions_config": config, "n": 5}
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films"], resources, instance, log=lambda _: None)
        (first, _) = evaluate(PARTITION, resources, instance, **quiet)
        (old,) = _answers(root)
        assert "Tom Hardy" in old[1] and "Mark Rylance" not in old[1]

        films.write_text(
            films.read_text(encoding="utf-8").replace("Fionn Whitehead|Tom Hardy", "Mark Rylance"),
            encoding="utf-8",
        )
        ingest_sources(["films"], resources, instance, log=lambda _: None)
        (second, _) = evaluate(PARTITION, resources, instance, **quiet)
        assert _answers(root) == [("d1", ["Mark Rylance"], False)]
        meta = [metadata_values(r, "eval_results") for r in (first, second)]
        assert [(m["answered"], m["reused"], m["f1"]) for m in meta] == [(1, 0, 0.0), (1, 0, 1.0)]
        assert meta[0]["run_id"] != meta[1]["run_id"]
        assert meta[0]["graph_fingerprint"] != meta[1]["graph_fingerprint"]

        # nothing changed: the answer is reused, and the metadata and the table say so
        (third, _) = evaluate(PARTITION, resources, instance, **quiet)
        again = metadata_values(third, "eval_results")
        assert (again["answered"], again["reused"], again["run_id"]) == (0, 1, meta[1]["run_id"])
        assert _answers(root) == [("d1", ["Mark Rylance"], True)]


#: The tags Dagster puts on a run its automation condition sensor requests.
AUTOMATION_TAGS = {"dagster/from_automation_condition": "true", "dagster/auto_materialize": "true"}


def test_an_automated_refresh_asks_the_questions_the_partition_was_run_with(tmp_path: Path) -> None:
    """A refresh of an eval partition (graph changed) has no run config of its own: it must answer the
    questions the partition was materialized with (here n: 2 of a custom file), not the defaults
    (20 of data/questions.jsonl), which would replace the partition's results with another set."""
    from graphwalk_dagster.defs.eval.partitions import eval_key
    from graphwalk_dagster.demo import EVAL

    sources = copy_data(tmp_path / "data")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(_custom(i) for i in range(3)), encoding="utf-8")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    key = eval_key("custom", "relation-greedy")
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films"], resources, instance, log=lambda _: None)
        config = {"ops": {"eval_questions": {"config": {"n": 2, "questions": str(questions)}}}}
        run = dg.materialize(
            EVAL, partition_key=key, resources=resources, instance=instance, run_config=config
        )
        assert run.success
        refresh = dg.materialize(
            EVAL, partition_key=key, resources=resources, instance=instance, tags=AUTOMATION_TAGS
        )
        assert refresh.success
        assert metadata_values(refresh, "eval_questions")["questions"] == 2
        again = metadata_values(refresh, "eval_results")
        assert (again["answered"], again["reused"]) == (0, 2)
    rows = warehouse_rows(root, "select question_id, reused from eval_results order by 1")
    assert rows == [("q1", True), ("q2", True)]


def _custom(i: int) -> str:
    """A custom question line with id ``q<i>``."""
    return (
        f'{{"id": "q{i}", "question": "Who directed Inception?", "answers": ["Christopher Nolan"], '
        '"start": "Inception"}\n'
    )
