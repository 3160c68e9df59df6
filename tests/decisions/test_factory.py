"""make_decider: the default choice, the key requirement and each backend's configuration."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from graphwalk_core.decisions import (
    FakeDecisionBackend,
    JevBackend,
    LocalDecisionBackend,
    make_decider,
)
from graphwalk_core.embeddings import HashingEmbedder
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings

KEY = "sk-factory-secret-987"


def settings(**kw: object) -> GraphwalkSettings:
    return GraphwalkSettings(_env_file=None, **kw)  # type: ignore[call-arg]


def test_default_is_local_without_key_and_jev_with_one() -> None:
    local = make_decider(settings(local_temperature=0.2, local_stop_rule="fixed"), embedder=HashingEmbedder())
    assert isinstance(local, LocalDecisionBackend)
    assert local.model_id == "local:hashing:256:t=0.2:fixed+0.05:natural:w=0.5"
    assert local.stop_rule == "fixed"

    jev = make_decider(settings(jev_api_key=KEY, jev_max_retries=5, jev_timeout_s=7.0))
    assert isinstance(jev, JevBackend)
    assert (jev.model_id, jev.provider) == ("jev:jev-1.13.0", "typesafe")
    assert jev.base_url == "https://api.typesafe.ai"
    assert (jev.retry.max_retries, jev.timeout_s) == (5, 7.0)
    assert KEY not in repr(jev)


def test_openrouter_provider_defaults() -> None:
    jev = make_decider(settings(jev_api_key=KEY, jev_provider="openrouter"))
    assert isinstance(jev, JevBackend)
    assert (jev.model, jev.base_url) == ("typesafe/jev-1.13", "https://openrouter.ai/api")


def test_jev_without_key_names_the_setting() -> None:
    with pytest.raises(ConfigError, match="GRAPHWALK_JEV_API_KEY"):
        make_decider(settings(), name="jev")
    with pytest.raises(ConfigError, match="GRAPHWALK_JEV_API_KEY"):
        make_decider(settings(decider="jev"))


def test_latest_model_refused_through_settings() -> None:
    with pytest.raises(ConfigError, match="'jev-latest' is not pinned"):
        make_decider(settings(jev_api_key=SecretStr(KEY), jev_model="jev-latest"))


def test_fake_and_unknown_names() -> None:
    fake = make_decider(settings(jev_api_key=KEY), name="fake")
    assert isinstance(fake, FakeDecisionBackend)
    assert fake.model_id == "fake:seed=0"
    with pytest.raises(ConfigError, match="unknown decider 'oracle'"):
        make_decider(settings(), name="oracle")


def test_env_selects_decider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWALK_DECIDER", "fake")
    assert isinstance(make_decider(settings()), FakeDecisionBackend)
