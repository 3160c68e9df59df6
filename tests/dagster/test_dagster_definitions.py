"""The code location loads and validates, with every asset, check, sensor, schedule and resource."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_fixtures import REPO

from graphwalk_dagster.definitions import defs

ASSETS = {
    "source_profile",
    "source_documents",
    "chunks",
    "extractions",
    "routing_decisions",
    "graph_updates",
    "knowledge_graph",
    "eval_questions",
    "eval_results",
    "eval_summary",
    "decision_examples",
    "trained_decider",
}


@pytest.fixture
def loaded() -> Iterator[dg.Definitions]:
    """The code location, loaded under its own instance (as a code server loads it)."""
    with dg.instance_for_test():
        yield defs()


def test_definitions_load_and_validate(loaded: dg.Definitions) -> None:
    dg.Definitions.validate_loadable(loaded)
    graph = loaded.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == ASSETS
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert checks == {
        ("knowledge_graph", "edge_endpoints_exist"),
        ("knowledge_graph", "elements_have_provenance"),
        ("knowledge_graph", "ledger_has_documents"),
        ("knowledge_graph", "ledger_sources_declared"),
        ("eval_results", "eval_results_valid"),
        ("eval_results", "eval_results_answered"),
        ("trained_decider", "validation_floor"),
    }
    repo = loaded.get_repository_def()
    running = dg.DefaultSensorStatus.RUNNING
    # every sensor (no implicit, stopped default_automation_condition_sensor) runs by default, described
    assert sorted((s.name, s.default_status) for s in repo.sensor_defs) == [
        ("eval_automation_sensor", running),
        ("graph_automation_sensor", running),
        ("source_change_sensor", running),
        ("trained_model_sensor", running),
    ]
    assert [(s.name, s.cron_schedule, s.default_status) for s in repo.schedule_defs] == [
        ("daily_reingest", "0 3 * * *", dg.DefaultScheduleStatus.RUNNING)
    ]
    for instigator in [*repo.sensor_defs, *repo.schedule_defs]:
        assert instigator.description and "Running by default." in instigator.description
    assert set(loaded.resources or {}) == {
        "warehouse",
        "sources",
        "graph_store",
        "decider",
        "llm",
        "embedder",
        "io_manager",
    }


def test_partitions(loaded: dg.Definitions) -> None:
    graph = loaded.resolve_asset_graph()
    ingest = graph.get(dg.AssetKey("chunks")).partitions_def
    assert isinstance(ingest, dg.DynamicPartitionsDefinition) and ingest.name == "sources"
    evals = graph.get(dg.AssetKey("eval_results")).partitions_def
    assert isinstance(evals, dg.MultiPartitionsDefinition)
    dims = {d.name: d.partitions_def.get_partition_keys() for d in evals.partitions_defs}
    assert dims == {
        "dataset": [
            "metaqa-1hop",
            "metaqa-2hop",
            "metaqa-3hop",
            "hotpotqa",
            "2wiki",
            "2wiki-retrieval",
            "custom",
            "hf",
        ],
        "system": [
            "relation-greedy",
            "relation-beam",
            "entity-greedy",
            "entity-beam",
            "graph-reader",
            "vector-rag",
            "iter-rag",
            "graph-ppr",
            "typed-path",
            "dense",
            "graph-ppr-walk",
            "relation-greedy-trained",
            "relation-beam-trained",
            "entity-greedy-trained",
            "entity-beam-trained",
        ],
    }
    assert graph.get(dg.AssetKey("knowledge_graph")).partitions_def is None


def test_instance_config_turns_telemetry_off() -> None:
    config = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))
    assert config["telemetry"] == {"enabled": False}
    assert config["concurrency"] == {
        "pools": {"default_limit": 1},
        "runs": {
            "tag_concurrency_limits": [
                {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
            ]
        },
    }


def test_embedder_resource_picks_another_model_file(minilm_dir: Path) -> None:
    from graphwalk_dagster.defs.shared.resources import EmbedderResource

    folder = minilm_dir.resolve()
    resource = EmbedderResource(model_path=str(folder), model_file="model_qint8_dynamic.onnx")
    settings = resource.settings()
    assert (settings.embed_model_path, settings.embed_model_file) == (folder, "model_qint8_dynamic.onnx")
    assert resource.make().model_id == (
        "fastembed:sentence-transformers/all-MiniLM-L6-v2:model_qint8_dynamic.onnx"
    )
    assert EmbedderResource(model_path=str(folder)).settings().embed_model_file is None


def _requested(result: object) -> dict[str, list[str]]:
    assert isinstance(result, dg.EvaluateAutomationConditionsResult)
    assets = ("knowledge_graph", "eval_questions", "eval_results", "eval_summary")
    found = {a: sorted(map(str, result.get_requested_partitions(dg.AssetKey(a)))) for a in assets}
    return {a: keys for a, keys in found.items() if keys}


def test_automation_follows_what_exists(loaded: dg.Definitions) -> None:
    """A fresh deployment starts nothing; later only the eval partition run before follows the graph."""
    with dg.instance_for_test() as instance:
        result = dg.evaluate_automation_conditions(defs=loaded, instance=instance)
        assert _requested(result) == {}
        # one source ingested: the graph is published, though the other source never ran
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])
        instance.report_runless_asset_event(dg.AssetMaterialization("graph_updates", partition="films"))
        result = dg.evaluate_automation_conditions(defs=loaded, instance=instance, cursor=result.cursor)
        assert _requested(result) == {"knowledge_graph": ["None"]}
        instance.report_runless_asset_event(dg.AssetMaterialization("knowledge_graph"))
        result = dg.evaluate_automation_conditions(defs=loaded, instance=instance, cursor=result.cursor)
        assert _requested(result) == {}  # no eval partition was ever run: none starts
        # a user ran one eval partition by hand: the summary follows; then the graph changes
        key = dg.MultiPartitionKey({"dataset": "custom", "system": "relation-greedy"})
        for asset in ("eval_questions", "eval_results"):
            instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=key))
        result = dg.evaluate_automation_conditions(defs=loaded, instance=instance, cursor=result.cursor)
        assert _requested(result) == {"eval_summary": ["None"]}
        instance.report_runless_asset_event(dg.AssetMaterialization("eval_summary"))
        instance.report_runless_asset_event(dg.AssetMaterialization("knowledge_graph"))
        result = dg.evaluate_automation_conditions(defs=loaded, instance=instance, cursor=result.cursor)
        assert _requested(result) == {
            "eval_questions": ["custom|relation-greedy"],
            "eval_results": ["custom|relation-greedy"],
        }


def test_eval_run_config_refuses_an_empty_subset() -> None:
    import pydantic

    from graphwalk_dagster.defs.eval.assets import EvalQuestionsConfig

    with pytest.raises(pydantic.ValidationError, match="greater than or equal to 1"):
        EvalQuestionsConfig(n=0)
    assert EvalQuestionsConfig(n=None).n is None
