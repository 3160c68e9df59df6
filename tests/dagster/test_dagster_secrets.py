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
    GraphStoreResource,
    LLMResource,
    SecretEnv,
    WarehouseResource,
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
    with pytest.raises(ValueError, match=r"must be given as dg.EnvVar\('NAME'\)") as jev:
        DeciderResource(backend="jev", jev_api_key=JEV_KEY)
    with pytest.raises(ValueError, match=r"must be given as dg.EnvVar\('NAME'\)") as llm:
        LLMResource(model="openai/gpt-4o-mini", api_key=LLM_KEY)
    # pydantic's error repeated the refused value (input_value='sk-...'): the key, in a code location's
    # load error that the UI shows to everyone
    assert JEV_KEY not in str(jev.value) and LLM_KEY not in str(llm.value)


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


PG_PASSWORD = "pg-TOPSECRET-5d1e"
PG_URL = f"postgresql+psycopg://graphwalk:{PG_PASSWORD}@db.internal:5432/graph"


def test_a_literal_graph_url_is_refused(tmp_path) -> None:
    warehouse = WarehouseResource(root=str(tmp_path))
    with pytest.raises(ValueError, match=r"has a password: give it as dg.EnvVar\('NAME'\)") as refused:
        GraphStoreResource(url=PG_URL, warehouse=warehouse)
    assert "graphwalk:***@db.internal" in str(refused.value)
    assert PG_PASSWORD not in str(refused.value)
    # a short URL: pydantic's input_value (cut to 50 characters, which hid the long one's password) held it
    with pytest.raises(ValueError, match="has a password") as short:
        GraphStoreResource(url=f"postgresql://u:{PG_PASSWORD}@h/g", warehouse=warehouse)
    assert str(short.value).splitlines()[1:3] == [
        "url",
        "  Value error, graph store URL postgresql://u:***@h/g has a password: give it as dg.EnvVar('NAME') "
        "(run config: {env: NAME}), never as its value, which the UI's run config would show "
        "[type=value_error]",
    ]
    with pytest.raises(ValueError, match=r"sqlite:///g.sqlite give it as dg.EnvVar\('NAME'\)"):
        GraphStoreResource(url="sqlite:///g.sqlite", warehouse=warehouse)


def test_a_graph_url_comes_from_its_variable_and_stays_out_of_run_config(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_GRAPH_URL", PG_URL)
    warehouse = WarehouseResource(root=str(tmp_path))
    store = GraphStoreResource(url=dg.EnvVar("TEAM_GRAPH_URL"), warehouse=warehouse)
    assert store.resolved_url() == PG_URL
    shown = store.get_resource_definition().config_schema.as_field().default_value
    assert shown["url"] == {"env": "TEAM_GRAPH_URL"}
    assert PG_PASSWORD not in repr(shown)

    @dg.asset
    def url_probe(context: dg.AssetExecutionContext, graph_store: GraphStoreResource) -> None:
        context.log.info(f"url={graph_store.resolved_url() == PG_URL}")

    resources = {"graph_store": GraphStoreResource(warehouse=warehouse)}
    with dg.instance_for_test() as instance:
        config = {"resources": {"graph_store": {"config": {"url": {"env": "TEAM_GRAPH_URL"}}}}}
        result = dg.materialize([url_probe], resources=resources, instance=instance, run_config=config)
        assert result.success
        logs = [r.event_log_entry.user_message for r in instance.get_records_for_run(result.run_id).records]
        assert "url=True" in logs
        assert instance.get_run_by_id(result.run_id).run_config == config
        # a literal does not pass config validation: the run is never created with it
        literal = {"resources": {"graph_store": {"config": {"url": PG_URL}}}}
        with pytest.raises(dg.DagsterInvalidConfigError, match="url"):
            dg.materialize([url_probe], resources=resources, instance=instance, run_config=literal)
        assert len(instance.get_runs()) == 1


def test_a_key_given_as_the_variable_name_fails_the_run_without_repeating_it() -> None:
    """``{env: <the key>}`` passes Dagster's config schema (a string), so it ran with no key at all (the
    Jev decider silently became the local one); it now fails, saying so without the value."""
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [_key_probe],
            resources={"decider": DeciderResource(), "llm": LLMResource()},
            instance=instance,
            run_config={"resources": {"llm": {"config": {"api_key": {"env": LLM_KEY}}}}},
            raise_on_error=False,
        )
        assert not result.success
        events = [r.event_log_entry for r in instance.get_records_for_run(result.run_id).records]
    assert not any(LLM_KEY in str(e) for e in events)  # the run config holds it; the log does not
    data = [e.dagster_event.event_specific_data for e in events if e.dagster_event is not None]
    failures = [d.error.to_string() for d in data if getattr(d, "error", None) is not None]
    failure = next(f for f in failures if "environment variable name" in f)
    assert (
        "env must be an environment variable name (letters, digits and _, not starting with a digit), "
        "not the secret itself: a value that is a key is now in this run's config; revoke it"
    ) in failure
    with pytest.raises(ValueError, match="env must be an environment variable name") as refused:
        DeciderResource(jev_api_key=dg.EnvVar(JEV_KEY))
    assert JEV_KEY not in str(refused.value)
    assert SecretEnv(env="TEAM_KEY_2").env == "TEAM_KEY_2"


def test_a_graph_url_variable_that_is_not_set_is_an_error_not_another_graph(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``url: {env: TEAM_GRAPH_URL}`` with that variable missing where the run executes (a run pod
    without the secret) fell back to GRAPHWALK_GRAPH_URL, else a SQLite file in the warehouse: the
    ingest wrote, and the eval read, another graph with nothing said. The default variable
    (GRAPHWALK_GRAPH_URL) unset still means the warehouse's SQLite file."""
    from graphwalk_core.errors import ConfigError

    monkeypatch.delenv("TEAM_GRAPH_URL", raising=False)
    monkeypatch.delenv("GRAPHWALK_GRAPH_URL", raising=False)
    warehouse = WarehouseResource(root=str(tmp_path))
    store = GraphStoreResource(url=dg.EnvVar("TEAM_GRAPH_URL"), warehouse=warehouse)
    with pytest.raises(ConfigError) as unset:
        store.resolved_url()
    assert str(unset.value) == (
        "graph_store's url names the environment variable TEAM_GRAPH_URL, which is not set (or is empty) "
        "here: set it where runs and sensors execute (without it, the graph would be another one: "
        "GRAPHWALK_GRAPH_URL's, else the warehouse's graph.sqlite)"
    )
    default = GraphStoreResource(url=dg.EnvVar("GRAPHWALK_GRAPH_URL"), warehouse=warehouse)
    assert default.resolved_url() == f"sqlite:///{tmp_path.resolve() / 'graph.sqlite'}"
    assert GraphStoreResource(warehouse=warehouse).resolved_url() == default.resolved_url()


def test_a_jev_key_variable_that_is_not_set_is_an_error_not_the_local_decider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``jev_api_key: {env: TEAM_JEV_KEY}`` with that variable missing where the run executes left the
    decider without a key, so it silently became the local one (the decider's default is jev with a
    key, else local). The default variable unset still means the local decider."""
    from graphwalk_core.errors import ConfigError
    from graphwalk_core.settings import get_settings

    for name in ("TEAM_JEV_KEY", "GRAPHWALK_JEV_API_KEY", "GRAPHWALK_DECIDER"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()  # read again without the variables (an earlier test may have set them)
    try:
        with pytest.raises(ConfigError) as unset:
            DeciderResource(jev_api_key=dg.EnvVar("TEAM_JEV_KEY")).settings()
        assert str(unset.value) == (
            "decider's jev_api_key names the environment variable TEAM_JEV_KEY, which is not set (or is "
            "empty) here: set it where runs and sensors execute (without it, the decider would run without "
            "that key: GRAPHWALK_JEV_API_KEY's, else the local one)"
        )
        local = DeciderResource(backend="local", jev_api_key=dg.EnvVar("TEAM_JEV_KEY"))
        assert local.settings().resolved_decider() == "local"  # asked for: the key does not matter
        assert (
            DeciderResource(jev_api_key=dg.EnvVar("GRAPHWALK_JEV_API_KEY")).settings().resolved_decider()
            == "local"
        )
        monkeypatch.setenv("TEAM_JEV_KEY", JEV_KEY)
        assert DeciderResource(jev_api_key=dg.EnvVar("TEAM_JEV_KEY")).settings().resolved_decider() == "jev"
    finally:
        get_settings.cache_clear()
