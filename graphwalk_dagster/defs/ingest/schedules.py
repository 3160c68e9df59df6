"""Re-ingest every registered source once a day (unchanged documents cost nothing)."""

import dagster as dg

from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION
from graphwalk_dagster.defs.ingest.sensors import INGEST_CHAIN, INGEST_RUN_TAGS, missing_note
from graphwalk_dagster.defs.shared.resources import SourcesResource


@dg.schedule(
    cron_schedule="0 3 * * *",
    target=INGEST_CHAIN,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every day at 03:00 UTC: re-ingest every registered source (one run each; unchanged "
    "documents cost nothing). A source whose path is missing, that sources.yaml no longer declares, or "
    "that is declared but not registered yet, gets no run; the tick names it. Running by default.",
)
def daily_reingest(
    context: dg.ScheduleEvaluationContext, sources: SourcesResource
) -> list[dg.RunRequest] | dg.SkipReason:
    """One run per registered source that can be read, keyed by the day so a tick never runs twice."""
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    specs, sources_file = {spec.id: spec for spec in sources.specs()}, sources.file()
    requests, notes = [], []
    registered = context.instance.get_dynamic_partitions(SOURCES_PARTITION)
    for sid in registered:
        spec = specs.get(sid)
        note = (
            missing_note(spec, sources_file)
            if spec is not None
            else f"source {sid!r} is registered but not declared in {sources_file}: no run requested"
        )
        if note is None:
            requests.append(dg.RunRequest(partition_key=sid, run_key=f"{sid}:{day}", tags=INGEST_RUN_TAGS))
        else:
            context.log.warning(note)
            notes.append(note)
    for sid in [sid for sid in specs if sid not in registered]:  # in sources.yaml's order
        note = (
            f"source {sid!r} is declared in {sources_file} but not registered as a partition: no run "
            "requested (source_change_sensor registers new sources; is it stopped?)"
        )
        context.log.warning(note)
        notes.append(note)
    return requests if requests or not notes else dg.SkipReason("; ".join(notes))
