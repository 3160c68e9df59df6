"""trained_model_sensor: a new newest trained model re-runs the -trained eval partitions that walked with
another one (before it, nothing did: their answers stayed the old model's until the graph changed)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from graphwalk_core.warehouse import Warehouse
from graphwalk_core.warehouse.models import mark_latest, model_folder
from graphwalk_dagster.defs.eval.partitions import TRAINED_MODEL, eval_key
from graphwalk_dagster.defs.eval.sensors import trained_model_sensor
from graphwalk_dagster.defs.shared.resources import DeciderResource, WarehouseResource

WALKED = {  # partition -> the model its latest materialization walked with (None: metadata without one)
    ("metaqa-1hop", "relation-greedy-trained"): "aaaaaaaaaaaa",
    ("metaqa-2hop", "relation-greedy-trained"): "bbbbbbbbbbbb",
    ("metaqa-3hop", "entity-beam-trained"): None,
    ("metaqa-1hop", "relation-greedy"): None,
    ("metaqa-2hop", "relation-greedy"): "aaaaaaaaaaaa",  # the decider resource's trained backend
    ("custom", "relation-beam-trained"): "cccccccccccc",
}


def _tick(
    instance: dg.DagsterInstance, root: Path, cursor: str | None, model_path: str | None = None
) -> dg.SensorResult | dg.SkipReason:
    resources = {
        "warehouse": WarehouseResource(root=str(root)),
        "decider": DeciderResource(backend="local", model_path=model_path),
    }
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources) as context:
        result = trained_model_sensor(context)
    assert isinstance(result, dg.SensorResult | dg.SkipReason)
    return result


def test_a_new_model_reruns_the_trained_partitions_that_walked_with_another(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    warehouse = Warehouse(root)
    with dg.DagsterInstance.ephemeral() as instance:
        assert _tick(instance, root, None) == dg.SkipReason("no trained model in the warehouse")
        for (dataset, system), model in WALKED.items():
            metadata = {TRAINED_MODEL: model} if model is not None else {"rows": 1}
            key = eval_key(dataset, system)
            instance.report_runless_asset_event(
                dg.AssetMaterialization("eval_results", partition=key, metadata=metadata)
            )
        newest = model_folder(warehouse, "b" * 64)
        newest.mkdir(parents=True)
        mark_latest(warehouse, newest)
        first = _tick(instance, root, None)
        assert isinstance(first, dg.SensorResult)
        assert [(r.partition_key, r.run_key) for r in first.run_requests or []] == [
            ("custom|relation-beam-trained", "custom|relation-beam-trained@bbbbbbbbbbbb"),
            ("metaqa-1hop|relation-greedy-trained", "metaqa-1hop|relation-greedy-trained@bbbbbbbbbbbb"),
            ("metaqa-2hop|relation-greedy", "metaqa-2hop|relation-greedy@bbbbbbbbbbbb"),
        ]
        assert first.cursor == "bbbbbbbbbbbb"
        assert _tick(instance, root, "bbbbbbbbbbbb") == dg.SkipReason(
            "the newest model, bbbbbbbbbbbb, was handled"
        )
        assert _tick(instance, root, None, model_path=str(newest)) == dg.SkipReason(
            "the decider resource names a model_path: -trained partitions walk with it"
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
        first = _tick(instance, root, None)
    assert isinstance(first, dg.SensorResult)
    assert [r.run_key for r in first.run_requests or []] == [
        "metaqa-1hop|relation-greedy-trained@dddddddddddd"
    ]
