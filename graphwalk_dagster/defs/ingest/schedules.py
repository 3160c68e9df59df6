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
    "documents cost nothing). A source whose path is missing, or that sources.yaml no longer declares, "
    "gets no run; the tick names it. Running by default.",
)
def daily_reingest(
    context: dg.ScheduleEvaluationContext, sources: SourcesResource
) -> list[dg.RunRequest] | dg.SkipReason:
    """One run per registered source that can be read, keyed by the day so a tick never runs twice."""
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    specs, sources_file = {spec.id: spec for spec in sources.specs()}, sources.file()
    requests, notes = [], []
    for sid in context.instance.get_dynamic_partitions(SOURCES_PARTITION):
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
    return requests if requests or not notes else dg.SkipReason("; ".join(notes))
