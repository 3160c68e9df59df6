"""Settings from the environment (prefix ``GRAPHWALK_``) or a ``.env`` file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

DeciderName = Literal["jev", "local", "trained", "fake"]
JevProvider = Literal["typesafe", "openrouter"]

#: Pinned Jev model ids per provider; ``*-latest`` is refused.
DEFAULT_JEV_MODELS: dict[str, str] = {"typesafe": "jev-1.13.0", "openrouter": "typesafe/jev-1.13"}
DEFAULT_JEV_BASE_URLS: dict[str, str] = {
    "typesafe": "https://api.typesafe.ai",
    "openrouter": "https://openrouter.ai/api",
}


#: ``GRAPHWALK_EMBED_CACHE`` values that mean no cache (any case): not a file named ``false`` in the cwd.
EMBED_CACHE_OFF = ("off", "none", "false", "no", "0")


def default_embed_cache() -> Path:
    """``$XDG_CACHE_HOME/graphwalk/vectors.sqlite`` (``~/.cache`` when the variable is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphwalk" / "vectors.sqlite"


class GraphwalkSettings(BaseSettings):
    """All graphwalk configuration. Every field maps to ``GRAPHWALK_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="GRAPHWALK_", env_file=".env", extra="ignore")

    decider: DeciderName | None = Field(
        default=None,
        description="jev | local | trained | fake; default: jev when a Jev key is set, else local",
    )
    decider_model: Path | None = Field(
        default=None,
        description="the trained decider's model folder (`graphwalk train decider --out`); default: the "
        "warehouse's newest (models/decider/LATEST)",
    )
    jev_provider: JevProvider = "typesafe"
    jev_api_key: SecretStr | None = None
    jev_base_url: str | None = Field(default=None, description="default: the provider's public URL")
    jev_model: str | None = Field(default=None, description="default: the provider's pinned Jev id")
    jev_max_retries: int = 3
    jev_timeout_s: float = 30.0

    local_temperature: float = Field(default=0.05, gt=0, description="local decider softmax temperature")
    local_stop_rule: Literal["gain", "description", "fixed"] = Field(
        default="gain", description="how the local decider scores STOP (see decisions/local.py)"
    )
    local_stop_bias: float = Field(default=0.05, description="added to STOP's score by the local decider")
    local_option_style: Literal["natural", "flat"] = Field(
        default="natural", description="how the local decider renders relation moves (decisions/local.py)"
    )
    local_type_weight: float = Field(
        default=0.5, description="weight of the expected-answer-type term in the local decider"
    )
    local_compose: Literal["text", "parts"] = Field(
        default="text",
        description="local decider: embed each compared text whole, or its parts (decisions/local.py)",
    )

    llm_model: str | None = Field(default=None, description="a litellm model string; none: offline")
    llm_api_base: str | None = None
    llm_api_key: SecretStr | None = None

    embed_model: str = "BAAI/bge-small-en-v1.5"
    embed_model_path: Path | None = Field(default=None, description="a local fastembed model folder")
    embed_model_file: str | None = Field(
        default=None,
        description="ONNX file of embed_model_path to load instead of the model's own "
        "(model_qint8_dynamic.onnx in the shared MiniLM folder: ~2x faster, batch-dependent vectors)",
    )

    embed_cache: str = Field(
        default="",
        description="SQLite file keeping computed embeddings across runs (a re-ingest then embeds only new "
        "names); empty: ~/.cache/graphwalk/vectors.sqlite ($XDG_CACHE_HOME); off (none, false, no, 0): none",
    )

    warehouse: Path = Field(default=Path("warehouse"), description="root folder of Parquet + DuckDB")
    graph_url: SecretStr | None = Field(
        default=None,
        description="the Dagster graph store's SQLAlchemy URL, e.g. postgresql+psycopg://user:pw@host/db; "
        "default: SQLite graph.sqlite in the warehouse",
    )

    def resolved_decider(self) -> DeciderName:
        """The decider to use: the explicit choice, else jev with a key, else local."""
        if self.decider is not None:
            return self.decider
        return "jev" if self.jev_api_key is not None else "local"

    def resolved_embed_cache(self) -> Path | None:
        """The embedding cache file, or None when ``embed_cache`` is ``off`` (or another of
        :data:`EMBED_CACHE_OFF`)."""
        value = self.embed_cache.strip()
        if value.lower() in EMBED_CACHE_OFF:
            return None
        return Path(value).expanduser() if value else default_embed_cache()

    def resolved_jev_model(self) -> str:
        return self.jev_model or DEFAULT_JEV_MODELS[self.jev_provider]

    def resolved_jev_base_url(self) -> str:
        return self.jev_base_url or DEFAULT_JEV_BASE_URLS[self.jev_provider]


class SettingsError(ValueError):
    """A ``GRAPHWALK_*`` variable (in the environment or ``.env``) holds a value its setting cannot take."""


def _problem(error: Mapping[str, Any]) -> str:
    """One invalid setting as the variable that set it, its value and why it was refused."""
    name = f"GRAPHWALK_{'_'.join(str(part) for part in error['loc']).upper()}"
    return f"{name}={error.get('input')!r}: {error['msg']}"


@lru_cache(maxsize=1)
def get_settings() -> GraphwalkSettings:
    """The process-wide settings (read once); a variable holding an invalid value is a SettingsError naming
    it (pydantic's own error names the field, not the variable, and links to its docs)."""
    try:
        return GraphwalkSettings()
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        raise SettingsError(f"invalid setting (environment or .env): {problems}") from None
