"""API keys are named by environment variable (dg.EnvVar), never given as values.

A literal key is refused both in Python and in run config, so it cannot show in the UI; the value is
read from the environment when a backend is built and reaches its settings as SecretStr. That keys
never reach run logs, metadata or files is checked on the full pipeline run
(test_dagster_pipeline.py::test_keys_never_in_logs_metadata_or_files).
"""

import dagster as dg
import pytest

from graphwalk_dagster.defs.shared.resources import (
    DeciderResource,
    LLMResource,
    SecretEnv,
    default_resources,
)

JEV_KEY = "sk-jev-TOPSECRET-7f3a9c"
LLM_KEY = "sk-llm-TOPSECRET-01b2"


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWALK_JEV_API_KEY", JEV_KEY)
    monkeypatch.setenv("GRAPHWALK_LLM_API_KEY", LLM_KEY)


def test_default_resources_show_only_variable_names(keys: None) -> None:
    defaults = default_resources()
    shown = {
        name: defaults[name].get_resource_definition().config_schema.as_field().default_value
        for name in ("decider", "llm")
    }
    assert shown["decider"]["jev_api_key"] == {"env": "GRAPHWALK_JEV_API_KEY"}
    assert shown["llm"]["api_key"] == {"env": "GRAPHWALK_LLM_API_KEY"}
    assert JEV_KEY not in repr(shown) and LLM_KEY not in repr(shown)


def test_a_literal_key_is_refused() -> None:
    with pytest.raises(ValueError, match=r"must be given as dg.EnvVar\('NAME'\)"):
        DeciderResource(backend="jev", jev_api_key=JEV_KEY)
    with pytest.raises(ValueError, match=r"must be given as dg.EnvVar\('NAME'\)"):
        LLMResource(model="openai/gpt-4o-mini", api_key=LLM_KEY)


@dg.asset
def _key_probe(context: dg.AssetExecutionContext, decider: DeciderResource, llm: LLMResource) -> None:
    jev, model = decider.settings().jev_api_key, llm.settings().llm_api_key
    assert jev is not None and model is not None
    context.log.info(f"jev={jev.get_secret_value() == JEV_KEY} llm={model.get_secret_value() == LLM_KEY}")


def test_keys_resolve_at_run_time_and_stay_out_of_run_config(
    keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_LLM_KEY", LLM_KEY)
    monkeypatch.delenv("GRAPHWALK_LLM_API_KEY")
    resources = {"decider": default_resources()["decider"], "llm": LLMResource()}
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [_key_probe],
            resources=resources,
            instance=instance,
            run_config={"resources": {"llm": {"config": {"api_key": {"env": "OTHER_LLM_KEY"}}}}},
        )
        assert result.success
        records = instance.get_records_for_run(result.run_id).records
        logs = [r.event_log_entry.user_message for r in records]
        assert "jev=True llm=True" in logs
        assert instance.get_run_by_id(result.run_id).run_config == {
            "resources": {"llm": {"config": {"api_key": {"env": "OTHER_LLM_KEY"}}}}
        }
        # a literal in run config does not pass config validation
        with pytest.raises(dg.DagsterInvalidConfigError, match="api_key"):
            dg.materialize(
                [_key_probe],
                resources=resources,
                instance=instance,
                run_config={"resources": {"llm": {"config": {"api_key": LLM_KEY}}}},
            )


def test_keys_reach_the_settings_as_secrets(keys: None) -> None:
    settings = DeciderResource(backend="jev", jev_api_key=dg.EnvVar("GRAPHWALK_JEV_API_KEY")).settings()
    assert settings.jev_api_key is not None and settings.jev_api_key.get_secret_value() == JEV_KEY
    assert JEV_KEY not in repr(settings) and JEV_KEY not in str(settings.model_dump())
    llm = LLMResource(model="openai/gpt-4o-mini", api_key=SecretEnv(env="GRAPHWALK_LLM_API_KEY")).settings()
    assert llm.llm_api_key is not None and llm.llm_api_key.get_secret_value() == LLM_KEY
    assert llm.llm_model == "openai/gpt-4o-mini"
