"""A deleted source record is retracted from the graph and leaves the ledger; the graph checks agree."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import dagster as dg
from dagster_fixtures import copy_data, metadata_values, warehouse_rows

from graphwalk_dagster.demo import ingest_sources, offline_resources


def test_deleted_row_is_retracted(tmp_path: Path) -> None:
    sources = copy_data(tmp_path / "data")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["sample_db"], resources, instance, log=lambda _: None)
        ledger_before = warehouse_rows(root, "select count(*) from ledger")[0][0]
        with sqlite3.connect(tmp_path / "data" / "sample.sqlite") as db:
            db.execute("delete from studios where name = 'Warner Bros. Pictures'")
        chain, graph = ingest_sources(["sample_db"], resources, instance, log=lambda _: None)
    docs = metadata_values(chain, "source_documents")
    assert (docs["deleted"], docs["new"]) == (1, 0)
    (deleted,) = warehouse_rows(root, "select document_id from documents where status = 'deleted'")
    assert metadata_values(chain, "graph_updates")["ledger_deleted"] == 1
    assert warehouse_rows(root, "select count(*) from ledger")[0][0] == ledger_before - 1
    assert warehouse_rows(root, f"select count(*) from ledger where document_id = '{deleted[0]}'") == [(0,)]
    assert warehouse_rows(root, "select count(*) from nodes where name = 'Warner Bros. Pictures'") == [(0,)]
    assert {e.check_name: e.passed for e in graph.get_asset_check_evaluations()} == {
        "edge_endpoints_exist": True,
        "elements_have_provenance": True,
        "ledger_has_documents": True,
    }
