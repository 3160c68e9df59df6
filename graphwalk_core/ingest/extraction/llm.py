"""LLM extractor: one structured-output call per chunk through an LLMBackend, then cleanup."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field, model_validator

from graphwalk_core.ingest.extraction.base import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractorResult,
)
from graphwalk_core.ingest.extraction.cleanup import clean_extraction
from graphwalk_core.llm.base import LLMBackend, Message

#: Bump when the prompt or schema changes: the ledger then reprocesses documents and the cache misses.
LLM_PROMPT_VERSION = "1"

SYSTEM_PROMPT = """You extract a knowledge graph from a passage.
Return a JSON object {"entities": [...], "relations": [...]}.
- entities: {"name": exact surface name, "type": short lowercase type such as person, film, organization,
  place, date, work, event, concept; "description": one sentence from the passage about it;
  "attributes": {key: literal value} for facts that are plain values (numbers, dates, short strings)}.
- relations: {"source": entity name, "type": short snake_case verb phrase, "target": entity name}.
Use only facts stated in the passage. Name every entity the same way each time."""


def _a_value(value: str | int | float | bool | None) -> bool:
    """Whether an attribute the model gave is a value to keep: not null, and not a float JSON has no number
    for (Python's JSON reads ``NaN`` and ``Infinity``; a SQL store would keep null, the memory store NaN)."""
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


class LLMEntity(BaseModel):
    name: str = Field(min_length=1)
    type: str = "entity"
    description: str | None = None
    attributes: dict[str, str | int | float | bool | None] = Field(default_factory=dict)


class LLMRelation(BaseModel):
    source: str = Field(min_length=1)
    type: str = Field(min_length=1)
    target: str = Field(min_length=1)


class LLMExtraction(BaseModel):
    """The schema the LLM's reply must validate against (no pinned ids: those are for structured sources)."""

    entities: list[LLMEntity] = Field(default_factory=list)
    relations: list[LLMRelation] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _names_a_list(cls, data: Any) -> Any:
        """An object with keys but neither of these is not the reply: in a reply cut short, the first whole
        object is an inner one (an entity), which would otherwise validate as an empty extraction. ``{}``
        is: a chunk that names nothing."""
        if isinstance(data, dict) and data and "entities" not in data and "relations" not in data:
            raise ValueError(f"an object with neither 'entities' nor 'relations': keys {sorted(data)}")
        return data

    def to_extraction(self) -> Extraction:
        return Extraction(
            entities=[
                ExtractedEntity(
                    name=e.name,
                    type=e.type or "entity",
                    description=e.description,
                    attributes={k: v for k, v in e.attributes.items() if _a_value(v)},
                )
                for e in self.entities
                if e.name.strip()
            ],
            relations=[
                ExtractedRelation(source=r.source, type=r.type, target=r.target) for r in self.relations
            ],
        )


class LLMExtractor:
    """One call per chunk; the LLM backend retries once with the validation error, else raises LLMError."""

    def __init__(self, llm: LLMBackend) -> None:
        self.llm = llm

    @property
    def version(self) -> str:
        return f"llm:{LLM_PROMPT_VERSION}:{self.llm.model_id}"

    @property
    def model_id(self) -> str:
        return self.llm.model_id

    @property
    def cacheable(self) -> bool:
        return True

    async def extract(self, text: str) -> ExtractorResult:
        messages = [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=text)]
        result = await self.llm.complete(messages, schema=LLMExtraction)
        assert result.parsed is not None  # the backend raises LLMError when the reply never validates
        return ExtractorResult(
            extraction=clean_extraction(result.parsed.to_extraction()),
            usage=result.usage,
            calls=result.attempts,
        )
