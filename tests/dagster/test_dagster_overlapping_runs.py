"""Two runs of one source partition in flight at once (a schedule tick while a manual run goes)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._utils.tags import TagConcurrencyLimitsCounter
from dagster_fixtures import REPO, copy_data

from graphwalk_dagster.demo import INGEST_CHAIN, QUIET_LOGS, ingest_sources, offline_resources


def test_the_run_queue_starts_one_run_of_a_partition_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped instance configs queue a run of a partition while another run of it is in progress
    (the daily_reingest tick that comes during a run started by hand waits for it, then reads what it
    wrote); runs of other partitions start as usual. Both started at once before."""
    shutil.copy(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        queue = instance.get_concurrency_config().run_queue_config
    assert queue is not None
    in_flight = dg.DagsterRun(job_name="__ASSET_JOB", tags={"dagster/partition": "films"})
    counter = TagConcurrencyLimitsCounter(queue.tag_concurrency_limits, [in_flight])
    partitions = ("films", "sample_db", "custom|relation-greedy")
    blocked = [
        counter.is_blocked(dg.DagsterRun(job_name="__ASSET_JOB", tags={"dagster/partition": p}))
        for p in partitions
    ]
    assert blocked == [True, False, False]
    configs = [
        yaml.safe_load((REPO / name).read_text()) for name in ("dagster.yaml", "dagster.postgres.yaml")
    ]
    assert [c["concurrency"]["runs"] for c in configs] == [
        {"tag_concurrency_limits": queue.tag_concurrency_limits}
    ] * 2


def test_the_run_that_read_the_source_first_writes_nothing_over_the_later_one(tmp_path: Path) -> None:
    """Run A reads ``jaws.md`` and is still extracting when the file changes and run B ingests it whole;
    A's extractions step then finishes, and its routing and graph_updates follow. A wrote its older fact
    beside B's (for a new document nothing is retracted) and its older hash into the ledger, and both
    runs succeeded: the graph said Spielberg and Donner directed Jaws, and the sensor, which had requested
    the new content, asked nothing more until the next day. Now A's graph_updates fails naming the source
    and writes nothing."""
    sources = copy_data(tmp_path / "data")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    jaws, extracted = tmp_path / "data" / "films" / "jaws.md", root / "objects" / "extractions" / "films.json"

    def run(*steps: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            INGEST_CHAIN,
            selection=list(steps),
            partition_key="films",
            resources=resources,
            instance=instance,
            run_config=QUIET_LOGS,
            raise_on_error=False,
        )

    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films"], resources, instance, log=lambda _: None)
        jaws.write_text("Jaws is a film directed by Steven Spielberg.\n", encoding="utf-8")
        assert run("source_profile", "source_documents", "chunks", "extractions").success  # run A
        a_extractions = extracted.read_text(encoding="utf-8")
        jaws.write_text("Jaws is a film directed by Richard Donner.\n", encoding="utf-8")
        assert run(*(asset.key.to_user_string() for asset in INGEST_CHAIN)).success  # run B
        extracted.write_text(a_extractions, encoding="utf-8")  # A's extractions step ends
        late = run("routing_decisions", "graph_updates")
        retried = run("graph_updates")  # a re-execution from the failure: the same inputs
    for result in (late, retried):
        (failure,) = result.get_step_failure_events()
        error = failure.step_failure_data.error
        assert failure.step_key == "graph_updates" and error is not None and error.cause is not None
        assert error.cause.message.strip().startswith(
            "graphwalk_core.ingest.stages.StaleDiffError: source 'films': the plan to write does not "
            "come from this diff (document 'jaws.md': "
        )
    with sqlite3.connect(root / "graph.sqlite") as db:
        directors = db.execute(
            "select name from nodes where name in ('Steven Spielberg', 'Richard Donner') order by name"
        ).fetchall()
    assert directors == [("Richard Donner",)]
