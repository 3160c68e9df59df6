"""The trained decider must reach a validation accuracy floor before evaluations use it."""

import dagster as dg

from graphwalk_core.training.store import validation_accuracy
from graphwalk_core.warehouse.models import latest_model
from graphwalk_dagster.defs.shared.resources import WarehouseResource
from graphwalk_dagster.metadata import to_metadata

#: Overall validation accuracy (top choice = the target's top) below which the check fails.
VALIDATION_FLOOR = 0.8


@dg.asset_check(
    asset="trained_decider",
    name="validation_floor",
    blocking=True,
    description=f"The newest model's validation accuracy over all decisions is at least {VALIDATION_FLOOR}.",
)
def validation_floor(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    """The newest model's validation accuracy is at least ``VALIDATION_FLOOR`` (shown rounded)."""
    folder = latest_model(warehouse.warehouse())
    if folder is None:
        return dg.AssetCheckResult(passed=False, metadata={"reason": "no trained model in the warehouse"})
    accuracy = validation_accuracy(folder)
    return dg.AssetCheckResult(
        passed=accuracy is not None and accuracy >= VALIDATION_FLOOR,
        metadata={
            **to_metadata({"validation_accuracy": accuracy, "floor": VALIDATION_FLOOR}),
            "model": folder.name,
        },
    )
