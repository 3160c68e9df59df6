"""The JSON-serializable outputs of the ingestion stages (what the Dagster assets pass along)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from graphwalk_core.ingest.chunking import Chunk
from graphwalk_core.ingest.extraction.base import Extraction
from graphwalk_core.ingest.ledger import LedgerEntry
from graphwalk_core.ingest.sources.base import SkippedItem, SourceDocument
from graphwalk_core.llm.base import LLMError
from graphwalk_core.model import Edge, Node
from graphwalk_core.model.usage import Usage

RoutingMode = Literal["jev", "exact"]


class Cost(BaseModel):
    """Calls, tokens and provider-reported cost (None when no provider reported one)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def add(self, usage: Usage, calls: int = 1) -> None:
        self.calls += calls
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if usage.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + usage.cost_usd

    def add_failed(self, error: Exception) -> None:
        """What a failed call still cost: an LLM's replies that never validated were billed all the same
        (an :class:`~graphwalk_core.llm.base.LLMError` carries them); other failures cost nothing known."""
        if isinstance(error, LLMError):
            self.add(error.usage, calls=error.attempts)

    def plus(self, other: Cost) -> Cost:
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0) + (other.cost_usd or 0)
        )
        return Cost(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=cost,
        )


#: A document's outcome in a diff: the list fields of :class:`DocumentDiff`, in this order everywhere
#: (the ``documents`` table, the ingest report).
DIFF_STATUSES = ("new", "changed", "incomplete", "unchanged", "deleted", "kept")


class DocumentDiff(BaseModel):
    """A source's documents against the ledger. ``documents`` are the ones to process (new, changed,
    incomplete), in id order, unless the diff put them in a spool. ``kept`` are ledgered documents whose
    input was skipped this time: they are neither processed nor retracted (unreadable input loses no data)."""

    source_id: str
    extractor: str
    #: where the documents were read from (``OriginAware.origin``), recorded when the diff is applied
    origin: str | None = None
    new: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    incomplete: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    kept: list[str] = Field(default_factory=list)
    skipped: list[SkippedItem] = Field(default_factory=list)
    documents: list[SourceDocument] = Field(default_factory=list)
    ledger: dict[str, LedgerEntry] = Field(default_factory=dict)

    def status_counts(self) -> dict[str, int]:
        """How many documents have each of ``DIFF_STATUSES``."""
        return {status: len(getattr(self, status)) for status in DIFF_STATUSES}

    @property
    def to_process(self) -> list[str]:
        """Ids of the documents to process, in id order (``documents``' order, or a spool's; see
        :mod:`~graphwalk_core.ingest.spool`)."""
        return sorted([*self.new, *self.changed, *self.incomplete])

    @property
    def retracting(self) -> set[str]:
        """Document ids whose old provenance this run retracts."""
        return set(self.changed) | set(self.incomplete) | set(self.deleted)


class DocumentRef(BaseModel):
    """A document to process, as the later stages need it (its ledger facts)."""

    id: str
    content_hash: str
    extractor: str


class ChunkSet(BaseModel):
    """Chunks of the documents to process. A structured document is one chunk with a preset extraction."""

    source_id: str
    chunks: list[Chunk] = Field(default_factory=list)
    documents: list[DocumentRef] = Field(default_factory=list)
    retracting: list[str] = Field(default_factory=list, description="document ids whose old data goes")
    preset: dict[str, Extraction] = Field(default_factory=dict, description="chunk id -> extraction")


class ChunkExtraction(BaseModel):
    chunk: Chunk
    extractor: str
    extraction: Extraction | None = None
    error: str | None = None
    cached: bool = False


class ExtractionSet(BaseModel):
    """One extraction (or error) per chunk, in chunk order, with what it cost."""

    source_id: str
    documents: list[DocumentRef] = Field(default_factory=list)
    retracting: list[str] = Field(default_factory=list)
    items: list[ChunkExtraction] = Field(default_factory=list)
    cost: Cost = Field(default_factory=Cost)
    cache_hits: int = 0

    @property
    def failures(self) -> int:
        return sum(1 for i in self.items if i.error is not None)


class MentionDecision(BaseModel):
    """Where one mention went: ``merge`` into an indexed node, ``new`` node, or ``pinned`` (fixed id)."""

    chunk_id: str
    name: str
    type: str
    node_id: str
    action: Literal["merge", "new", "pinned"]
    via: Literal["none", "exact", "decider", "llm", "fallback", "pinned"]
    probability: float = 1.0
    candidates: list[str] = Field(default_factory=list)
    #: a pinned mention's node, new to the graph, takes over this routed node of its name (``Router``)
    absorbed: str | None = None


class DocumentPlan(BaseModel):
    """Everything one document writes: incoming node and edge data keyed by their final ids (one element
    per id: its mentions and relations folded, in routing order)."""

    document_id: str
    content_hash: str
    extractor: str
    routing: str = ""
    status: Literal["complete", "incomplete"] = "complete"
    errors: list[str] = Field(default_factory=list)
    #: chunks whose extraction failed: the plan lacks their facts, so a document that had data keeps it
    #: (an incomplete plan without them, routed on exact names in an outage, holds every fact: written)
    failed_chunks: int = 0
    nodes: list[Node] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    #: routed node id -> the pinned node that takes it over once the document is written
    absorbed: dict[str, str] = Field(default_factory=dict)


class RoutingPlan(BaseModel):
    source_id: str
    routing: RoutingMode
    documents: list[DocumentPlan] = Field(default_factory=list)
    mentions: list[MentionDecision] = Field(default_factory=list)
    cost: Cost = Field(default_factory=Cost)
    escalations: int = 0
    fallbacks: int = 0


class WriteCounts(BaseModel):
    """Element writes, counted by the resolution functions as they happen."""

    nodes_added: int = 0
    nodes_merged: int = 0
    nodes_retracted: int = 0
    nodes_deleted: int = 0
    edges_added: int = 0
    edges_merged: int = 0
    edges_retracted: int = 0
    edges_deleted: int = 0
    conflicts: int = 0


class UpdateReport(WriteCounts):
    """What ``apply_plan`` changed (per document, atomically)."""

    source_id: str
    ledger_written: int = 0
    ledger_deleted: int = 0
    documents_applied: list[str] = Field(default_factory=list)
    documents_incomplete: list[str] = Field(default_factory=list)
