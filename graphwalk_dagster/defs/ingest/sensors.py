"""Notice changed sources by content hash (cursor = hashes), register them as partitions, re-ingest them;
and refresh the published graph after any source's ingest (both running by default)."""

import json

import dagster as dg

from graphwalk_core.ingest.sources.fingerprints import source_fingerprint
from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION, source_partitions
from graphwalk_dagster.defs.shared.resources import SourcesResource

#: The per-source chain (knowledge_graph follows it by its automation condition).
INGEST_CHAIN = dg.AssetSelection.assets(
    "source_profile", "source_documents", "chunks", "extractions", "routing_decisions", "graph_updates"
)


@dg.sensor(
    target=INGEST_CHAIN,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every 60 s: hash every declared source's files (or rows); register new sources as "
    "partitions and request an ingest run for each source whose content changed. Running by default.",
)
def source_change_sensor(context: dg.SensorEvaluationContext, sources: SourcesResource) -> dg.SensorResult:
    """Request the partitions of sources whose content hash differs from the cursor's."""
    hashes = {spec.id: source_fingerprint(spec) for spec in sources.specs()}
    seen = json.loads(context.cursor) if context.cursor else {}
    changed = [sid for sid, digest in hashes.items() if seen.get(sid) != digest]
    known = set(context.instance.get_dynamic_partitions(SOURCES_PARTITION))
    added = [sid for sid in hashes if sid not in known]
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(partition_key=sid, run_key=f"{sid}:{hashes[sid][:16]}") for sid in changed
        ],
        dynamic_partitions_requests=[source_partitions.build_add_request(added)] if added else [],
        cursor=json.dumps(hashes, sort_keys=True),
    )


graph_automation_sensor = dg.AutomationConditionSensorDefinition(
    "graph_automation_sensor",
    target=dg.AssetSelection.assets("knowledge_graph"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Every 30 s: evaluate knowledge_graph's automation condition, so the graph is "
    "republished after any source's graph_updates partition changes. Running by default.",
)
