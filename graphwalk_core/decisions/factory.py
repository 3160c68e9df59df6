"""Build the decision backend the settings ask for."""

from __future__ import annotations

from graphwalk_core.decisions.base import DecisionBackend
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.decisions.jev import JevBackend
from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.factory import make_embedder
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings

DECIDER_NAMES = ("jev", "local", "trained", "fake")


def make_decider(
    settings: GraphwalkSettings, *, embedder: Embedder | None = None, name: str | None = None
) -> DecisionBackend:
    """The decider named ``name``, else ``settings.resolved_decider()`` (jev with a key, else local).

    ``jev`` needs ``GRAPHWALK_JEV_API_KEY``; ``local`` uses ``embedder`` or the settings' embedder
    (:func:`graphwalk_core.embeddings.make_embedder`) and ``GRAPHWALK_LOCAL_*``; ``trained`` loads
    ``GRAPHWALK_DECIDER_MODEL`` and needs the embedder it was trained with; ``fake`` is seeded 0.
    """
    chosen = name or settings.resolved_decider()
    if chosen == "jev":
        if settings.jev_api_key is None:
            raise ConfigError("the jev decider needs an API key: set GRAPHWALK_JEV_API_KEY")
        return JevBackend.from_settings(settings)
    if chosen == "local":
        return LocalDecisionBackend.from_settings(
            embedder if embedder is not None else make_embedder(settings), settings
        )
    if chosen == "trained":
        if settings.decider_model is None:
            raise ConfigError(
                "the trained decider needs a model folder: set GRAPHWALK_DECIDER_MODEL or --decider-model, "
                f"or train one into the warehouse ({settings.warehouse}) with graphwalk demo or Dagster's "
                "trained_decider asset"
            )
        from graphwalk_core.decisions.trained import TrainedDecisionBackend

        return TrainedDecisionBackend.load(
            settings.decider_model, embedder if embedder is not None else make_embedder(settings)
        )
    if chosen == "fake":
        return FakeDecisionBackend(seed=0)
    expected = list(DECIDER_NAMES)
    raise ConfigError(f"unknown decider {chosen!r}: expected one of {expected} (GRAPHWALK_DECIDER)")
