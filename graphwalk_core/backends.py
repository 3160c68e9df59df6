"""One place that builds backends from settings: graph store, embedder, decider, LLM, extractor.

Every CLI command and every Dagster resource builds through :class:`Backends`.

The rule for "not configured" (one rule, both faces): a backend that is not configured (no LLM model,
a Jev decider without a key) is a **reason**, not a crash, wherever something can run without it:
:meth:`Backends.for_systems` gives ``None`` plus the reason, and an eval system that needs it is
recorded as skipped with that reason, in ``graphwalk eval`` and in the Dagster eval assets alike.
A command that cannot do its one job without the backend (``graphwalk query`` without a decider,
``--extractor llm`` without an LLM) fails with the same reason as a ConfigError.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings, get_settings

if TYPE_CHECKING:
    from graphwalk_core.decisions.base import DecisionBackend
    from graphwalk_core.embeddings.base import Embedder
    from graphwalk_core.eval.systems.base import SystemBackends
    from graphwalk_core.ingest.extraction.base import Extractor
    from graphwalk_core.llm.base import LLMBackend
    from graphwalk_core.stores.base import GraphStore

#: ``embed_model_path`` value that selects the HashingEmbedder (no model files at all).
HASHING = "hashing"
#: Where the reasons point a user by default (a face may name its own option too).
LLM_SETTING = "GRAPHWALK_LLM_MODEL"


def settings_with(base: GraphwalkSettings | None = None, **overrides: Any) -> GraphwalkSettings:
    """``base`` (default: the process settings) with the overrides that are not None applied."""
    update = {k: v for k, v in overrides.items() if v is not None}
    return (base or get_settings()).model_copy(update=update)


class Backends:
    """The backends ``settings`` describe, each built on first use and then kept."""

    def __init__(self, settings: GraphwalkSettings | None = None, *, llm_setting: str = LLM_SETTING) -> None:
        self.settings = settings or get_settings()
        self.llm_setting = llm_setting

    def store(self, spec: str | Path, *, create: bool = False) -> GraphStore:
        """The graph store ``spec`` names (see :func:`graphwalk_core.stores.open.open_store`)."""
        from graphwalk_core.stores.open import open_store

        return open_store(spec, create=create)

    @cached_property
    def embedder(self) -> Embedder:
        """``embed_model_path`` (``hashing``: the HashingEmbedder), else ``embed_model`` from fastembed's
        cache when it is set, else the shared MiniLM folder when present (see :func:`make_embedder`)."""
        from graphwalk_core.embeddings.factory import default_model_path, make_embedder
        from graphwalk_core.embeddings.hashing import HashingEmbedder

        path = self.settings.embed_model_path
        if path is not None and str(path) == HASHING:
            return HashingEmbedder()
        if path is None and "embed_model" not in self.settings.model_fields_set:
            path = default_model_path()
        return make_embedder(self.settings.model_copy(update={"embed_model_path": path}))

    def decider(self, name: str | None = None, *, embedder: Embedder | None = None) -> DecisionBackend:
        """The decider ``name`` (default: the settings' choice); ConfigError when it is not configured.

        The local and trained deciders use ``embedder``, else :attr:`embedder`; the trained one loads
        ``decider_model``, else :meth:`warehouse_model`.
        """
        from graphwalk_core.decisions.factory import make_decider

        chosen = name or self.settings.resolved_decider()
        if chosen in ("local", "trained") and embedder is None:
            embedder = self.embedder
        settings = self.settings
        if chosen == "trained" and settings.decider_model is None:
            settings = settings.model_copy(update={"decider_model": self.warehouse_model()})
        return make_decider(settings, embedder=embedder, name=name)

    def warehouse_model(self) -> Path | None:
        """The newest trained decider in the settings' warehouse (what ``graphwalk demo`` and the Dagster
        ``trained_decider`` asset write): the trained decider's model when none is named."""
        from graphwalk_core.warehouse import Warehouse
        from graphwalk_core.warehouse.models import latest_model

        return latest_model(Warehouse(self.settings.warehouse))

    @cached_property
    def llm(self) -> LLMBackend | None:
        """The LLM of ``llm_model``, or None when no model is configured."""
        from graphwalk_core.llm.factory import make_llm

        return make_llm(self.settings)

    def llm_reason(self) -> str:
        return f"no LLM configured (set {self.llm_setting})"

    def extractor(self, choice: str | None = None) -> Extractor:
        """``llm`` (ConfigError without an LLM), ``nlp``, or None: the LLM extractor with an LLM, else nlp."""
        from graphwalk_core.ingest.extraction.choose import choose_extractor

        return choose_extractor(choice, self.llm if choice in ("llm", None) else None)

    def for_systems(self, systems: Sequence[str], decider: str | None = None) -> SystemBackends:
        """Decider, embedder and LLM for the eval ``systems``; what is not configured is None with its
        reason. When every one of them needs the LLM and there is none, no model is loaded at all."""
        from graphwalk_core.eval.systems.base import SystemBackends
        from graphwalk_core.eval.systems.registry import NEEDS_LLM

        reasons: dict[str, str] = {}
        llm = self.llm
        if llm is None:
            reasons["llm"] = self.llm_reason()
            if all(name in NEEDS_LLM for name in systems):
                return SystemBackends(None, None, None, reasons)
        embedder = self.embedder
        try:
            chosen: DecisionBackend | None = self.decider(decider, embedder=embedder)
        except ConfigError as exc:
            chosen = None
            reasons["decider"] = str(exc)
        return SystemBackends(chosen, embedder, llm, reasons)
