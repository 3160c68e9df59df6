"""``ingest``: the stages composed, for the CLI and anything that wants one call."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from graphwalk_core.decisions.base import DecisionBackend
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.errors import InputError
from graphwalk_core.ingest.allocator import map_large_blocks, release_free_heap
from graphwalk_core.ingest.chunking import DEFAULT_CHUNK_CHARS
from graphwalk_core.ingest.extraction.base import Extractor
from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.ingest.extraction.nlp import NLPExtractor
from graphwalk_core.ingest.ledger import check_origin, provenance_source, record_origin
from graphwalk_core.ingest.outputs import (
    ChunkSet,
    Cost,
    DocumentDiff,
    ExtractionSet,
    RoutingMode,
    RoutingPlan,
    UpdateReport,
)
from graphwalk_core.ingest.report import IngestReport
from graphwalk_core.ingest.routing import DEFAULT_ROUTE_THRESHOLD, PREFETCH_CHUNKS, ROUTING_VERSIONS, Router
from graphwalk_core.ingest.sources.base import OriginAware, Source
from graphwalk_core.ingest.spool import DocumentSpool
from graphwalk_core.ingest.stages import (
    apply_plan,
    chunk_batches,
    chunk_documents,
    diff_documents,
    document_windows,
    extract_chunks,
    retract_deleted,
    route_extractions,
)
from graphwalk_core.llm.base import LLMBackend
from graphwalk_core.stores.base import GraphStore

#: Documents routed against one graph state and committed together (see :func:`ingest`).
DEFAULT_WINDOW = 256
#: Chunks extracted and routed at once (a long document's in several batches); a multiple of
#: ``PREFETCH_CHUNKS``, so names are embedded ahead in the batches one batch of the window would use.
DEFAULT_ROUTE_CHUNKS = PREFETCH_CHUNKS
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
    window: int = DEFAULT_WINDOW,
    route_chunks: int = DEFAULT_ROUTE_CHUNKS,
    progress: Progress | None = None,
    exclusive_origin: bool = False,
    allow_empty: bool = False,
) -> IngestReport:
    """Bring ``store`` up to date with ``source``: only new, changed, retried and deleted documents cost
    anything; unchanged ones make no extraction or decision call. ``extractor`` defaults to the offline
    NLP extractor; ``routing="jev"`` needs a ``decider``.

    Deleted documents are retracted first; the documents to process wait on disk (a
    :class:`~graphwalk_core.ingest.spool.DocumentSpool`) and then go ``window`` at a time, in id order:
    chunk, extract and route ``route_chunks`` chunks at a time against the stored graph (the candidate
    index brought up to date with what the previous window wrote; a long document's chunks go in several
    batches, routed as in one), and commit the window as one transaction. So memory holds the documents
    and plans of a window, the extractions of a batch (and the next batch's), not the corpus', and a run
    killed at any point and rerun gives the graph an uninterrupted run gives (docs/guarantees.md).
    Large C blocks get pages of their own for the rest of the process, and the C heap's free pages go back
    to the system after each window (:mod:`~graphwalk_core.ingest.allocator`), so the peak memory follows
    what the window and the graph hold.

    A source that knows its origin (:class:`~graphwalk_core.ingest.sources.base.OriginAware`) has it
    recorded with the run's first write; ``exclusive_origin``: refuse, before anything is read, a source
    id recorded from another origin. A source that lists nothing while the graph holds its documents is
    an error that retracts nothing, unless ``allow_empty`` (see ``stages.diff_documents``).
    """
    if window < 1:  # refused before anything is retracted
        raise InputError(f"the routing window must be >= 1 document, got {window}")
    if route_chunks < 1:
        raise InputError(f"the routing batch must be >= 1 chunk, got {route_chunks}")
    extractor = extractor or NLPExtractor()
    map_large_blocks()
    origin = source.origin if isinstance(source, OriginAware) else None
    if origin is not None and not await check_origin(
        store, source.source_id, origin, exclusive=exclusive_origin
    ):
        origin = None  # recorded already
    seconds: dict[str, float] = dict.fromkeys(("diff", "extract", "route", "apply"), 0.0)
    cpu_seconds = dict(seconds)
    clock, cpu_clock = time.perf_counter(), time.process_time()

    def lap(name: str) -> None:
        nonlocal clock, cpu_clock
        now, cpu_now = time.perf_counter(), time.process_time()
        seconds[name] = round(seconds[name] + now - clock, 3)
        cpu_seconds[name] = round(cpu_seconds[name] + cpu_now - cpu_clock, 3)
        clock, cpu_clock = now, cpu_now

    with DocumentSpool() as spool:  # the documents to process wait on disk for their window
        diff = await diff_documents(
            source,
            store,
            extractor=extractor,
            routing=ROUTING_VERSIONS[routing],
            spool=spool,
            allow_empty=allow_empty,
            max_chars=max_chars,
        )
        lap("diff")
        if origin is not None:  # the run's first write
            await record_origin(store, source.source_id, origin)
        update = UpdateReport(source_id=source.source_id)
        await retract_deleted(store, diff, update)
        lap("apply")
        router = Router(store, decider, embedder, llm, routing, route_threshold=route_threshold)
        total, done, chunks, mentions = len(spool), 0, 0, 0
        extraction_cost, cache_hits = Cost(), 0

        def applied(_doc_id: str) -> None:
            nonlocal done
            done += 1
            if progress:
                progress("ingest", done, total)

        if progress:
            progress("ingest", 0, total)

        def batches() -> Iterator[tuple[DocumentDiff, set[str], ChunkSet, bool]]:
            """(a window, the ids it retracts ahead, a batch of its chunks, whether it is its last)."""
            for part, pending in document_windows(diff, window, spool):
                chunk_set = chunk_documents(part, max_chars=max_chars)
                parts = chunk_batches(chunk_set, route_chunks)
                del chunk_set
                while parts:
                    yield part, pending, parts.pop(0), not parts

        async def extracted(chunk_set: ChunkSet) -> ExtractionSet:
            nonlocal chunks, extraction_cost, cache_hits
            extractions = await extract_chunks(chunk_set, extractor, cache)
            chunks += len(chunk_set.chunks)
            extraction_cost = extraction_cost.plus(extractions.cost)
            cache_hits += extractions.cache_hits
            return extractions

        written: set[str] = set()  # nodes the last window wrote: what the next refresh reads back
        plan: RoutingPlan | None = None  # the current window's, routed batch after batch
        queue = batches()
        current = next(queue, None)
        extractions = await extracted(current[2]) if current is not None else None
        lap("extract")
        try:
            while current is not None and extractions is not None:
                part, pending, _, last = current
                current, upcoming = next(queue, None), None
                lap("extract")
                if current is not None and router.embeds_ahead:
                    # the next batch is extracted now, so its names embed on a worker thread while this
                    # batch routes (and its window applies) (Router.look_ahead)
                    upcoming = await extracted(current[2])
                    router.look_ahead(upcoming.items)
                    lap("extract")
                if plan is None:  # a window's first batch: the index as the previous window left the graph
                    await router.refresh({provenance_source(source.source_id, d) for d in pending}, written)
                plan = await route_extractions(
                    extractions, store, decider, embedder, llm, routing, router=router, plan=plan
                )
                mentions += len(plan.mentions)
                plan.mentions.clear()  # counted: a long document's decisions are not kept
                extractions = None  # the batch's intermediates go before the plan grows
                lap("route")
                if last:
                    written = set()
                    await apply_plan(store, part, plan, on_document=applied, report=update, written=written)
                    plan = None
                    release_free_heap()
                    lap("apply")
                if current is not None:
                    extractions = upcoming if upcoming is not None else await extracted(current[2])
                    lap("extract")
        finally:
            router.close()
        return IngestReport(
            source_id=source.source_id,
            routing=routing,
            extractor=extractor.version,
            **diff.status_counts(),
            failed=update.documents_incomplete,
            skipped=diff.skipped,
            chunks=chunks,
            mentions=mentions,
            escalations=router.escalations,
            fallbacks=router.fallbacks,
            extraction_cost=extraction_cost,
            routing_cost=router.cost,
            cache_hits=cache_hits,
            update=update,
            seconds=seconds,
            cpu_seconds=cpu_seconds,
        )
