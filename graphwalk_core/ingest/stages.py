"""The ingestion stages: plain functions with pydantic (JSON-serializable) outputs.

``profile_source -> diff_documents -> chunk_documents -> extract_chunks -> route_extractions ->
apply_plan``. The pipeline (``graphwalk ingest``) and the Dagster assets both call these.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from graphwalk_core.aio import gather_or_cancel
from graphwalk_core.errors import BackendError, GraphwalkError, InputError
from graphwalk_core.ingest.chunking import DEFAULT_CHUNK_CHARS, Chunk, chunk_text
from graphwalk_core.ingest.extraction.base import Extractor
from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.ingest.extraction.nlp import NLP_VERSION
from graphwalk_core.ingest.ledger import (
    LedgerEntry,
    check_origin,
    delete_entry,
    ledger_key,
    now_iso,
    provenance_source,
    read_entries,
    read_ledger,
    record_origin,
    write_entry,
)
from graphwalk_core.ingest.outputs import (
    ChunkExtraction,
    ChunkSet,
    DocumentDiff,
    DocumentRef,
    ExtractionSet,
    RoutingPlan,
    UpdateReport,
)
from graphwalk_core.ingest.resolution import (
    absorb_nodes,
    canonicalize,
    planned_ids,
    renamed,
    retract_document,
    write_elements,
)
from graphwalk_core.ingest.routing import ROUTING_VERSIONS, route_extractions
from graphwalk_core.ingest.sources.base import OriginAware, SkippedItem, Source, SourceDocument, SourceProfile
from graphwalk_core.ingest.spool import DocumentSpool
from graphwalk_core.stores.base import GraphStore, prefetch
from graphwalk_core.stores.keys import MAX_METADATA_KEY_BYTES, over_bytes, utf8_size

__all__ = [
    "ROUTING_VERSIONS",
    "EmptySourceError",
    "StaleDiffError",
    "apply_plan",
    "chunk_batches",
    "chunk_documents",
    "diff_documents",
    "document_windows",
    "extract_chunks",
    "profile_source",
    "retract_deleted",
    "route_extractions",
]

#: LLM extraction calls in flight at once.
DEFAULT_EXTRACT_CONCURRENCY = 8


async def profile_source(source: Source) -> SourceProfile:
    """What the source holds (counts, bytes, encodings, tables, skipped input)."""
    return await source.profile()


def _extractor_version(extractor: Extractor | str | None, max_chars: int = DEFAULT_CHUNK_CHARS) -> str:
    """What a text document's extraction depends on: the extractor's version, and the chunk size when it is
    not the default (``nlp:2/chunks:500``), so a run with another size re-extracts text documents."""
    if extractor is None:
        version = NLP_VERSION
    else:
        version = extractor if isinstance(extractor, str) else extractor.version
    return version if max_chars == DEFAULT_CHUNK_CHARS else f"{version}/chunks:{max_chars}"


def kept_by_skips(skipped: list[SkippedItem]) -> Callable[[str], bool]:
    """Whether a skip keeps a document id: a skip's own document id, else the document at its path, that
    file's records (``path#...``) and the documents of a folder at that path (``path/...``). Looked up
    by id and by each ``#`` or ``/`` prefix of the id, not skip by skip (a file can skip every row)."""
    ids = {i.document_id for i in skipped if i.kind != "mapping" and i.document_id is not None}
    paths = {i.path for i in skipped if i.kind != "mapping" and i.document_id is None}

    def kept(doc_id: str) -> bool:
        if doc_id in ids or doc_id in paths:
            return True
        return any(c in "#/" and doc_id[:at] in paths for at, c in enumerate(doc_id))

    return kept


async def diff_documents(
    source: Source,
    store: GraphStore,
    *,
    extractor: Extractor | str | None = None,
    routing: str | None = None,
    spool: DocumentSpool | None = None,
    allow_empty: bool = False,
    max_chars: int = DEFAULT_CHUNK_CHARS,
) -> DocumentDiff:
    """Compare the source's documents with the ledger: new / changed / incomplete / unchanged / deleted.

    A document is unchanged when its content hash and extractor (the mapping for structured records)
    match a complete ledger entry, and so does ``routing`` (a ``ROUTING_VERSIONS`` value) when given. A
    text document's extractor includes ``max_chars``, the chunk size :func:`chunk_documents` will use.
    Ledgered documents whose input was skipped are kept, not deleted. The documents to process go to
    ``spool`` when given (the diff then holds their ids only), else to ``documents``.

    A source that lists no document, so that every document of the ledger would be deleted, is an
    :class:`EmptySourceError` (an unmounted share leaves an empty folder): that takes ``allow_empty``.
    """
    version = _extractor_version(extractor, max_chars)
    ledger = await read_ledger(store, source.source_id)
    origin = source.origin if isinstance(source, OriginAware) else None
    diff = DocumentDiff(source_id=source.source_id, extractor=version, origin=origin, ledger=ledger)
    seen: set[str] = set()
    repeated: list[SkippedItem] = []
    # streamed: an unchanged document is dropped as soon as it is compared (only its id is kept)
    id_room = MAX_METADATA_KEY_BYTES - utf8_size(ledger_key(source.source_id, ""))
    async for doc in source.documents():
        if doc.id in seen:  # never silently: a skip keeps what the ledger holds under that id
            repeated.append(_repeated(doc))
            continue
        if over_bytes(doc.id, id_room):  # its ledger key no store keeps
            repeated.append(_too_long(doc, id_room))
            continue
        seen.add(doc.id)
        entry = ledger.get(doc.id)
        doc_version = doc.extractor or version
        if entry is None:
            diff.new.append(doc.id)
        elif entry.matches(doc.content_hash, doc_version, routing):
            diff.unchanged.append(doc.id)
            continue
        elif entry.status == "incomplete" and entry.content_hash == doc.content_hash:
            diff.incomplete.append(doc.id)
        else:
            diff.changed.append(doc.id)
        if spool is not None:
            spool.add(doc)
        else:
            diff.documents.append(doc)
    diff.skipped = [*source.skipped, *repeated]  # complete once the documents have been read
    for ids in (diff.new, diff.unchanged, diff.incomplete, diff.changed):
        ids.sort()
    diff.documents.sort(key=lambda d: d.id)
    kept = kept_by_skips(diff.skipped)
    for doc_id in sorted(set(ledger) - seen):
        (diff.kept if kept(doc_id) else diff.deleted).append(doc_id)
    if not seen and not diff.kept and diff.deleted and not allow_empty:
        raise EmptySourceError(source, len(diff.deleted))
    return diff


class EmptySourceError(InputError):
    """A source lists nothing where its ledger holds documents: nothing is retracted."""

    def __init__(self, source: Source, ledgered: int) -> None:
        origin = source.origin if isinstance(source, OriginAware) else None
        at = f" at {origin}" if origin else ""
        super().__init__(
            f"source {source.source_id!r} lists no documents{at}, where the graph holds {ledgered:,} of "
            "its documents: nothing is retracted (an unmounted share or an emptied folder or table?); to "
            "retract them all, ingest it with --allow-empty (sources.yaml: allow_empty: true)"
        )


class StaleDiffError(GraphwalkError):
    """A plan that is not its diff's, or a diff whose ledger entries another ingest of the source has
    changed since it read them (two runs of one source at once): nothing is written."""


async def check_current(store: GraphStore, diff: DocumentDiff, plan: RoutingPlan) -> None:
    """Refuse to write ``plan`` unless it was routed from ``diff`` (the same content per document) and the
    ledger entries it replaces or deletes are still the ones ``diff`` read: a run that read the source
    earlier would write its older facts over (or, for a new document, beside) a later run's."""
    source_id, read = diff.source_id, {d.id: d.content_hash for d in diff.documents}
    for doc in plan.documents:
        if read.get(doc.document_id) != doc.content_hash:
            in_diff = read[doc.document_id][:12] if doc.document_id in read else "nothing to process"
            raise StaleDiffError(
                f"source {source_id!r}: the plan to write does not come from this diff (document "
                f"{doc.document_id!r}: {doc.content_hash[:12]} in the plan, {in_diff} in the diff): another "
                "run of the source rewrote one of them; nothing is written, ingest the source again"
            )
    ids = sorted({*(d.document_id for d in plan.documents), *diff.deleted})
    now = await read_entries(store, source_id, ids)
    for doc_id in ids:
        if now.get(doc_id) != diff.ledger.get(doc_id):
            raise StaleDiffError(
                f"source {source_id!r}: document {doc_id!r} was written by another ingest of the source "
                "since this one read the ledger; nothing is written, ingest the source again (it reads "
                "the source as it is now)"
            )


def _too_long(doc: SourceDocument, room: int) -> SkippedItem:
    """The skip of a document whose id is too long for its ledger key (a path of thousands of bytes)."""
    line = doc.metadata.get("line")
    reason = (
        f"its document id is {utf8_size(doc.id):,} bytes in UTF-8; the ledger keeps ids of at most "
        f"{room:,} for this source (shorten the path, or key the records by a shorter column)"
    )
    return SkippedItem(
        path=_where(doc), line=line if isinstance(line, int) else None, reason=reason, document_id=doc.id
    )


def _repeated(doc: SourceDocument) -> SkippedItem:
    """The skip of a document whose id an earlier document of the source has (two composite primary keys
    that join to one text, ``("a,b", "c")`` and ``("a", "b,c")``): the first one is read."""
    reason = f"a second document with the id {doc.id!r} (the first one is read)"
    return SkippedItem(path=_where(doc), reason=reason, document_id=doc.id)


def _where(doc: SourceDocument) -> str:
    """What a skip of ``doc`` names: its file or table (its id, cut, when it has neither)."""
    return str(doc.metadata.get("path") or doc.metadata.get("table") or doc.id[:200])


def chunk_documents(diff: DocumentDiff, *, max_chars: int = DEFAULT_CHUNK_CHARS) -> ChunkSet:
    """Text documents -> paragraph-packed chunks; a structured document -> one chunk with its extraction."""
    out = ChunkSet(source_id=diff.source_id, retracting=sorted(diff.retracting))
    for doc in diff.documents:
        out.documents.append(
            DocumentRef(id=doc.id, content_hash=doc.content_hash, extractor=doc.extractor or diff.extractor)
        )
        if doc.extraction is not None:
            chunk = Chunk(
                document_id=doc.id,
                index=0,
                text=doc.text,
                start=0,
                end=len(doc.text),
                content_hash=doc.content_hash,
            )
            out.chunks.append(chunk)
            out.preset[chunk.id] = doc.extraction
        else:
            out.chunks.extend(chunk_text(doc.id, doc.text, max_chars=max_chars))
    return out


def chunk_batches(chunks: ChunkSet, size: int) -> list[ChunkSet]:
    """``chunks`` in consecutive parts of at most ``size`` chunks, each with every document's ref (one part
    when there is no chunk), so that a window's documents, a long one's included, are extracted and routed
    ``size`` chunks at a time (``route_extractions(..., plan=)`` continues the plan across parts)."""
    if size < 1:
        raise InputError(f"the routing batch must be >= 1 chunk, got {size}")
    parts = []
    for start in range(0, max(len(chunks.chunks), 1), size):
        part = chunks.chunks[start : start + size]
        preset = {c.id: chunks.preset[c.id] for c in part if c.id in chunks.preset}
        parts.append(chunks.model_copy(update={"chunks": part, "preset": preset}))
    return parts


async def extract_chunks(
    chunks: ChunkSet,
    extractor: Extractor,
    cache: ExtractionCache | None = None,
    *,
    concurrency: int = DEFAULT_EXTRACT_CONCURRENCY,
) -> ExtractionSet:
    """Extract every chunk (cached ones cost nothing); a failing chunk records its error, the run goes on."""
    out = ExtractionSet(source_id=chunks.source_id, documents=chunks.documents, retracting=chunks.retracting)
    extractors = {ref.id: ref.extractor for ref in chunks.documents}
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(chunk: Chunk) -> ChunkExtraction:
        version = extractors.get(chunk.document_id, extractor.version)
        preset = chunks.preset.get(chunk.id)
        if preset is not None:
            return ChunkExtraction(chunk=chunk, extractor=version, extraction=preset)
        use_cache = cache is not None and extractor.cacheable
        if use_cache:
            hit = cache.get(chunk.content_hash, extractor.version, extractor.model_id)
            if hit is not None:
                return ChunkExtraction(chunk=chunk, extractor=version, extraction=hit, cached=True)
        async with gate:
            try:
                result = await extractor.extract(chunk.text)
            except BackendError as exc:
                out.cost.add_failed(exc)
                return ChunkExtraction(chunk=chunk, extractor=version, error=str(exc))
        out.cost.add(result.usage, calls=result.calls)
        if use_cache:
            cache.put(chunk.content_hash, extractor.version, extractor.model_id, result.extraction)
        return ChunkExtraction(chunk=chunk, extractor=version, extraction=result.extraction)

    out.items = await gather_or_cancel(*(one(c) for c in chunks.chunks))
    out.cache_hits = sum(1 for i in out.items if i.cached)
    return out


async def retract_deleted(store: GraphStore, diff: DocumentDiff, report: UpdateReport) -> dict[str, str]:
    """Retract the documents gone from the source, one transaction each (in id order; savepoints inside a
    caller's transaction, as :func:`apply_plan` runs it); returns the node ids their retraction re-keyed
    (old -> new), for a plan routed before it."""
    renames: dict[str, str] = {}
    for doc_id in diff.deleted:
        async with store.transaction():
            touched = await retract_document(store, provenance_source(diff.source_id, doc_id), report)
            await canonicalize(store, touched, renames, touched)
            await delete_entry(store, diff.source_id, doc_id)
        report.ledger_deleted += 1
    return renames


class _CollectorPause:
    """What overlapping applies (coroutines or threads of one process) share: the first one in pauses the
    collector, the last one out restores it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.enabled = gc.isenabled()


_PAUSE = _CollectorPause()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector stays off while a window applies. A merge into a hub node
    allocates containers as large as the hub (its provenance, its summaries), which every collection
    they live through traverses, while the merge's garbage dies by reference count anyway. The objects
    that existed before the window are frozen, and what the window keeps joins them unscanned when it
    ends (frozen too, then all handed back to the oldest generation): a young collection after each
    window would traverse every hub the window grew. Nothing is leaked: when the last overlapping apply
    ends, the collector is back as it was (on, unless it was off), and full collections still see
    everything."""
    with _PAUSE.lock:
        if _PAUSE.depth == 0:
            _PAUSE.enabled = gc.isenabled()
            gc.freeze()
            gc.disable()
        _PAUSE.depth += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.depth -= 1
            if _PAUSE.depth == 0:
                gc.freeze()  # the window's survivors join the old objects unscanned (see above)
                gc.unfreeze()
                if _PAUSE.enabled:
                    gc.enable()


async def apply_plan(
    store: GraphStore,
    diff: DocumentDiff,
    plan: RoutingPlan,
    *,
    on_document: Callable[[str], None] | None = None,
    report: UpdateReport | None = None,
    written: set[str] | None = None,
) -> UpdateReport:
    """Write the plan: deleted documents are retracted first, then the plan's documents, each retracting
    its old provenance (when it had any) and folding in its new elements. A document whose extraction
    failed in a chunk and that had data keeps it and its ledger entry as they were (it is retried).

    The retractions, the plan's documents and their ledger entries commit as ONE transaction: the unit
    of atomicity is the unit of routing (a plan is routed against one graph state, and a plan routed
    before the retractions learns the node ids they re-key as they run), so a crash leaves the graph as
    it was before the plan and a rerun routes the same documents against the same graph again. The
    diff's origin is recorded there too (Dagster's runs; the pipeline has recorded it already), so an ingest
    of another folder under the same path-derived id is refused instead of replacing these documents.
    A plan not routed from ``diff``, or a ``diff`` whose ledger entries another ingest of the source changed
    since it read them, is a :class:`StaleDiffError` that writes nothing (see :func:`check_current`).
    ``report`` accumulates counts over several plans (the pipeline's windows); ``written`` collects the ids
    of the nodes written, re-keyed (old and new id) or kept by a retraction (for ``Router.refresh``)."""
    report = report if report is not None else UpdateReport(source_id=diff.source_id)
    source_id = diff.source_id
    retracting = diff.retracting
    kept: list[str] = []  # failed documents that keep what they gave before
    with collector_paused():
        async with store.transaction():
            await check_current(store, diff, plan)  # under the writer lock: no other apply in between
            if diff.origin is not None and await check_origin(store, source_id, diff.origin, exclusive=False):
                await record_origin(store, source_id, diff.origin)  # as `graphwalk ingest` records it
            # in the plan's transaction: a crash must not keep the retraction without the plan, or the
            # retried step would not learn the ids it re-keys (the plan, routed before it, names the old ones)
            renames = await retract_deleted(store, diff, report)
            # what the documents merge into, read in a few statements rather than a few per document
            await prefetch(store, *planned_ids(plan.documents, renames))
            for doc in plan.documents:
                if doc.failed_chunks and doc.document_id in retracting:
                    # an extraction that failed deletes nothing: what the document gave stays, and so does
                    # its ledger entry (the next run retries it); routing left its nodes out, so they are
                    # read back as written
                    kept.append(doc.document_id)
                    if written is not None:
                        nodes, _ = await store.elements_from_source(
                            provenance_source(source_id, doc.document_id)
                        )
                        written.update(node.id for node in nodes)
                    continue
                retracted: set[str] = set()
                if doc.document_id in retracting:
                    retracted = await retract_document(
                        store, provenance_source(source_id, doc.document_id), report
                    )
                nodes, edges = renamed(doc.nodes, doc.edges, renames)
                touched = retracted | await write_elements(store, nodes, edges, report)
                touched |= await absorb_nodes(store, doc.absorbed, renames)
                await canonicalize(store, touched, renames, retracted)
                if written is not None:
                    written |= touched
                entry = LedgerEntry(
                    document_id=doc.document_id,
                    content_hash=doc.content_hash,
                    extractor=doc.extractor,
                    routing=doc.routing,
                    status=doc.status,
                    ingested_at=now_iso(),
                    errors=doc.errors,
                )
                await write_entry(store, source_id, entry)
    if written is not None:
        written.update(renames, renames.values())
    for doc in plan.documents:
        report.ledger_written += doc.document_id not in kept
        report.documents_applied.append(doc.document_id)
        if doc.status == "incomplete":
            report.documents_incomplete.append(doc.document_id)
        if on_document is not None:
            on_document(doc.document_id)
    return report


def _ids_in(sorted_ids: list[str], first: str, last: str) -> list[str]:
    """The ids of ``sorted_ids`` from ``first`` to ``last``, both included (a window's, by bisection: no
    walk over every document per window)."""
    return sorted_ids[bisect_left(sorted_ids, first) : bisect_right(sorted_ids, last)]


def document_windows(
    diff: DocumentDiff, size: int, spool: DocumentSpool | None = None
) -> Iterator[tuple[DocumentDiff, set[str]]]:
    """The documents to process in windows of ``size``, in id order: (the window's diff, the ids whose
    old provenance this or a later window retracts). Windows depend only on the documents left to
    process, so a rerun after a crash cuts the windows a crash-free run cut after the committed ones.
    A window's documents come from ``spool`` when the diff put them there, read as the window comes.
    Deleted documents are not in any window (see :func:`retract_deleted`)."""
    if size < 1:
        raise InputError(f"the routing window must be >= 1 document, got {size}")
    order = diff.to_process if spool is not None else [d.id for d in diff.documents]
    ahead = (diff.retracting - set(diff.deleted)) & set(order)  # those of this window and later ones
    for start in range(0, len(order), size):
        docs = (
            spool.read(order[start : start + size])
            if spool is not None
            else diff.documents[start : start + size]
        )
        ids = {d.id for d in docs}
        pending, ahead = set(ahead), ahead - ids
        first, last = order[start], order[min(start + size, len(order)) - 1]
        window = diff.model_copy(
            update={
                "documents": docs,
                **{
                    status: _ids_in(sorted_ids, first, last)
                    for status, sorted_ids in (
                        ("new", diff.new),
                        ("changed", diff.changed),
                        ("incomplete", diff.incomplete),
                    )
                },
                "deleted": [],
            }
        )
        yield window, pending
