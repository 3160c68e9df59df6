"""Build a graph from a dataset's passages with the ingestion pipeline (one document per passage)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from graphwalk_core.decisions.base import DecisionBackend
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.eval.datasets.base import Passage
from graphwalk_core.ingest.extraction.base import Extractor
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.ingest.outputs import RoutingMode
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.report import IngestReport
from graphwalk_core.ingest.sources.base import SkippedItem, SourceDocument, SourceProfile
from graphwalk_core.llm.base import LLMBackend
from graphwalk_core.model import text_hash
from graphwalk_core.stores.base import GraphStore


class PassageSource:
    """An in-memory ingestion source: each passage is one text document whose id is the passage id.

    Provenance ``source_id`` is therefore ``<source>/<passage id>``.
    """

    def __init__(self, source_id: str, passages: Sequence[Passage]) -> None:
        self._source_id = source_id
        self.passages = list(passages)

    @property
    def source_id(self) -> str:
        return self._source_id

    @property
    def skipped(self) -> list[SkippedItem]:
        return []

    @staticmethod
    def text_of(passage: Passage) -> str:
        return f"{passage.title}\n\n{passage.text}"

    async def profile(self) -> SourceProfile:
        return SourceProfile(
            source_id=self._source_id,
            kind="files",
            location="memory",
            documents=len(self.passages),
            bytes=sum(len(self.text_of(p).encode("utf-8")) for p in self.passages),
        )

    async def documents(self) -> AsyncIterator[SourceDocument]:
        for p in self.passages:
            text = self.text_of(p)
            yield SourceDocument(
                id=p.id, text=text, content_hash=text_hash(text), metadata={"title": p.title}
            )


class PassageIngester:
    """``await ingester(store, passages)``: ingest passages; keeps the last report and timing."""

    def __init__(
        self,
        *,
        source_id: str = "corpus",
        extractor: Extractor | None = None,
        routing: RoutingMode = "exact",
        decider: DecisionBackend | None = None,
        embedder: Embedder | None = None,
        llm: LLMBackend | None = None,
    ) -> None:
        self.source_id = source_id
        self.extractor = extractor or NLPExtractor()
        self.routing = routing
        self.decider, self.embedder, self.llm = decider, embedder, llm
        self.report: IngestReport | None = None
        self.seconds: float | None = None

    def identity(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor.version,
            "extractor_model": self.extractor.model_id or None,
            "routing": self.routing,
            "routing_decider": self.decider.model_id
            if self.decider is not None and self.routing == "jev"
            else None,
        }

    def key(self) -> str:
        return "|".join(str(v) for v in self.identity().values())

    async def __call__(self, store: GraphStore, passages: Sequence[Passage]) -> IngestReport:
        start = time.perf_counter()
        self.report = await ingest(
            PassageSource(self.source_id, passages),
            store,
            extractor=self.extractor,
            decider=self.decider,
            embedder=self.embedder,
            llm=self.llm,
            routing=self.routing,
        )
        self.seconds = time.perf_counter() - start
        return self.report
