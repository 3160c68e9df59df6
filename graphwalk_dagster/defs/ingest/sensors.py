"""Notice changed sources by content hash, register them as partitions, re-ingest them once settled;
and refresh the published graph after any source's ingest (both running by default)."""

from pathlib import Path

import dagster as dg

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.sources.fingerprints import missing_paths_message, source_fingerprint
from graphwalk_core.ingest.sources.settle import SettleState, settle
from graphwalk_core.ingest.sources.specs import SourceSpec
from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION, source_partitions
from graphwalk_dagster.defs.shared.resources import SourcesResource
from graphwalk_dagster.metadata import latest_materialization

#: The per-source chain (knowledge_graph follows it by its automation condition).
INGEST_CHAIN = dg.AssetSelection.assets(
    "source_profile", "source_documents", "chunks", "extractions", "routing_decisions", "graph_updates"
)
#: The tags of the ingest runs the sensor and the schedule request: the run queue starts them before
#: runs queued earlier at the default priority 0 (eval refreshes of a graph the ingest is about to change).
INGEST_RUN_TAGS = {"dagster/priority": "1"}


def missing_note(spec: SourceSpec, sources_file: Path) -> str | None:
    """Why a source whose path is missing gets no run (naming its sources.yaml entry), or None."""
    missing = missing_paths_message(spec, sources_file)
    if missing is None:
        return None
    return f"{missing}; no run requested until it exists (nothing ingested is retracted)"


def fingerprint_or_note(spec: SourceSpec, sources_file: Path) -> tuple[str | None, str | None]:
    """The source's fingerprint, or why it has none this tick (a missing path; a database that cannot be
    read): one such source must not stop the sensor from checking the others."""
    note = missing_note(spec, sources_file)
    if note is not None:
        return None, note
    try:
        return source_fingerprint(spec), None
    except (InputError, OSError) as exc:
        why = f"source {spec.id!r} in {sources_file}: {exc}"
        return None, f"{why}; no run requested until it can be read (nothing ingested is retracted)"


def last_ingested(instance: dg.DagsterInstance, source_id: str) -> str | None:
    """The fingerprint the source had when its last applied ingest began: ``source_profile``'s
    ``fingerprint`` in the run of the partition's latest ``graph_updates`` (None: no such record)."""
    latest = latest_materialization(instance, dg.AssetKey("graph_updates"), source_id)
    if latest is None:
        return None
    profile = dg.AssetKey("source_profile")
    for entry in instance.all_logs(latest.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        event = entry.asset_materialization
        if event is not None and event.asset_key == profile and event.partition == source_id:
            value = event.metadata.get("fingerprint")
            return value.value if isinstance(value, dg.TextMetadataValue) else None
    return None


def _state(cursor: str | None, instance: dg.DagsterInstance, source_ids: list[str]) -> SettleState:
    """The sensor's settle state; a corrupted cursor is an error saying how to start over. Without a
    cursor (the first tick of a new instance's sensor, or a cleared one), each source starts as its last
    applied ingest saw it: an unchanged source is not ingested again (opening the UI after `make demo`
    re-ingested every source, republished the graph and refreshed every eval partition)."""
    if not cursor:
        found = {sid: fp for sid in source_ids if (fp := last_ingested(instance, sid)) is not None}
        return SettleState(requested=found, observed=dict(found))
    try:
        return SettleState.from_json(cursor)
    except ValueError as exc:
        raise InputError(
            f"source_change_sensor cursor: {exc}; clear the cursor (the sensor's page in the UI: Set cursor "
            "value, empty) to start over: every source whose content differs from its last ingest then "
            "settles and is requested again"
        ) from exc


@dg.sensor(
    target=INGEST_CHAIN,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every 60 s: hash every declared source's files (or rows) and register new sources as "
    "partitions. A source whose content changed (or a new one) gets an ingest run once it has settled: "
    "its hash is the same at two consecutive ticks, so a file still being written is not ingested "
    "half-done. A source whose path is missing, or that cannot be read (a database that is down), gets "
    "no run; the tick names its sources.yaml entry. "
    "Running by default.",
)
def source_change_sensor(context: dg.SensorEvaluationContext, sources: SourcesResource) -> dg.SensorResult:
    """Request the partitions of sources whose settled content hash differs from the one last requested."""
    specs, sources_file = sources.specs(), sources.file()
    checked = {spec.id: fingerprint_or_note(spec, sources_file) for spec in specs}
    hashes = {sid: fingerprint for sid, (fingerprint, _) in checked.items()}
    decision = settle(_state(context.cursor, context.instance, list(hashes)), hashes)
    skipped = [note for _, note in checked.values() if note]
    for note in skipped:
        context.log.warning(note)
    if decision.settling:
        waiting = ", ".join(decision.settling)
        skipped.append(
            f"waiting for {waiting} to settle "
            "(new or changed since the last tick; run requested once unchanged)"
        )
    known = set(context.instance.get_dynamic_partitions(SOURCES_PARTITION))
    added = [sid for sid in hashes if sid not in known]
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(partition_key=sid, run_key=decision.state.run_key(sid), tags=INGEST_RUN_TAGS)
            for sid in decision.ready
        ],
        dynamic_partitions_requests=[source_partitions.build_add_request(added)] if added else [],
        cursor=decision.state.to_json(),
        skip_reason=None if decision.ready or not skipped else "; ".join(skipped),
    )


graph_automation_sensor = dg.AutomationConditionSensorDefinition(
    "graph_automation_sensor",
    target=dg.AssetSelection.assets("knowledge_graph"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Every 30 s: evaluate knowledge_graph's automation condition, so the graph is "
    "republished after any source's graph_updates partition changes. Running by default.",
)
