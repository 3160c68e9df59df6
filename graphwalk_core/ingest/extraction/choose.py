"""Which extractor a run uses: the one asked for, else the LLM when one is configured, else ``nlp``."""

from __future__ import annotations

from graphwalk_core.errors import ConfigError
from graphwalk_core.ingest.extraction.base import Extractor
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.llm.base import LLMBackend


def choose_extractor(choice: str | None, llm: LLMBackend | None) -> Extractor:
    """``"llm"`` (needs ``llm``), ``"nlp"``, or ``None``: the LLM extractor with an LLM, else ``nlp``."""
    if choice not in (None, "llm", "nlp"):
        raise ConfigError(f"unknown extractor {choice!r}: expected llm or nlp")
    if choice == "llm" and llm is None:
        raise ConfigError("the llm extractor needs an LLM: set GRAPHWALK_LLM_MODEL")
    if choice != "nlp" and llm is not None:
        from graphwalk_core.ingest.extraction.llm import LLMExtractor

        return LLMExtractor(llm)
    return NLPExtractor()
