"""Traversal settings: strategy, hop mode, scoring, prompt knobs and the walk's budget."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from graphwalk_core.errors import ConfigError
from graphwalk_core.stores.base import Direction

Strategy = Literal["greedy", "beam", "sample"]
HopMode = Literal["entity", "relation"]

#: Short glosses for MetaQA's 9 relations (stored direction: film --relation--> value).
METAQA_RELATION_GLOSSES: dict[str, str] = {
    "directed_by": "film --directed_by--> its director",
    "written_by": "film --written_by--> its writer",
    "starred_actors": "film --starred_actors--> an actor in it",
    "release_year": "film --release_year--> the year it was released",
    "in_language": "film --in_language--> its language",
    "has_tags": "film --has_tags--> a descriptive tag",
    "has_genre": "film --has_genre--> its genre",
    "has_imdb_votes": "film --has_imdb_votes--> its IMDb vote level",
    "has_imdb_rating": "film --has_imdb_rating--> its IMDb rating level",
}


class Budget(BaseModel):
    """Hard limits the engine enforces whatever the strategy or the decider does.

    ``max_depth`` counts decision depths including STOP (4 = three hops plus STOP). Depth and calls
    are checked before each call, tokens after it; expansions (adjacency reads) and nodes (distinct
    nodes a walk reached) are checked as the walk grows.
    """

    model_config = ConfigDict(frozen=True)

    max_depth: int = Field(default=4, ge=1)
    max_decision_calls: int = Field(default=12, ge=1)
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_expansions: int = Field(default=50_000, ge=1)
    max_nodes: int = Field(default=100_000, ge=1)


class TraversalConfig(BaseModel):
    """Everything that shapes one walk. Greedy, beam and sample share one code path."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: Strategy = "greedy"
    hop_mode: HopMode = "entity"
    direction: Direction = "both"
    beam_width: int = Field(default=3, ge=1)
    n_samples: int = Field(default=4, ge=1)
    length_alpha: float = Field(default=1.0, ge=0.0)
    prob_floor: float = Field(default=1e-3, gt=0.0, lt=1.0)
    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int = 0
    beam_batching: Literal["per_depth", "per_beam"] = "per_depth"
    prefilter_threshold: int = Field(default=50, ge=1)
    prefilter_top_n: int = Field(default=30, ge=1)
    max_frontier: int = Field(default=2000, ge=1)
    leads_to_names: int = Field(default=3, ge=0)
    max_witnesses: int = Field(default=5, ge=1)
    exclude_visited: bool = True
    allow_stop_at_start: bool = True
    show_types: bool = False
    stop_style: Literal["plain", "literal"] = "plain"
    relation_glosses: dict[str, str] = Field(default_factory=dict)
    answer_type: Literal["off", "hint"] = "off"
    budget: Budget = Field(default_factory=Budget)

    @model_validator(mode="after")
    def _top_n_within_threshold(self) -> TraversalConfig:
        if self.prefilter_top_n > self.prefilter_threshold:
            raise ValueError(
                f"prefilter_top_n ({self.prefilter_top_n}) must be <= prefilter_threshold "
                f"({self.prefilter_threshold})"
            )
        return self

    @property
    def width(self) -> int:
        """Parallel walks: 1 for greedy, ``beam_width`` for beam, ``n_samples`` for sample."""
        return {"greedy": 1, "beam": self.beam_width, "sample": self.n_samples}[self.strategy]

    def check_backend(self, max_options: int) -> None:
        """Raise ``ConfigError`` when the prefilter would show more options than the backend takes."""
        if self.prefilter_top_n > max_options - 1:
            raise ConfigError(
                f"prefilter_top_n={self.prefilter_top_n} exceeds the decider's max_options - 1 "
                f"({max_options - 1}): STOP needs one slot"
            )
