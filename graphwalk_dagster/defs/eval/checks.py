"""Checks on each eval_results partition: no repeated question, every metric in [0, 1]."""

import warnings

import dagster as dg

from graphwalk_core.eval.tables import RESULTS, result_problems
from graphwalk_dagster.defs.eval.partitions import eval_partitions
from graphwalk_dagster.defs.shared.resources import WarehouseResource


def _eval_results_valid(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """No question twice in a partition; f1, em and hits@1 within [0, 1]."""
    partition = context.partition_key.keys_by_dimension
    table = warehouse.warehouse().read(
        RESULTS, {"dataset": partition["dataset"], "system": partition["system"]}
    )
    problems = result_problems(table)
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "rows": table.num_rows,
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
        },
    )


# Partitioned asset checks are a Dagster preview feature; a per-partition check needs them.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)
    eval_results_valid = dg.asset_check(
        asset="eval_results", name="eval_results_valid", partitions_def=eval_partitions
    )(_eval_results_valid)
