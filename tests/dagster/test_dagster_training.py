"""Training assets in process: decision_examples -> trained_decider (+ its check), then an eval
partition that walks with the trained decider, its id in every result row."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster_fixtures import metadata_values, warehouse_rows

from graphwalk_dagster.defs.eval.partitions import eval_key
from graphwalk_dagster.defs.training.assets import decision_examples, trained_decider
from graphwalk_dagster.defs.training.checks import VALIDATION_FLOOR, validation_floor
from graphwalk_dagster.demo import EVAL, offline_resources


def test_train_then_evaluate_with_the_trained_decider(
    tmp_path: Path, metaqa_dir: Path, minilm_dir: Path
) -> None:
    import json

    from graphwalk_core.eval.partition_dataset import load_partition_dataset
    from graphwalk_core.training.graphs import knowledge_identity
    from graphwalk_core.warehouse import Warehouse

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
        manifest = json.loads(Path(str(meta["model_path"]), "manifest.json").read_text())
        metaqa = load_partition_dataset("metaqa-1hop", Warehouse(root), n=1, split="dev").knowledge
        assert manifest["graph"] == knowledge_identity(metaqa)  # the graph decision_examples labeled over
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
        results = metadata_values(evaluated, "eval_results")
        assert "warning" not in results  # the graph it learned over
        assert results["trained_model"] == Path(str(meta["model_path"])).name  # trained_model_sensor reads it
    rows = warehouse_rows(root, "SELECT split, system, decider, count(*) FROM eval_results GROUP BY ALL")
    assert rows == [  # a -trained partition scores test unless told otherwise: its decider learned dev
        (
            "test",
            "relation-greedy-trained",
            f"trained:{meta['model_id']}:fastembed:sentence-transformers/all-MiniLM-L6-v2",
            10,
        )
    ]


def test_a_trained_partition_refuses_the_questions_its_decider_learned_from(
    tmp_path: Path, metaqa_dir: Path
) -> None:
    """20 seeded dev questions (seed 0) are 20 of the 200 dev questions decision_examples' defaults learn
    from: a ``-trained`` partition told to score dev must fail, not report F1 on training questions."""
    import pyarrow as pa
    import pytest

    from graphwalk_core.eval.partition_dataset import load_partition_dataset
    from graphwalk_core.training.examples import SCHEMA
    from graphwalk_core.training.store import EXAMPLES
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import MODELS_DIR, mark_latest

    root = tmp_path / "warehouse"
    wh = Warehouse(root)
    learned = load_partition_dataset("metaqa-1hop", wh, n=200, split="dev")
    rows = [{"question_id": q.id, "split": "dev"} for q in learned.questions]
    wh.write(EXAMPLES, pa.Table.from_pylist(rows, schema=SCHEMA))
    (root / MODELS_DIR / "0123456789ab").mkdir(parents=True)  # a model saved before folders listed questions
    mark_latest(wh, root / MODELS_DIR / "0123456789ab")
    with dg.instance_for_test() as instance, pytest.raises(Exception) as failed:
        dg.materialize(
            EVAL,
            partition_key=eval_key("metaqa-1hop", "relation-greedy-trained"),
            resources=offline_resources(root),
            instance=instance,
            run_config={"ops": {"eval_questions": {"config": {"split": "dev"}}}},
        )
    first = load_partition_dataset("metaqa-1hop", wh, n=20, split="dev").questions[0].id
    assert str(failed.value) == (
        "eval_results metaqa-1hop × relation-greedy-trained: 20 of 20 questions are ones the trained decider "
        f"learned from (first: {first}); score questions it has not seen "
        "(eval_questions run config: split: test)"
    )


def test_a_model_named_by_the_decider_resource_refuses_the_questions_it_learned_from(
    tmp_path: Path, metaqa_dir: Path
) -> None:
    """The decider resource's ``trained`` backend with a ``model_path``: any partition it walks is checked
    against the list in that model's folder (before: a named model was never checked)."""
    import json

    import pytest

    from graphwalk_core.eval.partition_dataset import load_partition_dataset
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_dagster.defs.shared.resources import DeciderResource

    root = tmp_path / "warehouse"
    dev = load_partition_dataset("metaqa-1hop", Warehouse(root), n=20, split="dev").questions
    model = tmp_path / "model"
    model.mkdir()
    (model / "questions.json").write_text(json.dumps(sorted(q.id for q in dev[5:9])), encoding="utf-8")
    resources = {
        **offline_resources(root),
        "decider": DeciderResource(backend="trained", model_path=str(model)),
    }
    with dg.instance_for_test() as instance, pytest.raises(Exception) as failed:
        dg.materialize(
            EVAL,
            partition_key=eval_key("metaqa-1hop", "relation-greedy"),
            resources=resources,
            instance=instance,
            run_config={"ops": {"eval_questions": {"config": {"split": "dev"}}}},
        )
    assert str(failed.value) == (
        "eval_results metaqa-1hop × relation-greedy: 4 of 20 questions are ones the trained decider learned "
        f"from (first: {dev[5].id}); score questions it has not seen (eval_questions run config: split: test)"
    )


def test_a_partition_whose_model_learned_over_another_graph_warns(tmp_path: Path, metaqa_dir: Path) -> None:
    """A model whose manifest names another graph than the partition's (trained on another KB) still
    walks, with a warning naming the model and the dataset (logged, and the partition's ``warning``
    metadata); one over the partition's graph, or one that does not say, gives none."""
    import json

    from graphwalk_core.eval.partition_dataset import load_partition_dataset
    from graphwalk_core.training.graphs import NAMED_EDGES, graph_identity, knowledge_identity
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_dagster.defs.eval.assets import _check_trained
    from graphwalk_dagster.defs.shared.resources import DeciderResource

    root = tmp_path / "warehouse"
    dataset = load_partition_dataset("metaqa-1hop", Warehouse(root), n=5, split="test")
    model = tmp_path / "model"
    model.mkdir()
    dims = {"dataset": "metaqa-1hop", "system": "relation-greedy"}
    resources = offline_resources(root)
    notes = []
    graphs = ("0" * 64, graph_identity(dataset.knowledge), None)  # models saved before: a file's bytes
    for graph in (*graphs, NAMED_EDGES + "5:" + "0" * 64, knowledge_identity(dataset.knowledge)):
        (model / "manifest.json").write_text(json.dumps({"graph": graph}), encoding="utf-8")
        decider = DeciderResource(backend="trained", model_path=str(model))
        notes.append(_check_trained(dims, dataset, decider, resources["warehouse"], model))
    other = (
        f"the trained decider {model} learned over another graph than metaqa-1hop-test's: it knows that "
        "graph's relations and question phrasings, not these (train one on this graph: graphwalk train "
        "decider --graph ... --questions ...)"
    )
    assert notes == [other, None, None, other, None]


def test_decision_examples_of_a_passage_dataset_is_an_error_naming_it(tmp_path: Path) -> None:
    """HotpotQA is answered from passages: no graph to label over before ingestion, no start nodes. The
    run fails with an InputError naming the dataset (before: a ValueError from opening its graph, "a
    passage corpus needs an ingest function")."""
    from conftest import shared_path

    shared_path("data", "hotpotqa")
    config = {"ops": {"decision_examples": {"config": {"datasets": ["hotpotqa"], "n": 5}}}}
    with dg.instance_for_test() as instance, pytest.raises(Exception) as failed:
        dg.materialize(
            [decision_examples],
            resources=offline_resources(tmp_path / "wh"),
            instance=instance,
            run_config=config,
        )
    assert str(failed.value) == (
        "hotpotqa-dev is answered from passages, not a graph: weak supervision labels questions over a graph "
        "from their start node (metaqa, 2wiki, custom)"
    )


def test_metaqa_partitions_score_test_by_default_whatever_the_system() -> None:
    """MetaQA has a test split in the data folder: all its partitions score it by default, so an automated
    refresh of the demo's local-decider rows scores what the trained rows score. The other datasets' test
    questions need a file, so their partitions keep dev (the leak guard above still refuses questions
    the model learned from)."""
    from graphwalk_dagster.defs.eval.partitions import default_split

    datasets = ["metaqa-1hop", "metaqa-3hop", "metaqa-2hop", "hotpotqa", "2wiki-retrieval", "custom", "hf"]
    assert [default_split(d) for d in datasets] == ["test", "test", "test", "dev", "dev", "dev", "dev"]


def test_a_trained_partition_looks_for_its_model_in_the_warehouse_resource_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a model in the warehouse resource's root, a ``-trained`` partition is skipped with the
    reason naming that root: the settings' warehouse (GRAPHWALK_WAREHOUSE) is another one, whose model
    the partition walked with (unchecked by the leak guard, which reads the resource's)."""
    from graphwalk_core.errors import ConfigError
    from graphwalk_core.settings import get_settings
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import MODELS_DIR, mark_latest
    from graphwalk_dagster.defs.eval.assets import _backends

    other = Warehouse(tmp_path / "other")
    (other.root / MODELS_DIR).mkdir(parents=True)
    mark_latest(other, other.root / MODELS_DIR / "0123456789ab")
    monkeypatch.setenv("GRAPHWALK_WAREHOUSE", str(other.root))
    root = tmp_path / "warehouse"
    res = offline_resources(root)
    get_settings.cache_clear()
    try:
        found = _backends(
            "relation-greedy-trained", res["decider"], res["llm"], res["embedder"], res["warehouse"]
        )
    finally:
        get_settings.cache_clear()
    assert found.warehouse_model() is None
    with pytest.raises(ConfigError) as missing:
        found.decider(embedder=object())  # type: ignore[arg-type]
    assert f"train one into the warehouse ({root.resolve()})" in str(missing.value)


def test_the_leak_refusal_points_at_questions_the_dataset_can_give() -> None:
    """MetaQA's test split is in the data folder; the dev-only datasets and custom need a question file,
    so the refusal does not send them to a split that fails."""
    from graphwalk_dagster.defs.eval.partitions import unseen_questions_hint

    test, file = (
        "eval_questions run config: split: test",
        ("eval_questions run config: questions: a file of questions it has not learned from"),
    )
    names = ["metaqa-2hop", "hotpotqa", "2wiki", "custom", "hf"]
    assert [unseen_questions_hint(n) for n in names] == [test, file, file, file, file]


def test_validation_floor_shows_its_floor_and_a_rounded_accuracy(tmp_path: Path) -> None:
    """The check's description in the UI states the floor's value, not a constant's name, and its
    accuracy metadata is rounded like every other float (the manifest keeps full precision)."""
    import json

    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import mark_latest, model_folder

    root = tmp_path / "warehouse"
    folder = model_folder(Warehouse(root), "0123456789abcdef")
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"validation_accuracy": {"all": 51 / 52}}))
    mark_latest(Warehouse(root), folder)
    spec = next(iter(validation_floor.check_specs))
    assert spec.description == (
        "The newest trained model's validation accuracy over all decisions is at least 0.8 (a model below "
        "it is not the one evaluations walk with)."
    )
    result = dg.materialize(
        [trained_decider.to_source_assets()[0], validation_floor],
        resources=offline_resources(root),
        selection=dg.AssetSelection.checks(validation_floor),
    )
    (check,) = result.get_asset_check_evaluations()
    assert {k: v.value for k, v in check.metadata.items()} == {
        "validation_accuracy": 0.9808,
        "floor": 0.8,
        "model": "0123456789ab",
    }


def test_a_model_below_the_floor_is_kept_but_not_made_the_newest(
    tmp_path: Path, metaqa_dir: Path, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose validation accuracy is below the floor (here a floor no model reaches) is saved but
    LATEST keeps naming the earlier model, so ``-trained`` partitions and ``--decider trained`` go on
    walking with it; the check fails on the new model (before: LATEST moved to it while the check
    failed, so evaluations walked with the model the check rejected)."""
    import json

    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import latest_model, mark_latest, model_folder

    root = tmp_path / "warehouse"
    good = model_folder(Warehouse(root), "0123456789abcdef")
    good.mkdir(parents=True)
    (good / "manifest.json").write_text(json.dumps({"validation_accuracy": {"all": 0.9}}))
    mark_latest(Warehouse(root), good)
    monkeypatch.setattr("graphwalk_core.training.store.VALIDATION_FLOOR", 1.01)
    ops = {
        "decision_examples": {"config": {"n": 20, "datasets": ["metaqa-1hop"]}},
        "trained_decider": {"config": {"max_iter": 3}},
    }
    with dg.instance_for_test() as instance:
        run = dg.materialize(
            [decision_examples, trained_decider, validation_floor],
            resources=offline_resources(root),
            instance=instance,
            run_config={"ops": ops},
            raise_on_error=False,
        )
    meta = metadata_values(run, "trained_decider")
    trained = Path(str(meta["model_path"]))
    assert latest_model(Warehouse(root)) == good and (trained / "manifest.json").is_file()
    assert meta["promoted"] is False
    (check,) = run.get_asset_check_evaluations()
    assert not check.passed and check.metadata["model"].value == trained.name


def test_retraining_on_the_same_examples_keeps_the_earlier_model(
    tmp_path: Path, metaqa_dir: Path, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trained_decider re-run with other settings on the same decision_examples writes a new folder and
    then points LATEST at it: the earlier model is kept, never rewritten in place while LATEST names it
    (where a run cut short would leave the newest model half written). Re-run with the same settings it
    trains the same model, whose folder is there already: left as it is (before: saved over in place).
    A few epochs on 20 questions reach no real floor: here every model does."""
    from graphwalk_core.decisions.trained import DeciderModel
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import latest_model

    monkeypatch.setattr("graphwalk_core.training.store.VALIDATION_FLOOR", 0.0)
    root = tmp_path / "warehouse"
    resources = offline_resources(root)
    examples = {"decision_examples": {"config": {"n": 20, "datasets": ["metaqa-1hop"]}}}
    folders, saved = [], []
    with dg.instance_for_test() as instance:
        for run_number, epochs in enumerate((3, 4, 4)):
            first_run = run_number == 0
            ops = {**(examples if first_run else {}), "trained_decider": {"config": {"max_iter": epochs}}}
            assets = [decision_examples, trained_decider] if first_run else [trained_decider]
            run = dg.materialize(assets, resources=resources, instance=instance, run_config={"ops": ops})
            assert run.success
            folders.append(Path(str(metadata_values(run, "trained_decider")["model_path"])))
            saved.append([(p.name, p.stat().st_mtime_ns) for p in sorted(folders[-1].iterdir())])
    first, second, again = folders
    assert first != second and latest_model(Warehouse(root)) == second
    assert again == second and saved[2] == saved[1]
    assert DeciderModel.load(first).manifest["learner"]["max_iter"] == 3
    assert DeciderModel.load(second).manifest["learner"]["max_iter"] == 4
