"""Checks on each eval_results partition: no repeated question, every metric in [0, 1], and a
warning when its questions were skipped (no backend) or all failed rather than answered."""

import warnings

import dagster as dg
import pyarrow as pa

from graphwalk_core.eval.tables import RESULTS, partition_status, result_problems
from graphwalk_dagster.defs.eval.partitions import eval_partitions
from graphwalk_dagster.defs.shared.resources import WarehouseResource


def _partition_results(context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource) -> pa.Table:
    """The checked partition's rows of ``eval_results``."""
    partition = context.partition_key.keys_by_dimension
    return warehouse.warehouse().read(
        RESULTS, {"dataset": partition["dataset"], "system": partition["system"]}
    )


def _eval_results_valid(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No question twice in a partition; f1, em and hits@1 within [0, 1]."""
    table = _partition_results(context, warehouse)
    problems = result_problems(table)
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "rows": table.num_rows,
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
        },
    )


def _eval_results_answered(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """Warns when questions of the partition were skipped (e.g. no LLM configured), with the reason, or
    when every other question failed (its F1 0 is errors, not wrong answers), with the first error."""
    table = _partition_results(context, warehouse)
    statuses = table.column("status").to_pylist()
    pairs = list(zip(statuses, table.column("error").to_pylist(), strict=True))
    reasons = [e for s, e in pairs if s == "skipped"]
    errors = [e for s, e in pairs if s == "error"]
    status = partition_status(len(statuses), len(reasons), len(errors))
    return dg.AssetCheckResult(
        passed=not reasons and status != "failed",
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "status": status,
            "skipped": len(reasons),
            "skip_reason": reasons[0] if reasons else "none",
            "errors": len(errors),
            "first_error": errors[0] if errors else "none",
        },
    )


# Partitioned asset checks are a Dagster preview feature; a per-partition check needs them.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)
    eval_results_valid = dg.asset_check(
        asset="eval_results", name="eval_results_valid", partitions_def=eval_partitions
    )(_eval_results_valid)
    eval_results_answered = dg.asset_check(
        asset="eval_results",
        name="eval_results_answered",
        partitions_def=eval_partitions,
        description=_eval_results_answered.__doc__,
    )(_eval_results_answered)
