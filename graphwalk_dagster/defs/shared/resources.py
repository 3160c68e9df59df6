"""Resources shared by every domain: warehouse, graph store, decider, LLM, embedder, JSON IO manager.

Each resource falls back to ``GraphwalkSettings`` (``GRAPHWALK_*`` environment variables) for any
field left unset and builds through :class:`graphwalk_core.backends.Backends` (which also holds the one
rule for a backend that is not configured). API keys are ``SecretEnv`` fields: they take
``dg.EnvVar("NAME")`` (or run config ``{env: NAME}``) and refuse a literal key, so the UI and run config
only ever show the variable's name.
"""

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import ConfigDict, Field, SecretStr, TypeAdapter, ValidationError, field_validator

from graphwalk_core.backends import Backends, settings_with
from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.files import write_text_atomic
from graphwalk_core.settings import GraphwalkSettings, get_settings
from graphwalk_core.stores.sql_engine import has_password, redact_url
from graphwalk_core.warehouse import Warehouse
from graphwalk_core.warehouse.layout import inside
from graphwalk_dagster.defs.shared.paths import SOURCES_FILE

#: Pydantic repeats a refused value in its error (``input_value=...``), cut to 50 characters: a key or a URL
#: with its password. The refusals below say what is wrong without it.
HIDE_INPUT = ConfigDict(hide_input_in_errors=True)
#: An environment variable name as a shell writes one; a key pasted in its place (``sk-...``) is not one.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SecretEnv(dg.Config):
    """A secret named by the environment variable that holds it; its value is read only when used."""

    model_config = HIDE_INPUT

    env: str = Field(description="name of the environment variable holding the secret")

    @field_validator("env")
    @classmethod
    def _a_name(cls, value: str) -> str:
        """Refuse a value that cannot be a variable name, most likely the secret itself (never repeated)."""
        if not ENV_NAME.fullmatch(value):
            raise ValueError(
                "env must be an environment variable name (letters, digits and _, not starting with a "
                "digit), not the secret itself: a value that is a key is now in this run's config; revoke it"
            )
        return value


def _secret_field(value: Any) -> Any:
    """Accept ``dg.EnvVar("NAME")`` or ``{env: NAME}``; refuse a literal key (it would show in the UI)."""
    if isinstance(value, dg.EnvVar):
        return SecretEnv(env=value.env_var_name)
    if isinstance(value, str):
        raise ValueError(
            "an API key must be given as dg.EnvVar('NAME') (run config: {env: NAME}), never as its value"
        )
    return value


def _env_name(value: SecretEnv | dg.EnvVar) -> str:
    """The name of the environment variable a secret field names."""
    return value.env_var_name if isinstance(value, dg.EnvVar) else value.env


def _check_named(value: SecretEnv | dg.EnvVar | None, default: str, what: str, otherwise: str) -> None:
    """A ConfigError when ``value`` names a variable other than ``default`` that is not set: falling back
    (to ``otherwise``) would run with another graph or decider, with nothing said."""
    named = _env_name(value) if value is not None else default
    if named != default and not os.environ.get(named):
        raise ConfigError(
            f"{what} names the environment variable {named}, which is not set (or is empty) here: set it "
            f"where runs and sensors execute (without it, {otherwise})"
        )


def _secret(value: SecretEnv | dg.EnvVar | None) -> SecretStr | None:
    """The secret's current value (None when unset or empty)."""
    if value is None:
        return None
    found = os.environ.get(_env_name(value))
    return SecretStr(found) if found else None


class WarehouseResource(dg.ConfigurableResource):
    """Root folder of the Parquet tables and ``warehouse.duckdb`` (default: GRAPHWALK_WAREHOUSE)."""

    root: str | None = Field(default=None, description="default: GRAPHWALK_WAREHOUSE, else ./warehouse")

    def path(self) -> Path:
        return Path(self.root or get_settings().warehouse).expanduser().resolve()

    def warehouse(self) -> Warehouse:
        return Warehouse(self.path())


class SourcesResource(dg.ConfigurableResource):
    """The declared sources: a sources.yaml file (default: GRAPHWALK_SOURCES, else data/sources.yaml)."""

    path: str | None = Field(default=None, description="default: GRAPHWALK_SOURCES, else data/sources.yaml")

    def file(self) -> Path:
        return Path(self.path or os.environ.get("GRAPHWALK_SOURCES") or SOURCES_FILE).resolve()

    def specs(self) -> list[Any]:
        from graphwalk_core.ingest.sources.specs import load_sources

        return load_sources(self.file())

    def spec(self, source_id: str) -> Any:
        """The spec of one source; an InputError names the file when it is not declared (a partition of an
        entry since removed or renamed, run by hand or by a backfill over every partition)."""
        found = {s.id: s for s in self.specs()}
        if source_id not in found:
            raise InputError(
                f"source {source_id!r} is not declared in {self.file()} (has {sorted(found)}): its partition "
                "outlives an entry removed or renamed there, and nothing it ingested is retracted "
                "(knowledge_graph's check ledger_sources_declared names what the graph holds of it)"
            )
        return found[source_id]


def _url_field(value: Any) -> Any:
    """Accept ``dg.EnvVar("NAME")`` or ``{env: NAME}``; refuse a literal URL, whose password would show in
    the UI's run config (the error never repeats the password)."""
    if isinstance(value, dg.EnvVar):
        return SecretEnv(env=value.env_var_name)
    if isinstance(value, str):
        has = "has a password: " if has_password(value) else ""
        raise ValueError(
            f"graph store URL {redact_url(value)} {has}give it as dg.EnvVar('NAME') (run config: "
            "{env: NAME}), never as its value, which the UI's run config would show"
        )
    return value


#: The graph store URL's variable by default (the settings' own): unset, the graph is SQLite in the warehouse.
DEFAULT_URL_ENV = "GRAPHWALK_GRAPH_URL"


class GraphStoreResource(dg.ConfigurableResource):
    """The graph store: the URL in the environment variable ``url`` names (``dg.EnvVar("NAME")``), else
    GRAPHWALK_GRAPH_URL, else a SQLite file ``graph.sqlite`` in the warehouse. A literal URL is refused,
    so run config and the UI only ever show the variable's name, never a password."""

    model_config = HIDE_INPUT

    url: SecretEnv | None = Field(
        default=None,
        description="the URL's environment variable: dg.EnvVar(...) / {env: NAME}; default: "
        "GRAPHWALK_GRAPH_URL, else sqlite in the warehouse",
    )
    warehouse: WarehouseResource

    _only_env = field_validator("url", mode="before")(_url_field)

    def resolved_url(self) -> str:
        """The URL; a variable named in ``url`` other than GRAPHWALK_GRAPH_URL that is not set is a
        ConfigError (falling back would read and write another graph, with nothing said)."""
        otherwise = f"the graph would be another one: {DEFAULT_URL_ENV}'s, else the warehouse's graph.sqlite"
        _check_named(self.url, DEFAULT_URL_ENV, "graph_store's url", otherwise)
        configured = _secret(self.url) or get_settings().graph_url
        if isinstance(configured, SecretStr):
            configured = configured.get_secret_value()
        return configured or f"sqlite:///{self.warehouse.path() / 'graph.sqlite'}"

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        """Open the store for the length of an ``async with`` block."""
        from graphwalk_core.stores.open import open_store

        self.warehouse.path().mkdir(parents=True, exist_ok=True)
        store = open_store(self.resolved_url(), create=True)
        try:
            yield store
        finally:
            await store.close()


#: The Jev key's variable by default (the settings' own): unset, the decider is the local one.
DEFAULT_JEV_KEY_ENV = "GRAPHWALK_JEV_API_KEY"


class DeciderResource(dg.ConfigurableResource):
    """The decision backend: ``jev`` (needs a key), ``local`` or ``trained``; default as GRAPHWALK_DECIDER."""

    model_config = HIDE_INPUT

    backend: str | None = Field(
        default=None, description="jev | local | trained | fake; default: jev with a key"
    )
    model_path: str | None = Field(
        default=None, description="trained decider folder (default: GRAPHWALK_DECIDER_MODEL)"
    )
    jev_provider: str | None = None
    jev_api_key: SecretEnv | None = Field(
        default=None, description="the Jev key's environment variable: dg.EnvVar(...) / {env: NAME}"
    )
    jev_base_url: str | None = None
    jev_model: str | None = None

    _only_env = field_validator("jev_api_key", mode="before")(_secret_field)

    def overrides(self) -> dict[str, Any]:
        if (self.backend or get_settings().decider) in (None, "jev"):  # the decider that needs the key
            otherwise = f"the decider would run without that key: {DEFAULT_JEV_KEY_ENV}'s, else the local one"
            _check_named(self.jev_api_key, DEFAULT_JEV_KEY_ENV, "decider's jev_api_key", otherwise)
        return {
            "decider": self.backend,
            "decider_model": Path(self.model_path) if self.model_path else None,
            "jev_provider": self.jev_provider,
            "jev_api_key": _secret(self.jev_api_key),
            "jev_base_url": self.jev_base_url,
            "jev_model": self.jev_model,
        }

    def settings(self) -> GraphwalkSettings:
        return settings_with(**self.overrides())

    def make(self, embedder: Any | None = None) -> Any:
        """The DecisionBackend (the local decider uses ``embedder`` when given)."""
        return Backends(self.settings()).decider(embedder=embedder)


class LLMResource(dg.ConfigurableResource):
    """The LLM: a litellm model string, or none for the offline extractor (no LLM)."""

    model_config = HIDE_INPUT

    model: str | None = Field(default=None, description="litellm model string; none: offline")
    api_base: str | None = None
    api_key: SecretEnv | None = Field(
        default=None, description="the LLM key's environment variable: dg.EnvVar(...) / {env: NAME}"
    )

    _only_env = field_validator("api_key", mode="before")(_secret_field)

    def overrides(self) -> dict[str, Any]:
        return {"llm_model": self.model, "llm_api_base": self.api_base, "llm_api_key": _secret(self.api_key)}

    def settings(self) -> GraphwalkSettings:
        return settings_with(**self.overrides())

    def make(self) -> Any:
        """An LLMBackend, or None when no model is configured (offline extraction)."""
        return Backends(self.settings()).llm

    def extractor(self, choice: str | None = None) -> Any:
        """The extractor a source asks for: ``llm``, ``nlp``, or (None) the LLM when configured."""
        return Backends(self.settings()).extractor(choice)


class EmbedderResource(dg.ConfigurableResource):
    """The embedder: a local fastembed model folder (default: the shared MiniLM folder when present)."""

    model: str | None = None
    model_path: str | None = None
    model_file: str | None = Field(
        default=None, description="another ONNX file of the folder, e.g. model_qint8_dynamic.onnx (faster)"
    )

    def overrides(self) -> dict[str, Any]:
        return {
            "embed_model": self.model,
            "embed_model_path": Path(self.model_path) if self.model_path else None,
            "embed_model_file": self.model_file,
        }

    def settings(self) -> GraphwalkSettings:
        return settings_with(**self.overrides())

    def make(self) -> Any:
        return Backends(self.settings()).embedder


def backends(decider: DeciderResource, llm: LLMResource, embedder: EmbedderResource) -> Backends:
    """One builder over the three resources' settings (for an asset that needs several backends)."""
    return Backends(settings_with(**decider.overrides(), **llm.overrides(), **embedder.overrides()))


def _file_name(key: str) -> str:
    """A partition key as the name of its file; one holding a '/' is refused: Dagster checks no dynamic
    partition key (the UI and GraphQL add any), and ``../../x`` read and wrote files outside the warehouse."""
    if "/" in key:
        raise InputError(
            f"partition {key!r} cannot name a file under the warehouse's objects folder (it holds a '/'): "
            "delete that partition (a source id holds no '/')"
        )
    return key


class JsonIOManager(dg.ConfigurableIOManager):
    """Stores asset outputs as JSON under ``<warehouse>/objects/<asset>/<partition>.json``.

    Values are (lists of) pydantic models or plain JSON; they are validated back into the
    annotated input type on load, so the files stay readable and diffable.
    """

    warehouse: WarehouseResource

    def _path(self, context: dg.OutputContext | dg.InputContext) -> Path:
        """The asset's (partition's) file; refused when its folder leads out of the warehouse (a symlink)."""
        path = self._file(context)
        inside(self.warehouse.path(), path.parent)
        return path

    def _file(self, context: dg.OutputContext | dg.InputContext) -> Path:
        folder = self.warehouse.path() / "objects" / "/".join(context.asset_key.path)
        if not context.has_asset_partitions:
            return folder / "all.json"
        key = context.asset_partition_key
        if isinstance(key, dg.MultiPartitionKey):
            return folder.joinpath(
                *(_file_name(f"{d}={v}") for d, v in sorted(key.keys_by_dimension.items()))
            ).with_suffix(".json")
        return folder / f"{_file_name(key)}.json"

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        annotation = context.dagster_type.typing_type if context.dagster_type else Any
        adapter = TypeAdapter(annotation if annotation not in (None, object) else Any)
        path = write_text_atomic(adapter.dump_json(obj, indent=1).decode(), self._path(context))
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path))})

    def load_input(self, context: dg.InputContext) -> Any:
        path = self._path(context)
        if not path.exists():
            raise FileNotFoundError(f"{path}: materialize {context.asset_key.to_user_string()} first")
        annotation = context.dagster_type.typing_type if context.dagster_type else Any
        adapter = TypeAdapter(annotation if annotation not in (None, object) else Any)
        try:
            return adapter.validate_json(path.read_bytes())
        except ValidationError as exc:  # cut short, or written by a version whose models differ
            asset, error = context.asset_key.to_user_string(), exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            raise InputError(
                f"{path} does not hold a stored {asset} output this version reads "
                f"({f'{field}: ' if field else ''}{error['msg']}): materialize {asset} again (the file is "
                "left as it is)"
            ) from None


def default_resources() -> dict[str, Any]:
    """The resource map: embedded defaults, keys named by their environment variables (never values)."""
    warehouse = WarehouseResource()
    return {
        "warehouse": warehouse,
        "sources": SourcesResource(),
        "graph_store": GraphStoreResource(url=dg.EnvVar(DEFAULT_URL_ENV), warehouse=warehouse),
        "decider": DeciderResource(jev_api_key=dg.EnvVar(DEFAULT_JEV_KEY_ENV)),
        "llm": LLMResource(api_key=dg.EnvVar("GRAPHWALK_LLM_API_KEY")),
        "embedder": EmbedderResource(),
        "io_manager": JsonIOManager(warehouse=warehouse),
    }


@dg.definitions
def resources() -> dg.Definitions:
    """Shared resources; runs execute in process (steps are light and share loaded models)."""
    return dg.Definitions(resources=default_resources(), executor=dg.in_process_executor)
