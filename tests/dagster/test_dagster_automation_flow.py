"""Out of the box, a source change reaches knowledge_graph and eval_summary with nothing toggled by hand.

The Dagster daemons' own iterations run here, in process, against a real instance (DAGSTER_HOME with the
repository's dagster.yaml) and the code location loaded from workspace.yaml by a code server: the sensor
daemon (source_change_sensor), the asset daemon (the automation condition sensors), the scheduler and
the run queue, which launches each run in its own process. No sensor or schedule is started by the
test: they must be running by default. Only the minimum interval between two ticks is skipped, so the
test waits seconds, not minutes.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.run_request import InstigatorType
from dagster._core.scheduler.instigation import InstigatorTick, TickStatus
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster._daemon import asset_daemon, sensor
from dagster._daemon.asset_daemon import AssetDaemon
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
from dagster._scheduler.scheduler import launch_scheduled_runs
from dagster_fixtures import REPO, copy_data, warehouse_rows

from graphwalk_dagster.demo import evaluate, ingest_sources, offline_resources

LOG = logging.getLogger("graphwalk.tests.daemons")
FILMS_ONLY = (
    "- id: films\n  kind: files\n  path_or_url: films\n  mapping: films_mapping.yaml\n  extractor: nlp\n"
)
DUNKIRK = "Who starred in Dunkirk?"
SETTLING = "waiting for films to settle (new or changed since the last tick; run requested once unchanged)"


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DAGSTER_HOME with the repository's dagster.yaml, a warehouse and a films-only sources.yaml,
    wired through the environment as a deployment is."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    sources = copy_data(tmp_path / "data")
    sources.write_text(FILMS_ONLY, encoding="utf-8")
    monkeypatch.setenv("GRAPHWALK_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("GRAPHWALK_SOURCES", str(sources))
    for name in ("GRAPHWALK_JEV_API_KEY", "GRAPHWALK_LLM_MODEL", "GRAPHWALK_DECIDER"):
        monkeypatch.delenv(name, raising=False)
    # the daemons' clocks: tick on every iteration instead of every 30 or 60 s
    monkeypatch.setattr(sensor, "is_under_min_interval", lambda *_a, **_k: False)
    monkeypatch.setattr(asset_daemon, "is_under_min_interval", lambda *_a, **_k: False)
    return tmp_path


@contextmanager
def _workspace(instance: dg.DagsterInstance) -> Iterator[WorkspaceProcessContext]:
    with WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(REPO / "workspace.yaml")])) as ctx:
        yield ctx


def _busy(instance: dg.DagsterInstance) -> bool:
    statuses = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    return bool(instance.get_runs(filters=dg.RunsFilter(statuses=statuses)))


def _materializations(instance: dg.DagsterInstance, asset: str) -> int:
    return len(instance.fetch_materializations(dg.AssetKey(asset), limit=1000).records)


def _ticks(instance: dg.DagsterInstance, sensor_name: str) -> list[InstigatorTick]:
    """A sensor's ticks, oldest first."""
    (state,) = [
        s
        for s in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
        if s.instigator_name == sensor_name
    ]
    return sorted(instance.get_ticks(state.instigator_origin_id, state.selector_id), key=lambda t: t.tick_id)


def test_source_change_reaches_the_graph_and_the_eval_summary(deployment: Path) -> None:
    root = deployment / "warehouse"
    with dg.DagsterInstance.get() as instance:
        # what a user did once: ingest, publish, and run one eval partition and the summary
        resources = offline_resources(root, sources_file=deployment / "data" / "sources.yaml")
        ingest_sources(["films"], resources, instance, log=lambda _: None)
        evaluate([("custom", "relation-greedy")], resources, instance, n=20, log=lambda _: None)
        before = warehouse_rows(root, f"select predicted from eval_results where question = '{DUNKIRK}'")
        assert before == [(["Fionn Whitehead", "Tom Hardy"],)]
        counts = {a: _materializations(instance, a) for a in ("knowledge_graph", "eval_summary")}
        started = time.time()

        films = deployment / "data" / "films" / "films.csv"
        films.write_text(
            films.read_text(encoding="utf-8").replace("Fionn Whitehead|Tom Hardy", "Mark Rylance"),
            encoding="utf-8",
        )
        daemon = AssetDaemon(settings=instance.get_auto_materialize_settings(), pre_sensor_interval_seconds=0)
        queue = QueuedRunCoordinatorDaemon(interval_seconds=1)
        deadline, idle, seen = time.monotonic() + 600, 0, -1
        with _workspace(instance) as ctx:
            # until the summary refreshed, or nothing ran for 20 iterations (the flow stopped)
            while time.monotonic() < deadline and idle < 20:
                list(sensor.execute_sensor_iteration(ctx, LOG, None, None))
                daemon._run_iteration_impl(ctx, None, {}, {})  # the asset daemon's one iteration
                list(queue.run_iteration(ctx))
                busy = _busy(instance)
                if not busy and _materializations(instance, "eval_summary") > counts["eval_summary"]:
                    break
                total = len(instance.get_runs())
                idle = idle + 1 if total == seen and not busy else 0
                seen = total
                time.sleep(1)
        runs = instance.get_runs(filters=dg.RunsFilter(created_after=datetime.fromtimestamp(started, UTC)))
        launched = sorted(
            (
                r.tags.get("dagster/sensor_name", "?"),
                ",".join(sorted(k.to_user_string() for k in r.asset_selection or [])),
                r.tags.get("dagster/partition", ""),
                r.status.value,
            )
            for r in runs
        )
        # the source sensor's first tick saw films change and waited for it to settle; the next one
        # requested its run (and no later tick another)
        ticks = _ticks(instance, "source_change_sensor")
        assert [(t.status, t.skip_reason, len(t.run_ids)) for t in ticks[:2]] == [
            (TickStatus.SKIPPED, SETTLING, 0),
            (TickStatus.SUCCESS, None, 1),
        ]
        assert [t.status for t in ticks[2:]] == [TickStatus.SKIPPED] * (len(ticks) - 2)
        # one ingest run from the source sensor, then each refresh from an automation sensor
        assert launched == [
            ("eval_automation_sensor", "eval_questions,eval_results", "custom|relation-greedy", "SUCCESS"),
            ("eval_automation_sensor", "eval_summary", "", "SUCCESS"),
            ("graph_automation_sensor", "knowledge_graph", "", "SUCCESS"),
            ("source_change_sensor", "", "films", "SUCCESS"),
        ]
        assert _materializations(instance, "knowledge_graph") == counts["knowledge_graph"] + 1
        assert _materializations(instance, "eval_summary") == counts["eval_summary"] + 1
    after = warehouse_rows(root, f"select predicted, reused from eval_results where question = '{DUNKIRK}'")
    assert after == [(["Mark Rylance"], False)]
    # only the partition run before was refreshed: nothing new and costly started unasked
    assert warehouse_rows(root, "select distinct dataset, system from eval_results") == [
        ("custom", "relation-greedy")
    ]


def test_daily_reingest_runs_by_default(deployment: Path) -> None:
    with dg.DagsterInstance.get() as instance, _workspace(instance) as ctx:
        instance.add_dynamic_partitions("sources", ["films"])
        now = datetime.now(UTC)
        list(launch_scheduled_runs(ctx, LOG, end_datetime_utc=now, iteration_times={}))
        tick = (now + timedelta(days=1)).replace(hour=3, minute=0, second=30, microsecond=0)
        list(launch_scheduled_runs(ctx, LOG, end_datetime_utc=tick, iteration_times={}))
        runs = instance.get_runs()
        assert [(r.tags.get("dagster/schedule_name"), r.tags.get("dagster/partition")) for r in runs] == [
            ("daily_reingest", "films")
        ]
