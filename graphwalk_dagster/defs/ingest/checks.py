"""Integrity checks on the published knowledge graph (SQL over the warehouse views)."""

import dagster as dg

from graphwalk_core.ingest import graph_checks
from graphwalk_dagster.defs.shared.resources import SourcesResource, WarehouseResource
from graphwalk_dagster.metadata import check_result


@dg.asset_check(asset="knowledge_graph", description=graph_checks.edge_endpoints_exist.__doc__)
def edge_endpoints_exist(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    return check_result(graph_checks.edge_endpoints_exist(warehouse.path()))


@dg.asset_check(asset="knowledge_graph", description=graph_checks.elements_have_provenance.__doc__)
def elements_have_provenance(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    return check_result(graph_checks.elements_have_provenance(warehouse.path()))


@dg.asset_check(asset="knowledge_graph", description=graph_checks.ledger_has_documents.__doc__)
def ledger_has_documents(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    return check_result(graph_checks.ledger_has_documents(warehouse.path()))


@dg.asset_check(
    asset="knowledge_graph",
    description="Warns when the graph holds documents of a source that sources.yaml does not declare (an "
    "entry removed or renamed there; a source ingested by `graphwalk ingest`): they stay in the graph, "
    "and nothing refreshes them. To retract them, declare the id again with its path on an empty folder "
    "and `allow_empty: true`, let its run finish, then remove the entry (docs/dagster.md).",
)
def ledger_sources_declared(warehouse: WarehouseResource, sources: SourcesResource) -> dg.AssetCheckResult:
    declared = {spec.id for spec in sources.specs()}
    outcome = graph_checks.sources_declared(warehouse.path(), declared)
    sources_file = dg.MetadataValue.path(str(sources.file()))
    return check_result(outcome, dg.AssetCheckSeverity.WARN, {"sources_file": sources_file})
