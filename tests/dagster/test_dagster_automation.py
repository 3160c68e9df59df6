"""The source sensor (content hashes as cursor) and the daily schedule."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import dagster as dg
from dagster_fixtures import copy_data

from graphwalk_dagster.defs.ingest.schedules import daily_reingest
from graphwalk_dagster.defs.ingest.sensors import source_change_sensor
from graphwalk_dagster.defs.shared.resources import SourcesResource


def _tick(instance: dg.DagsterInstance, sources: Path, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"sources": SourcesResource(path=str(sources))}
    )
    result = source_change_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_sensor_requests_only_changed_sources(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    with dg.DagsterInstance.ephemeral() as instance:
        first = _tick(instance, sources, None)
        assert sorted(r.partition_key for r in first.run_requests or []) == ["films", "sample_db"]
        (add,) = first.dynamic_partitions_requests or []
        assert (add.partitions_def_name, sorted(add.partition_keys)) == ("sources", ["films", "sample_db"])
        assert sorted(json.loads(first.cursor or "{}")) == ["films", "sample_db"]
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])

        # a touched file with the same bytes is not a change
        nolan = tmp_path / "data" / "films" / "nolan.md"
        os.utime(nolan, ns=(1, 1))
        same = _tick(instance, sources, first.cursor)
        assert (same.run_requests, same.dynamic_partitions_requests, same.cursor) == ([], [], first.cursor)

        nolan.write_text(nolan.read_text(encoding="utf-8") + "\nHe was born in London.\n", encoding="utf-8")
        changed = _tick(instance, sources, first.cursor)
        assert [r.partition_key for r in changed.run_requests or []] == ["films"]
        assert changed.dynamic_partitions_requests == []
        before, after = json.loads(first.cursor or "{}"), json.loads(changed.cursor or "{}")
        assert (before["sample_db"] == after["sample_db"], before["films"] == after["films"]) == (True, False)


def test_schedule_requests_every_registered_source() -> None:
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])
        context = dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime(2026, 11, 30, 3)
        )
        requests = daily_reingest(context)
        assert [(r.partition_key, r.run_key) for r in requests] == [
            ("films", "films:2026-11-30"),
            ("sample_db", "sample_db:2026-11-30"),
        ]
