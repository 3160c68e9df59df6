"""The ingest report: what a run read, skipped, wrote and cost; rendered as a rich table for the CLI."""

from __future__ import annotations

from pydantic import BaseModel, Field

from graphwalk_core.ingest.outputs import Cost, UpdateReport
from graphwalk_core.ingest.sources.base import SkippedItem


class IngestReport(BaseModel):
    source_id: str
    routing: str
    extractor: str
    new: int = 0
    changed: int = 0
    incomplete: int = 0
    unchanged: int = 0
    deleted: int = 0
    kept: int = 0
    failed: list[str] = Field(
        default_factory=list, description="documents left incomplete (retried next run)"
    )
    skipped: list[SkippedItem] = Field(default_factory=list)
    chunks: int = 0
    mentions: int = 0
    escalations: int = 0
    fallbacks: int = 0
    extraction_cost: Cost = Field(default_factory=Cost)
    routing_cost: Cost = Field(default_factory=Cost)
    cache_hits: int = 0
    update: UpdateReport
    seconds: dict[str, float] = Field(default_factory=dict, description="wall seconds per phase")
    cpu_seconds: dict[str, float] = Field(
        default_factory=dict, description="CPU seconds per phase (this process, all threads)"
    )

    @property
    def cost(self) -> Cost:
        return self.extraction_cost.plus(self.routing_cost)

    def _skipped_summary(self) -> str:
        """How much input was skipped, and how many documents from earlier runs it kept as they were."""
        kept = f"; {self.kept} document{'s' if self.kept != 1 else ''} kept from earlier runs"
        return f"{len(self.skipped)}{kept if self.kept else ''}"

    def summary_rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a summary table."""
        u = self.update
        cost = self.cost
        return [
            (
                "documents",
                f"new {self.new}, changed {self.changed}, retried {self.incomplete}, "
                f"unchanged {self.unchanged}, deleted {self.deleted}, failed {len(self.failed)}",
            ),
            ("skipped input", self._skipped_summary()),
            (
                "nodes",
                f"added {u.nodes_added}, merged {u.nodes_merged}, retracted {u.nodes_retracted}, "
                f"deleted {u.nodes_deleted}",
            ),
            (
                "edges",
                f"added {u.edges_added}, merged {u.edges_merged}, retracted {u.edges_retracted}, "
                f"deleted {u.edges_deleted}",
            ),
            ("conflicts", str(u.conflicts)),
            ("chunks / mentions", f"{self.chunks} / {self.mentions} (cache hits {self.cache_hits})"),
            (
                "extraction calls",
                f"{self.extraction_cost.calls} ({self.extraction_cost.input_tokens} in, "
                f"{self.extraction_cost.output_tokens} out tokens)",
            ),
            (
                "decision calls",
                f"{self.routing_cost.calls} ({self.routing_cost.input_tokens} in, "
                f"{self.routing_cost.output_tokens} out tokens), escalations {self.escalations}, "
                f"fallbacks {self.fallbacks}",
            ),
            ("cost", "n/a (not reported)" if cost.cost_usd is None else f"${cost.cost_usd:.6f}"),
            ("time", ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items())),
        ]
