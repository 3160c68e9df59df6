"""Ingestion assets, one partition per declared source:

source_profile -> source_documents -> chunks -> extractions -> routing_decisions -> graph_updates,
then knowledge_graph publishes the whole store as Parquet tables in the warehouse.
"""

import asyncio

import dagster as dg

from graphwalk_core.decisions.base import close_decider
from graphwalk_core.errors import InputError
from graphwalk_core.ingest import stages
from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.ingest.outputs import ChunkSet, DocumentDiff, ExtractionSet, RoutingPlan, UpdateReport
from graphwalk_core.ingest.publish import publish_graph, write_documents
from graphwalk_core.ingest.sources.base import SourceProfile
from graphwalk_core.ingest.sources.fingerprints import missing_paths_message
from graphwalk_core.ingest.sources.specs import open_source
from graphwalk_core.warehouse import query
from graphwalk_dagster.automation import refresh_on_any_update
from graphwalk_dagster.defs.ingest.partitions import source_partitions
from graphwalk_dagster.defs.ingest.sensors import fingerprint_or_note
from graphwalk_dagster.defs.shared.resources import (
    DeciderResource,
    EmbedderResource,
    GraphStoreResource,
    LLMResource,
    SourcesResource,
    WarehouseResource,
    backends,
)
from graphwalk_dagster.metadata import cost_metadata, markdown_list, preview, skipped_metadata, to_metadata
from graphwalk_dagster.pools import GRAPH_POOL

INGEST = {"partitions_def": source_partitions, "group_name": "ingest"}
# Steps that open the graph store share GRAPH_POOL: dagster.yaml limits it to one at a time, so two
# sources ingesting at once never contend for the SQLite file (PostgreSQL: graphwalk_dagster/pools.py).


@dg.asset(**INGEST, kinds={"python"})
def source_profile(context: dg.AssetExecutionContext, sources: SourcesResource) -> SourceProfile:
    """What the source holds: documents, bytes, file types, tables, unreadable input; and the source's
    fingerprint before it was read (the source sensor starts from it when it has no cursor)."""
    spec = sources.spec(context.partition_key)
    missing = missing_paths_message(spec, sources.file())
    if missing is not None:  # named by its sources.yaml entry, as the sensor names it
        raise InputError(f"{missing}; fix the path in that file, or remove the entry")
    fingerprint, _ = fingerprint_or_note(spec, sources.file())
    profile = asyncio.run(stages.profile_source(open_source(spec)))
    context.add_output_metadata(
        {
            "documents": profile.documents,
            "bytes": profile.bytes,
            "rows": profile.rows,
            **skipped_metadata(profile.skipped),
            **({"fingerprint": fingerprint} if fingerprint is not None else {}),
        }
    )
    return profile


@dg.asset(**INGEST, deps=[source_profile], kinds={"python"}, pool=GRAPH_POOL)
def source_documents(
    context: dg.AssetExecutionContext,
    sources: SourcesResource,
    graph_store: GraphStoreResource,
    llm: LLMResource,
    warehouse: WarehouseResource,
) -> DocumentDiff:
    """The source's documents against the hash ledger: new, changed, unchanged, deleted."""
    spec = sources.spec(context.partition_key)

    async def diff() -> DocumentDiff:
        async with graph_store.open() as store:
            return await stages.diff_documents(
                open_source(spec),
                store,
                extractor=llm.extractor(spec.extractor),
                routing=stages.ROUTING_VERSIONS[spec.routing],  # how routing_decisions will route
                allow_empty=spec.allow_empty,
            )

    result = asyncio.run(diff())
    write_documents(warehouse.warehouse(), result)
    counts = {
        k: len(getattr(result, k)) for k in ("new", "changed", "incomplete", "unchanged", "deleted", "kept")
    }
    context.add_output_metadata(
        {
            **counts,
            **skipped_metadata(result.skipped, unchanged=result.unchanged),
            "deleted_documents": markdown_list(
                [f"- `{doc}`: gone from the source; what it gave is retracted" for doc in result.deleted],
                "_nothing deleted_",
            ),
            "preview": preview(
                [{"document": d.id, "kind": d.kind, "hash": d.content_hash[:12]} for d in result.documents]
            ),
        }
    )
    return result


@dg.asset(**INGEST, kinds={"python"})
def chunks(context: dg.AssetExecutionContext, source_documents: DocumentDiff) -> ChunkSet:
    """Paragraph-packed chunks of the documents to process (structured records: one preset chunk)."""
    result = stages.chunk_documents(source_documents)
    context.add_output_metadata(
        {
            "chunks": len(result.chunks),
            "preset": len(result.preset),
            "preview": preview([{"chunk": c.id, "chars": len(c.text)} for c in result.chunks]),
        }
    )
    return result


@dg.asset(**INGEST, kinds={"python"})
def extractions(
    context: dg.AssetExecutionContext,
    chunks: ChunkSet,
    sources: SourcesResource,
    llm: LLMResource,
    warehouse: WarehouseResource,
) -> ExtractionSet:
    """Entities and relations per chunk (cached by chunk hash; failures recorded, not raised)."""
    extractor = llm.extractor(sources.spec(context.partition_key).extractor)
    cache = ExtractionCache(warehouse.path() / "extraction_cache.sqlite")
    result = asyncio.run(stages.extract_chunks(chunks, extractor, cache))
    rows = [
        {"chunk": i.chunk.id, "entities": len(i.extraction.entities) if i.extraction else 0, "error": i.error}
        for i in result.items
    ]
    context.add_output_metadata(
        {
            "extractor": extractor.version,
            "items": len(result.items),
            "failures": result.failures,
            "cache_hits": result.cache_hits,
            **cost_metadata(result.cost),
            "preview": preview(rows),
        }
    )
    return result


@dg.asset(**INGEST, kinds={"python"}, pool=GRAPH_POOL)
def routing_decisions(
    context: dg.AssetExecutionContext,
    extractions: ExtractionSet,
    sources: SourcesResource,
    graph_store: GraphStoreResource,
    decider: DeciderResource,
    embedder: EmbedderResource,
    llm: LLMResource,
) -> RoutingPlan:
    """Each mention routed to an existing node or a new one (decider; LLM escalation when unsure), or,
    for a source declared with ``routing: exact``, merged on identical names with no calls."""
    routing = sources.spec(context.partition_key).routing

    async def route() -> RoutingPlan:
        async with graph_store.open() as store:
            if routing == "exact":
                return await stages.route_extractions(extractions, store, None, None, None, "exact")
            builder = backends(decider, llm, embedder)
            chosen = builder.decider()
            try:
                return await stages.route_extractions(
                    extractions, store, chosen, builder.embedder, builder.llm
                )
            finally:
                await close_decider(chosen)

    plan = asyncio.run(route())
    actions = {a: sum(m.action == a for m in plan.mentions) for a in ("merge", "new", "pinned")}
    context.add_output_metadata(
        {
            "documents": len(plan.documents),
            "mentions": len(plan.mentions),
            **actions,
            "escalations": plan.escalations,
            "fallbacks": plan.fallbacks,
            **cost_metadata(plan.cost),
            "preview": preview(
                [
                    m.model_dump(include={"name", "type", "action", "via", "probability"})
                    for m in plan.mentions
                ]
            ),
        }
    )
    return plan


@dg.asset(**INGEST, kinds={"sqlite"}, pool=GRAPH_POOL)
def graph_updates(
    context: dg.AssetExecutionContext,
    source_documents: DocumentDiff,
    routing_decisions: RoutingPlan,
    graph_store: GraphStoreResource,
) -> UpdateReport:
    """The plan written to the store: merges, conflicts, retractions and ledger entries, per document."""

    async def apply() -> UpdateReport:
        async with graph_store.open() as store:
            return await stages.apply_plan(store, source_documents, routing_decisions)

    report = asyncio.run(apply())
    applied = [
        {"document": d, "status": "incomplete" if d in report.documents_incomplete else "complete"}
        for d in report.documents_applied
    ]
    context.add_output_metadata(
        {
            **to_metadata(
                report.model_dump(exclude={"source_id", "documents_applied", "documents_incomplete"})
            ),
            "preview": preview(applied),
        }
    )
    return report


@dg.asset(
    deps=[graph_updates],
    group_name="ingest",
    kinds={"duckdb", "parquet"},
    automation_condition=refresh_on_any_update(),
    pool=GRAPH_POOL,
)
def knowledge_graph(graph_store: GraphStoreResource, warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The whole graph as Parquet tables (nodes, edges, provenance, conflicts, metadata, ledger)."""

    async def publish() -> dict[str, int]:
        async with graph_store.open() as store:
            return await publish_graph(store, warehouse.warehouse())

    counts = asyncio.run(publish())
    nodes = query(warehouse.path(), "SELECT id, type, name, summary FROM nodes ORDER BY name LIMIT 10")
    return dg.MaterializeResult(
        metadata={
            **counts,
            "warehouse": dg.MetadataValue.path(str(warehouse.path())),
            "preview": preview([dict(zip(nodes.columns, row, strict=True)) for row in nodes.rows]),
        }
    )
