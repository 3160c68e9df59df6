"""trained_model_sensor: a new newest trained model re-runs the -trained eval partitions that walked with
another one (before it, nothing did: their answers stayed the old model's until the graph changed),
whatever the order in which models and runs come."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from graphwalk_core.warehouse import Warehouse
from graphwalk_core.warehouse.models import mark_latest, model_folder
from graphwalk_dagster.defs.eval.partitions import TRAINED_MODEL, eval_key
from graphwalk_dagster.defs.eval.sensors import trained_model_sensor
from graphwalk_dagster.defs.shared.resources import DeciderResource, WarehouseResource
from graphwalk_dagster.metadata import latest_materialization

WALKED = {  # partition -> the model its latest materialization walked with (None: metadata without one)
    ("metaqa-1hop", "relation-greedy-trained"): "aaaaaaaaaaaa",
    ("metaqa-2hop", "relation-greedy-trained"): "bbbbbbbbbbbb",
    ("metaqa-3hop", "entity-beam-trained"): None,
    ("metaqa-1hop", "relation-greedy"): None,
    ("metaqa-2hop", "relation-greedy"): "aaaaaaaaaaaa",  # the decider resource's trained backend
    ("custom", "relation-beam-trained"): "cccccccccccc",
}


def _tick(
    instance: dg.DagsterInstance, root: Path, model_path: str | None = None
) -> dg.SensorResult | dg.SkipReason:
    resources = {
        "warehouse": WarehouseResource(root=str(root)),
        "decider": DeciderResource(backend="local", model_path=model_path),
    }
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        result = trained_model_sensor(context)
    assert isinstance(result, dg.SensorResult | dg.SkipReason)
    return result


def _walked(instance: dg.DagsterInstance, key: str, model: str) -> None:
    """Record a materialization of ``key`` that walked with ``model``."""
    event = dg.AssetMaterialization("eval_results", partition=key, metadata={TRAINED_MODEL: model})
    instance.report_runless_asset_event(event)


def _run_keys(result: dg.SensorResult | dg.SkipReason) -> list[str]:
    return [r.run_key or "" for r in result.run_requests or []] if isinstance(result, dg.SensorResult) else []


def _key(instance: dg.DagsterInstance, partition: str, model: str) -> str:
    """The run key the sensor gives ``partition`` for ``model``: it names the materialization replaced."""
    record = latest_materialization(instance, dg.AssetKey("eval_results"), partition)
    assert record is not None
    return f"{partition}@{model}:{record.storage_id}"


def test_a_new_model_reruns_the_trained_partitions_that_walked_with_another(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    warehouse = Warehouse(root)
    with dg.DagsterInstance.ephemeral() as instance:
        assert _tick(instance, root) == dg.SkipReason("no trained model in the warehouse")
        for (dataset, system), model in WALKED.items():
            metadata = {TRAINED_MODEL: model} if model is not None else {"rows": 1}
            key = eval_key(dataset, system)
            instance.report_runless_asset_event(
                dg.AssetMaterialization("eval_results", partition=key, metadata=metadata)
            )
        newest = model_folder(warehouse, "b" * 64)
        newest.mkdir(parents=True)
        mark_latest(warehouse, newest)
        first = _tick(instance, root)
        assert isinstance(first, dg.SensorResult)
        stale = [
            "custom|relation-beam-trained",
            "metaqa-1hop|relation-greedy-trained",
            "metaqa-2hop|relation-greedy",
        ]
        assert [(r.partition_key, r.run_key) for r in first.run_requests or []] == [
            (key, _key(instance, key, "bbbbbbbbbbbb")) for key in stale
        ]
        for key in stale:  # the requested runs walked with the newest model
            _walked(instance, key, "bbbbbbbbbbbb")
        assert _tick(instance, root) == dg.SkipReason(
            "every partition that walks with a trained decider walked with bbbbbbbbbbbb"
        )
        assert _tick(instance, root, model_path=str(newest)) == dg.SkipReason(
            f"the decider resource's model_path names the model -trained partitions walk with ({newest})"
        )


def test_a_trained_partition_skipped_for_want_of_a_model_runs_once_one_is_trained(
    tmp_path: Path, metaqa_dir: Path
) -> None:
    """A ``-trained`` partition materialized before any model was trained is skipped (no decider); it
    said nothing about a model, so the sensor left it skipped when the first one arrived."""
    from dagster_fixtures import metadata_values

    from graphwalk_dagster.demo import EVAL, offline_resources

    root = tmp_path / "warehouse"
    key = eval_key("metaqa-1hop", "relation-greedy-trained")
    with dg.DagsterInstance.ephemeral() as instance:
        run = dg.materialize(
            EVAL,
            partition_key=key,
            resources=offline_resources(root),
            instance=instance,
            run_config={"ops": {"eval_questions": {"config": {"n": 2}}}},
        )
        assert metadata_values(run, "eval_results")["status"] == "skipped"
        newest = model_folder(Warehouse(root), "d" * 64)
        newest.mkdir(parents=True)
        mark_latest(Warehouse(root), newest)
        first = _tick(instance, root)
        assert _run_keys(first) == [_key(instance, str(key), "dddddddddddd")]


def test_a_run_that_ends_after_the_tick_with_the_older_model_is_requested_again(tmp_path: Path) -> None:
    """A partition evaluated for the first time while the newest model changed (a backfill in flight)
    walked with the older model and ended after the tick that handled the new one: the sensor, whose
    cursor named the new model, skipped every later tick and left it on the older one."""
    root = tmp_path / "warehouse"
    warehouse = Warehouse(root)
    key = str(eval_key("metaqa-1hop", "relation-greedy-trained"))
    with dg.DagsterInstance.ephemeral() as instance:
        older, newer = (model_folder(warehouse, c * 64) for c in "ab")
        for folder in (older, newer):
            folder.mkdir(parents=True)
        mark_latest(warehouse, newer)
        assert _run_keys(_tick(instance, root)) == []  # nothing evaluated yet
        _walked(instance, key, "aaaaaaaaaaaa")  # the run started before newer was made the newest
        assert _run_keys(_tick(instance, root)) == [_key(instance, key, "bbbbbbbbbbbb")]


def test_a_model_put_back_reruns_the_partitions_that_walked_with_the_other(tmp_path: Path) -> None:
    """LATEST moved from A to B and back to A (the error for a missing model folder suggests writing
    another name there): a run key of partition and model alone was the one of the first move to A,
    which Dagster drops as seen, so the partitions stayed on B."""
    root = tmp_path / "warehouse"
    warehouse = Warehouse(root)
    key = str(eval_key("metaqa-1hop", "relation-greedy-trained"))
    first, second = (model_folder(warehouse, c * 64) for c in "ab")
    for folder in (first, second):
        folder.mkdir(parents=True)
    keys, expected = [], []
    with dg.DagsterInstance.ephemeral() as instance:
        _walked(instance, key, "cccccccccccc")
        for folder in (first, second, first):
            mark_latest(warehouse, folder)
            expected.append(_key(instance, key, folder.name))
            keys += _run_keys(_tick(instance, root))
            _walked(instance, key, folder.name)  # the requested run walked with it
    assert keys == expected and len(set(keys)) == 3


def test_a_model_named_by_the_environment_is_named_in_the_skip_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GRAPHWALK_DECIDER_MODEL pins the model as the resource's model_path does; the tick said "the
    decider resource names a model_path" where the resource named none."""
    from graphwalk_core.settings import get_settings

    monkeypatch.setenv("GRAPHWALK_DECIDER_MODEL", str(tmp_path / "model"))
    get_settings.cache_clear()
    try:
        with dg.DagsterInstance.ephemeral() as instance:
            pinned = _tick(instance, tmp_path / "warehouse")
    finally:
        get_settings.cache_clear()
    assert pinned == dg.SkipReason(
        f"GRAPHWALK_DECIDER_MODEL names the model -trained partitions walk with ({tmp_path / 'model'})"
    )


def test_a_partition_no_longer_defined_does_not_break_the_tick(tmp_path: Path) -> None:
    """An eval_results partition materialized under a dataset or system since removed or renamed
    (``old-system-trained``) was requested too, and Dagster refused the tick whole
    (DagsterUnknownPartitionError) at every tick: no partition was re-run."""
    from graphwalk_dagster.definitions import defs

    root = tmp_path / "warehouse"
    warehouse = Warehouse(root)
    newest = model_folder(warehouse, "b" * 64)
    newest.mkdir(parents=True)
    mark_latest(warehouse, newest)
    resources = {"warehouse": WarehouseResource(root=str(root)), "decider": DeciderResource(backend="local")}
    with dg.DagsterInstance.ephemeral() as instance:
        for key in ("metaqa-1hop|old-system-trained", "metaqa-1hop|relation-greedy-trained"):
            _walked(instance, key, "aaaaaaaaaaaa")
        with dg.build_sensor_context(instance=instance, resources=resources, definitions=defs()) as context:
            data = trained_model_sensor.evaluate_tick(context)
    assert [r.partition_key for r in data.run_requests or []] == ["metaqa-1hop|relation-greedy-trained"]
