"""Re-ingest every registered source once a day (unchanged documents cost nothing)."""

import dagster as dg

from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION
from graphwalk_dagster.defs.ingest.sensors import INGEST_CHAIN


@dg.schedule(
    cron_schedule="0 3 * * *",
    target=INGEST_CHAIN,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every day at 03:00 UTC: re-ingest every registered source (one run each; unchanged "
    "documents cost nothing). Running by default.",
)
def daily_reingest(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    """One run per registered source, keyed by the day so a tick never runs twice."""
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        dg.RunRequest(partition_key=sid, run_key=f"{sid}:{day}")
        for sid in context.instance.get_dynamic_partitions(SOURCES_PARTITION)
    ]
