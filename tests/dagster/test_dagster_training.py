"""Training assets in process: decision_examples -> trained_decider (+ its check), then an eval
partition that walks with the trained decider, its id in every result row."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster_fixtures import metadata_values, warehouse_rows

from graphwalk_dagster.defs.eval.partitions import eval_key
from graphwalk_dagster.defs.training.assets import decision_examples, trained_decider
from graphwalk_dagster.defs.training.checks import VALIDATION_FLOOR, validation_floor
from graphwalk_dagster.demo import EVAL, offline_resources


def test_train_then_evaluate_with_the_trained_decider(
    tmp_path: Path, metaqa_dir: Path, minilm_dir: Path
) -> None:
    root = tmp_path / "warehouse"
    resources = offline_resources(root)
    config = {
        "ops": {"decision_examples": {"config": {"n": 60}}, "trained_decider": {"config": {"max_iter": 40}}}
    }
    with dg.instance_for_test() as instance:
        trained = dg.materialize(
            [decision_examples, trained_decider, validation_floor],
            resources=resources,
            instance=instance,
            run_config=config,
        )
        assert trained.success
        examples = metadata_values(trained, "decision_examples")
        assert examples["questions"] == 180 and examples["source_trace"] == 0
        assert examples["examples"] == examples["source_weak"] > 180
        meta = metadata_values(trained, "trained_decider")
        assert meta["examples"] == examples["examples"]
        assert float(meta["validation_accuracy_all"]) >= VALIDATION_FLOOR
        assert Path(str(meta["model_path"]), "manifest.json").is_file()
        (check,) = trained.get_asset_check_evaluations()
        assert check.passed and check.check_name == "validation_floor"

        evaluated = dg.materialize(
            EVAL,
            partition_key=eval_key("metaqa-1hop", "relation-greedy-trained"),
            resources=resources,
            instance=instance,
            run_config={"ops": {"eval_questions": {"config": {"n": 10}}}},
        )
        assert evaluated.success
    rows = warehouse_rows(root, "SELECT system, decider, count(*) FROM eval_results GROUP BY ALL")
    assert rows == [
        (
            "relation-greedy-trained",
            f"trained:{meta['model_id']}:fastembed:sentence-transformers/all-MiniLM-L6-v2",
            10,
        )
    ]
