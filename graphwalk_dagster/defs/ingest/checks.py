"""Integrity checks on the published knowledge graph (SQL over the warehouse views)."""

import dagster as dg

from graphwalk_core.ingest import graph_checks
from graphwalk_dagster.defs.shared.resources import WarehouseResource
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
