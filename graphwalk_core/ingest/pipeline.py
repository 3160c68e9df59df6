"""``ingest``: the stages composed, for the CLI and anything that wants one call."""

from __future__ import annotations

import time
from collections.abc import Callable

from graphwalk_core.decisions.base import DecisionBackend
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.ingest.chunking import DEFAULT_CHUNK_CHARS
from graphwalk_core.ingest.extraction.base import Extractor
from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.ingest.outputs import RoutingMode
from graphwalk_core.ingest.report import IngestReport
from graphwalk_core.ingest.routing import DEFAULT_ROUTE_THRESHOLD
from graphwalk_core.ingest.sources.base import Source
from graphwalk_core.ingest.stages import (
    apply_plan,
    chunk_documents,
    diff_documents,
    extract_chunks,
    route_extractions,
)
from graphwalk_core.llm.base import LLMBackend
from graphwalk_core.stores.base import GraphStore

#: Progress callback: (stage, done, total).
Progress = Callable[[str, int, int], None]


async def ingest(
    source: Source,
    store: GraphStore,
    *,
    extractor: Extractor | None = None,
    decider: DecisionBackend | None = None,
    embedder: Embedder | None = None,
    llm: LLMBackend | None = None,
    routing: RoutingMode = "jev",
    cache: ExtractionCache | None = None,
    max_chars: int = DEFAULT_CHUNK_CHARS,
    route_threshold: float = DEFAULT_ROUTE_THRESHOLD,
    progress: Progress | None = None,
) -> IngestReport:
    """Bring ``store`` up to date with ``source``: only new, changed, retried and deleted documents cost
    anything; unchanged ones make no extraction or decision call. ``extractor`` defaults to the offline
    NLP extractor; ``routing="jev"`` needs a ``decider``."""
    extractor = extractor or NLPExtractor()
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = round(now - clock, 3)
        clock = now

    diff = await diff_documents(source, store, extractor=extractor)
    lap("diff")
    chunks = chunk_documents(diff, max_chars=max_chars)
    if progress:
        progress("extract", 0, len(chunks.chunks))
    extractions = await extract_chunks(chunks, extractor, cache)
    lap("extract")
    if progress:
        progress("extract", len(chunks.chunks), len(chunks.chunks))
    plan = await route_extractions(
        extractions, store, decider, embedder, llm, routing, route_threshold=route_threshold
    )
    lap("route")
    total = len(plan.documents)
    done = 0

    def applied(_doc_id: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress("apply", done, total)

    if progress:
        progress("apply", 0, total)
    update = await apply_plan(store, diff, plan, on_document=applied)
    lap("apply")
    return IngestReport(
        source_id=source.source_id,
        routing=routing,
        extractor=extractor.version,
        **diff.status_counts(),
        failed=update.documents_incomplete,
        skipped=diff.skipped,
        chunks=len(chunks.chunks),
        mentions=len(plan.mentions),
        escalations=plan.escalations,
        fallbacks=plan.fallbacks,
        extraction_cost=extractions.cost,
        routing_cost=plan.cost,
        cache_hits=extractions.cache_hits,
        update=update,
        seconds=seconds,
    )
