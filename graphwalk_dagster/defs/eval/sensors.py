"""Keep evaluation current: re-run materialized eval partitions when the graph changes, then the summary;
re-run the ``-trained`` partitions when the warehouse's newest trained model changes."""

import dagster as dg

from graphwalk_core.warehouse.models import latest_model
from graphwalk_dagster.defs.eval.partitions import TRAINED_MODEL, eval_partitions
from graphwalk_dagster.defs.shared.resources import DeciderResource, WarehouseResource
from graphwalk_dagster.metadata import latest_materialization

EVAL_RESULTS = dg.AssetKey("eval_results")

eval_automation_sensor = dg.AutomationConditionSensorDefinition(
    "eval_automation_sensor",
    target=dg.AssetSelection.assets("eval_questions", "eval_results", "eval_summary"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Every 30 s: evaluate the eval assets' automation conditions. After knowledge_graph "
    "changes, the eval partitions materialized before run again (never-run ones stay missing), and "
    "eval_summary refreshes from whichever partitions exist. Running by default.",
)


def walked_with_another_model(instance: dg.DagsterInstance, model: str) -> list[tuple[str, int]]:
    """The eval_results partitions whose latest materialization walked with a trained model other than
    ``model`` (a folder name; the ``-trained`` ones, and any other run with the decider resource's
    ``trained`` backend), or that was skipped for want of a model (``none``), in key order, each with
    that materialization's storage id. One that does not say which model it walked with (not a trained
    decider, or materialized before the metadata existed) is left, and so is one of a dataset or system
    no longer defined (Dagster refuses a whole tick that requests one)."""
    defined = set(eval_partitions.get_partition_keys())
    stale = []
    for key in sorted(instance.get_materialized_partitions(EVAL_RESULTS) & defined):
        record = latest_materialization(instance, EVAL_RESULTS, key)
        event = record.asset_materialization if record is not None else None
        walked = event.metadata.get(TRAINED_MODEL) if event is not None else None
        if record is not None and isinstance(walked, dg.TextMetadataValue) and walked.value != model:
            stale.append((key, record.storage_id))
    return stale


@dg.sensor(
    target=dg.AssetSelection.assets(EVAL_RESULTS),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    description="Every 60 s: re-run the eval_results partitions whose latest run walked with another "
    "trained model than the warehouse's newest (models/decider/LATEST), the -trained ones, or was skipped "
    "for want of one; once per partition, model and materialization replaced (a failed run is not "
    "retried); eval_summary then refreshes. Nothing to do when the decider resource's model_path (or "
    "GRAPHWALK_DECIDER_MODEL) names a model. Running by default.",
)
def trained_model_sensor(
    context: dg.SensorEvaluationContext, warehouse: WarehouseResource, decider: DeciderResource
) -> dg.SensorResult | dg.SkipReason:
    """Stateless: every tick compares each partition's latest materialization with the newest model, so
    a run that ends after the model changed, or a model put back, is caught; the run key (partition,
    model, the materialization it replaces) makes Dagster drop a request it has already run."""
    pinned = decider.settings().decider_model
    if pinned is not None:
        named = "the decider resource's model_path" if decider.model_path else "GRAPHWALK_DECIDER_MODEL"
        return dg.SkipReason(f"{named} names the model -trained partitions walk with ({pinned})")
    latest = latest_model(warehouse.warehouse())
    if latest is None:
        return dg.SkipReason("no trained model in the warehouse")
    stale = walked_with_another_model(context.instance, latest.name)
    if not stale:
        return dg.SkipReason(f"every partition that walks with a trained decider walked with {latest.name}")
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(partition_key=key, run_key=f"{key}@{latest.name}:{replaced}")
            for key, replaced in stale
        ]
    )
