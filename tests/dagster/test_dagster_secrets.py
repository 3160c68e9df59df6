"""API keys are wired as EnvVar secrets and reach the backends' settings as SecretStr.

That they never reach run logs, metadata or files is checked on the full pipeline run
(test_dagster_pipeline.py::test_keys_never_in_logs_metadata_or_files).
"""

from __future__ import annotations

import dagster as dg
import pytest

from graphwalk_dagster.defs.shared.resources import DeciderResource, LLMResource, default_resources

JEV_KEY = "sk-jev-TOPSECRET-7f3a9c"


def test_keys_are_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWALK_JEV_API_KEY", JEV_KEY)
    monkeypatch.delenv("GRAPHWALK_LLM_API_KEY", raising=False)
    defaults = default_resources()
    assert defaults["decider"].jev_api_key == dg.EnvVar("GRAPHWALK_JEV_API_KEY")
    # an unset key stays None (an unset EnvVar would fail every run)
    assert defaults["llm"].api_key is None


def test_keys_reach_the_settings_as_secrets() -> None:
    settings = DeciderResource(backend="jev", jev_api_key=JEV_KEY).settings()
    assert settings.jev_api_key is not None and settings.jev_api_key.get_secret_value() == JEV_KEY
    assert JEV_KEY not in repr(settings) and JEV_KEY not in str(settings.model_dump())
    llm = LLMResource(model="openai/gpt-4o-mini", api_key=JEV_KEY).settings()
    assert llm.llm_api_key is not None and llm.llm_api_key.get_secret_value() == JEV_KEY
    assert llm.llm_model == "openai/gpt-4o-mini"
