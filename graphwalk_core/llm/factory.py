"""Choose the LLM backend from settings (none when no model is configured)."""

from __future__ import annotations

from graphwalk_core.llm.litellm_backend import LiteLLMBackend
from graphwalk_core.settings import GraphwalkSettings


def make_llm(settings: GraphwalkSettings) -> LiteLLMBackend | None:
    """A LiteLLMBackend for ``GRAPHWALK_LLM_MODEL`` (with its api base and key), or None when unset."""
    if not settings.llm_model:
        return None
    return LiteLLMBackend(settings.llm_model, api_base=settings.llm_api_base, api_key=settings.llm_api_key)
