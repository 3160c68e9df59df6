"""API keys reach the backends as secrets but never the run logs, metadata, config or files."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster_fixtures import copy_data

from graphwalk_dagster.defs.ingest import assets
from graphwalk_dagster.defs.shared.resources import DeciderResource, LLMResource, default_resources
from graphwalk_dagster.demo import offline_resources

JEV_KEY = "sk-jev-TOPSECRET-7f3a9c"
LLM_KEY = "sk-llm-TOPSECRET-22b1e0"


def test_keys_never_in_logs_metadata_or_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWALK_JEV_API_KEY", JEV_KEY)
    monkeypatch.setenv("GRAPHWALK_LLM_API_KEY", LLM_KEY)
    defaults = default_resources()
    # wired as EnvVar: the definitions hold the variable's name, not its value
    assert defaults["decider"].jev_api_key == dg.EnvVar("GRAPHWALK_JEV_API_KEY")
    assert defaults["llm"].api_key == dg.EnvVar("GRAPHWALK_LLM_API_KEY")

    sources = copy_data(tmp_path / "data")
    root = tmp_path / "warehouse"
    resources = {
        **offline_resources(root, sources_file=sources),
        "decider": DeciderResource(backend="local", jev_api_key=dg.EnvVar("GRAPHWALK_JEV_API_KEY")),
        "llm": LLMResource(model="", api_key=dg.EnvVar("GRAPHWALK_LLM_API_KEY")),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["films"])
        result = dg.materialize(
            [
                assets.source_profile,
                assets.source_documents,
                assets.chunks,
                assets.extractions,
                assets.routing_decisions,
            ],
            partition_key="films",
            resources=resources,
            instance=instance,
        )
        assert result.success
        records = instance.get_records_for_run(result.run_id).records
        text = "\n".join(str(r.event_log_entry) for r in records)
        run = instance.get_run_by_id(result.run_id)
        assert run is not None
        text += str(run.run_config) + str(run.tags)
    assert len(records) > 20 and "routing_decisions" in text
    assert JEV_KEY not in text and LLM_KEY not in text
    stored = "\n".join(p.read_text(errors="replace") for p in root.rglob("*.json"))
    assert stored and JEV_KEY not in stored and LLM_KEY not in stored


def test_key_reaches_the_settings_as_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = DeciderResource(backend="jev", jev_api_key=JEV_KEY)
    settings = resource.settings()
    assert settings.jev_api_key is not None and settings.jev_api_key.get_secret_value() == JEV_KEY
    assert JEV_KEY not in repr(settings) and JEV_KEY not in str(settings.model_dump())
