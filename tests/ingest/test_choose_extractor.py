"""choose_extractor: the extractor asked for, else the LLM when configured, else nlp."""

from __future__ import annotations

import pytest

from graphwalk_core.errors import ConfigError
from graphwalk_core.ingest.extraction.choose import choose_extractor
from graphwalk_core.ingest.extraction.llm import LLMExtractor
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.llm.fake import FakeLLM


def test_choice_rules() -> None:
    llm = FakeLLM("{}")
    assert type(choose_extractor(None, None)) is NLPExtractor
    assert type(choose_extractor(None, llm)) is LLMExtractor
    assert type(choose_extractor("nlp", llm)) is NLPExtractor
    assert type(choose_extractor("llm", llm)) is LLMExtractor
    with pytest.raises(ConfigError, match="the llm extractor needs an LLM: set GRAPHWALK_LLM_MODEL"):
        choose_extractor("llm", None)
    with pytest.raises(ConfigError, match="unknown extractor 'spacy'"):
        choose_extractor("spacy", llm)
