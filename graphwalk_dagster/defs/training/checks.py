"""The trained decider must reach a validation accuracy floor before evaluations use it: a model below it
is kept but never made the warehouse's newest (``graphwalk_core.training.store.promote``), and this check
fails on it."""

from pathlib import Path

import dagster as dg

from graphwalk_core.training.store import VALIDATION_FLOOR, reaches_floor, validation_accuracy
from graphwalk_core.warehouse.models import latest_model
from graphwalk_dagster.defs.shared.resources import WarehouseResource
from graphwalk_dagster.metadata import to_metadata


def _trained_folder(instance: dg.DagsterInstance) -> Path | None:
    """The model folder ``trained_decider``'s latest materialization wrote (made the newest or not)."""
    event = instance.get_latest_materialization_event(dg.AssetKey("trained_decider"))
    materialization = event.asset_materialization if event is not None else None
    path = materialization.metadata.get("model_path") if materialization is not None else None
    return Path(str(path.value)) if path is not None else None


@dg.asset_check(
    asset="trained_decider",
    name="validation_floor",
    blocking=True,
    description=(
        f"The newest trained model's validation accuracy over all decisions is at least {VALIDATION_FLOOR} "
        "(a model below it is not the one evaluations walk with)."
    ),
)
def validation_floor(
    context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    """The validation accuracy of the model ``trained_decider`` last wrote (without a recorded one: the
    warehouse's newest) is at least ``VALIDATION_FLOOR`` (shown rounded)."""
    folder = _trained_folder(context.instance) or latest_model(warehouse.warehouse())
    if folder is None:
        return dg.AssetCheckResult(passed=False, metadata={"reason": "no trained model in the warehouse"})
    accuracy = validation_accuracy(folder)
    return dg.AssetCheckResult(
        passed=reaches_floor(accuracy),
        metadata={
            **to_metadata({"validation_accuracy": accuracy, "floor": VALIDATION_FLOOR}),
            "model": folder.name,
        },
    )
