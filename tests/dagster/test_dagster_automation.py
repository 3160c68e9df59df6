"""The source sensor (content hashes, settled before a run; missing paths named) and the daily schedule."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster_fixtures import copy_data

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.sources.fingerprints import source_fingerprint
from graphwalk_core.ingest.sources.specs import load_sources
from graphwalk_dagster.defs.ingest.schedules import daily_reingest
from graphwalk_dagster.defs.ingest.sensors import source_change_sensor
from graphwalk_dagster.defs.shared.resources import SourcesResource

SETTLING = "(new or changed since the last tick; run requested once unchanged)"


class _Collect(logging.Handler):
    def __init__(self, messages: list[str]) -> None:
        super().__init__()
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _tick(
    instance: dg.DagsterInstance, sources: Path, cursor: str | None, log: list[str] | None = None
) -> dg.SensorResult:
    """One evaluation; ``log`` receives the messages the sensor logged to its tick. The context is
    closed here: left to the garbage collector, it restored the Dagster instance it had entered inside
    a later test, whose runs then failed on that disposed instance."""
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"sources": SourcesResource(path=str(sources))}
    ) as context:
        if log is not None:
            context.log.addHandler(_Collect(log))
        result = source_change_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def _requests(result: dg.SensorResult) -> list[tuple[str | None, str | None]]:
    return [(r.partition_key, r.run_key) for r in result.run_requests or []]


def _fingerprints(sources: Path) -> dict[str, str]:
    return {spec.id: source_fingerprint(spec) for spec in load_sources(sources)}


def _state(
    requested: dict[str, str], observed: dict[str, str], requests: dict[str, int] | None = None
) -> str:
    return json.dumps(
        {"requested": requested, "observed": observed, "requests": requests or {}}, sort_keys=True
    )


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_sensor_requests_a_change_once_it_settled(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    fp = _fingerprints(sources)
    with dg.DagsterInstance.ephemeral() as instance:
        # new sources: registered at once, requested once unchanged at the next tick
        first = _tick(instance, sources, None)
        assert _requests(first) == []
        (add,) = first.dynamic_partitions_requests or []
        assert (add.partitions_def_name, add.partition_keys) == ("sources", ["films", "sample_db"])
        assert first.cursor == _state({}, fp)
        assert first.skip_reason == dg.SkipReason(f"waiting for films, sample_db to settle {SETTLING}")
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])
        second = _tick(instance, sources, first.cursor)
        assert _requests(second) == [
            ("films", f"films:1:{fp['films'][:16]}"),
            ("sample_db", f"sample_db:1:{fp['sample_db'][:16]}"),
        ]
        # ingest runs go ahead of runs queued earlier (eval refreshes of the graph they will change)
        assert [r.tags for r in second.run_requests or []] == [{"dagster/priority": "1"}] * 2
        once = {"films": 1, "sample_db": 1}
        assert (second.dynamic_partitions_requests, second.cursor) == ([], _state(fp, fp, once))

        # a touched file with the same bytes is not a change
        nolan = tmp_path / "data" / "films" / "nolan.md"
        (tmp_path / "films_nolan_before.md").write_text(nolan.read_text(encoding="utf-8"), encoding="utf-8")
        os.utime(nolan, ns=(1, 1))
        same = _tick(instance, sources, second.cursor)
        assert (same.run_requests, same.dynamic_partitions_requests, same.cursor) == ([], [], second.cursor)

        # a file being written: no run while it changes, one once it stayed the same for a tick
        _append(nolan, "\nHe was born in London.\n")
        writing = _tick(instance, sources, same.cursor)
        _append(nolan, "He studied English literature.\n")
        still = _tick(instance, sources, writing.cursor)
        done = _fingerprints(sources)
        assert (_requests(writing), _requests(still)) == ([], [])
        assert still.cursor == _state(fp, done, once)
        settled = _tick(instance, sources, still.cursor)
        assert _requests(settled) == [("films", f"films:2:{done['films'][:16]}")]
        assert settled.cursor == _state(done, done, {"films": 2, "sample_db": 1})
        after = _tick(instance, sources, settled.cursor)
        assert (_requests(after), after.cursor) == ([], settled.cursor)

        # the file put back as it was: a run of its own (a key seen before would make Dagster drop it)
        nolan.write_text((tmp_path / "films_nolan_before.md").read_text(encoding="utf-8"), encoding="utf-8")
        reverted = _tick(instance, sources, _tick(instance, sources, after.cursor).cursor)
        assert _requests(reverted) == [("films", f"films:3:{fp['films'][:16]}")]


def test_sensor_reads_the_earlier_flat_cursor_without_requesting_again(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    fp = _fingerprints(sources)
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])
        upgraded = _tick(instance, sources, json.dumps(fp, sort_keys=True))
        assert (_requests(upgraded), upgraded.skip_reason, upgraded.cursor) == ([], None, _state(fp, fp))
        # a change right after the upgrade settles too
        _append(tmp_path / "data" / "films" / "nolan.md", "\nHe was born in London.\n")
        changed = _tick(instance, sources, json.dumps(fp, sort_keys=True))
        assert _requests(changed) == []
        assert _requests(_tick(instance, sources, changed.cursor)) == [
            ("films", f"films:1:{_fingerprints(sources)['films'][:16]}")
        ]


def test_sensor_names_a_missing_path_and_requests_nothing_for_it(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    fp = _fingerprints(sources)
    films, away = tmp_path / "data" / "films", tmp_path / "films_away"
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])
        films.rename(away)
        gone = _tick(instance, sources, json.dumps(fp, sort_keys=True))
        note = (
            f"source 'films' in {sources}: path not found: 'films' (resolved: {films}); "
            "no run requested until it exists (nothing ingested is retracted)"
        )
        assert (_requests(gone), gone.dynamic_partitions_requests) == ([], [])
        assert gone.skip_reason == dg.SkipReason(note)
        assert gone.cursor == _state(fp, {"sample_db": fp["sample_db"]})

        # other sources are still handled; the missing one is named in the tick's log
        with closing(sqlite3.connect(tmp_path / "data" / "sample.sqlite")) as con, con:
            con.execute("create table added (x integer)")
        new_db = _fingerprints(sources)["sample_db"]
        settling = _tick(instance, sources, gone.cursor)
        log: list[str] = []
        other = _tick(instance, sources, settling.cursor, log)
        assert (_requests(other), other.skip_reason) == ([("sample_db", f"sample_db:1:{new_db[:16]}")], None)
        assert log == [note]

        # the path back with new bytes: a change like any other, requested once settled
        away.rename(films)
        _append(films / "nolan.md", "\nHe was born in London.\n")
        back = _tick(instance, sources, other.cursor)
        assert (_requests(back), back.skip_reason) == (
            [],
            dg.SkipReason(f"waiting for films to settle {SETTLING}"),
        )
        assert _requests(_tick(instance, sources, back.cursor)) == [
            ("films", f"films:1:{_fingerprints(sources)['films'][:16]}")
        ]


def test_schedule_requests_every_registered_source_it_can_read(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])

        def tick() -> list[dg.RunRequest] | dg.SkipReason:
            with dg.build_schedule_context(  # closed here: see _tick
                instance=instance,
                scheduled_execution_time=datetime(2026, 11, 30, 3),
                resources={"sources": SourcesResource(path=str(sources))},
            ) as context:
                return daily_reingest(context)

        requests = tick()
        assert isinstance(requests, list)
        assert [(r.partition_key, r.run_key, r.tags) for r in requests] == [
            ("films", "films:2026-11-30", {"dagster/priority": "1"}),
            ("sample_db", "sample_db:2026-11-30", {"dagster/priority": "1"}),
        ]
        (tmp_path / "data" / "films").rename(tmp_path / "films_away")
        instance.add_dynamic_partitions("sources", ["retired"])
        (only,) = tick()  # type: ignore[misc]
        assert (only.partition_key, only.run_key) == ("sample_db", "sample_db:2026-11-30")
        (tmp_path / "data" / "sample.sqlite").unlink()
        # a source declared while the sensor, which registers it, is stopped: named, not passed over
        _append(sources, "- id: notes\n  kind: files\n  path_or_url: films\n")
        unread = "no run requested until it exists (nothing ingested is retracted)"
        films, db = tmp_path / "data" / "films", tmp_path / "data" / "sample.sqlite"
        assert tick() == dg.SkipReason(
            f"source 'films' in {sources}: path not found: 'films' (resolved: {films}); {unread}; "
            f"source 'sample_db' in {sources}: path not found: 'sample.sqlite' (resolved: {db}); {unread}; "
            f"source 'retired' is registered but not declared in {sources}: no run requested; "
            f"source 'notes' is declared in {sources} but not registered as a partition: no run requested "
            "(source_change_sensor registers new sources; is it stopped?)"
        )


def test_a_missing_source_materialized_by_hand_names_its_entry(tmp_path: Path) -> None:
    """A run started by hand (or a backfill) for a source whose path is gone fails naming its sources.yaml
    entry, as the sensor does; it said only 'source path ... does not exist'."""
    sources = copy_data(tmp_path / "data")
    films = tmp_path / "data" / "films"
    films.rename(tmp_path / "films_away")
    assert profile_failure(sources, ["films"], "films") == (
        f"graphwalk_core.errors.InputError: source 'films' in {sources}: path not found: 'films' "
        f"(resolved: {films}); fix the path in that file, or remove the entry"
    )


def test_a_backfill_over_a_partition_no_longer_declared_says_what_became_of_it(tmp_path: Path) -> None:
    """A backfill over every source partition runs the partition of an entry removed from sources.yaml
    too; its run failed saying only that the source is not declared."""
    sources = copy_data(tmp_path / "data")
    assert profile_failure(sources, ["films", "retired"], "retired") == (
        f"graphwalk_core.errors.InputError: source 'retired' is not declared in {sources} (has ['films', "
        "'sample_db']): its partition outlives an entry removed or renamed there, and nothing it ingested "
        "is retracted (knowledge_graph's check ledger_sources_declared names what the graph holds of it)"
    )


def test_a_source_that_cannot_be_read_does_not_stop_the_others(tmp_path: Path) -> None:
    """A database that is down is named in the tick's log and gets no run; the other sources are
    handled as usual. Its fingerprint raised out of the sensor, so no source was checked at all."""
    sources = copy_data(tmp_path / "data")
    _append(
        sources,
        "- id: remote\n  kind: sql\n  path_or_url: postgresql+psycopg://u:pw-SECRET-9@127.0.0.1:1/db\n",
    )
    films = {spec.id: source_fingerprint(spec) for spec in load_sources(sources) if spec.id != "remote"}
    with dg.DagsterInstance.ephemeral() as instance:
        log: list[str] = []
        first = _tick(instance, sources, None, log)
        (add,) = first.dynamic_partitions_requests or []
        assert add.partition_keys == ["films", "sample_db", "remote"]
        (note,) = log
        assert note.startswith(
            f"source 'remote' in {sources}: cannot read SQL source "
            "postgresql+psycopg://u:***@127.0.0.1:1/db: connection failed: "
        )
        assert note.endswith("; no run requested until it can be read (nothing ingested is retracted)")
        assert "pw-SECRET-9" not in note
        assert first.cursor == _state({}, films)
        instance.add_dynamic_partitions("sources", ["films", "sample_db", "remote"])
        second = _tick(instance, sources, first.cursor)
        assert _requests(second) == [
            ("films", f"films:1:{films['films'][:16]}"),
            ("sample_db", f"sample_db:1:{films['sample_db'][:16]}"),
        ]


def test_a_corrupted_cursor_is_an_error_saying_how_to_start_over(tmp_path: Path) -> None:
    """The tick fails naming the sensor's cursor and how to reset it (it was a bare JSONDecodeError)."""
    sources = copy_data(tmp_path / "data")
    with dg.DagsterInstance.ephemeral() as instance, pytest.raises(InputError) as corrupted:
        _tick(instance, sources, '{"requested": {"films"')
    assert str(corrupted.value) == (
        "source_change_sensor cursor: settle state is not JSON (Expecting ':' delimiter: line 1 column 23 "
        """(char 22)): '{"requested": {"films"'; clear the cursor (the sensor's page in the UI: Set cursor """
        "value, empty) to start over: every source whose content differs from its last ingest then "
        "settles and is requested again"
    )


def test_a_sensor_without_cursor_starts_from_the_sources_last_ingest(tmp_path: Path) -> None:
    """A new instance's sensor (or a cleared cursor) requests only sources whose content differs from
    their last applied ingest: opening the UI after `make demo` re-ingested every source, which
    republished the graph and refreshed every eval partition."""
    from graphwalk_dagster.demo import ingest_sources, offline_resources

    sources = copy_data(tmp_path / "data")
    fp = _fingerprints(sources)
    resources = offline_resources(tmp_path / "warehouse", sources_file=sources)
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films"], resources, instance, log=lambda _: None)  # sample_db never ingested
        first = _tick(instance, sources, None)
        assert (_requests(first), first.cursor) == ([], _state({"films": fp["films"]}, fp))
        assert _requests(_tick(instance, sources, first.cursor)) == [
            ("sample_db", f"sample_db:1:{fp['sample_db'][:16]}")
        ]
        _append(sources.parent / "films" / "nolan.md", "\nJohn Williams scored Jaws.\n")
        changed = _fingerprints(sources)["films"]
        assert _tick(instance, sources, None).cursor == _state(
            {"films": fp["films"]}, {**fp, "films": changed}
        )


def profile_failure(sources: Path, partitions: list[str], key: str) -> str:
    """The error message of materializing ``source_profile`` for partition ``key`` (``partitions``
    registered) with the sources file ``sources``."""
    from graphwalk_dagster.defs.ingest.assets import source_profile

    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", partitions)
        result = dg.materialize(
            [source_profile],
            partition_key=key,
            resources={"sources": SourcesResource(path=str(sources))},
            instance=instance,
            raise_on_error=False,
        )
    (failure,) = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert error is not None and error.cause is not None
    return error.cause.message.strip()
