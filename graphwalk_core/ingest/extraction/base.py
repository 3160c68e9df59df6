"""Extraction contract: the structured output schema (entities + relations) and the Extractor protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphwalk_core.model.usage import Usage

Literal_ = str | int | float | bool | None


class ExtractedEntity(BaseModel):
    """One entity mention. ``node_id`` pins it to a fixed node (structured sources), bypassing routing."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    type: str = "entity"
    description: str | None = None
    attributes: dict[str, Literal_] = Field(default_factory=dict)
    node_id: str | None = None

    @field_validator("name")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("entity name is blank")
        return v


class ExtractedRelation(BaseModel):
    """A directed relation between two entities named in the same extraction."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(min_length=1)
    type: str = Field(min_length=1)
    target: str = Field(min_length=1)
    attributes: dict[str, Literal_] = Field(default_factory=dict)


class Extraction(BaseModel):
    """What an extractor returns for one chunk (also the LLM's structured-output schema)."""

    model_config = ConfigDict(frozen=True)

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)


class ExtractorResult(BaseModel):
    """An extraction plus what it cost."""

    extraction: Extraction
    usage: Usage = Field(default_factory=Usage)
    calls: int = 0
    cached: bool = False


@runtime_checkable
class Extractor(Protocol):
    """Text in, entities and relations out."""

    @property
    def version(self) -> str:
        """Identity + version, recorded as ``Provenance.extractor`` and in the ledger (e.g. ``nlp:2``)."""

    @property
    def model_id(self) -> str:
        """The model behind the extractor (part of the cache key); empty without one."""

    @property
    def cacheable(self) -> bool:
        """Whether results are worth caching on disk (true for model-backed extractors)."""

    async def extract(self, text: str) -> ExtractorResult:
        """Extract one chunk; raises :class:`graphwalk_core.errors.BackendError` when it cannot."""
