"""Keep evaluation current: re-run materialized eval partitions when the graph changes, then the summary."""

import dagster as dg

eval_automation_sensor = dg.AutomationConditionSensorDefinition(
    "eval_automation_sensor",
    target=dg.AssetSelection.assets("eval_questions", "eval_results", "eval_summary"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Every 30 s: evaluate the eval assets' automation conditions. After knowledge_graph "
    "changes, the eval partitions materialized before run again (never-run ones stay missing), and "
    "eval_summary refreshes from whichever partitions exist. Running by default.",
)
