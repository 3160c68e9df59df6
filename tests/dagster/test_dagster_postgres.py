"""The demo on PostgreSQL: Dagster's run and event storage (dagster-postgres, dagster.postgres.yaml) and
the graph store (GRAPHWALK_GRAPH_URL) on the test server; the published graph equals the SQLite one."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import psycopg
import pytest
from dagster_fixtures import CUSTOM_QUESTIONS, REPO, copy_data
from servers.postgres_server import PostgresServer

from graphwalk_core.settings import get_settings
from graphwalk_dagster.demo import ingest_sources, offline_resources, run_demo
from graphwalk_dagster.demo_report import DemoPlan

GRAPH_TABLES = ("nodes", "edges", "provenance", "conflicts")


def published(warehouse: Path) -> dict[str, bytes]:
    """The knowledge_graph tables the warehouse holds, as bytes."""
    return {t: (warehouse / t / "part-0.parquet").read_bytes() for t in GRAPH_TABLES}


def test_demo_on_a_postgresql_instance_and_graph(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance_db, graph_db = postgres_server.create_database("dagster"), postgres_server.create_database()
    dagster_url = postgres_server.url(instance_db, driver="postgresql+psycopg2")
    monkeypatch.setenv("GRAPHWALK_DAGSTER_PG_URL", dagster_url)
    monkeypatch.setenv("GRAPHWALK_GRAPH_URL", postgres_server.url(graph_db))
    get_settings.cache_clear()
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.postgres.yaml", home / "dagster.yaml")
    sources = copy_data(tmp_path / "data")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(CUSTOM_QUESTIONS) + "\n", encoding="utf-8")
    instance = dg.DagsterInstance.from_config(str(home))
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    warehouse = tmp_path / "warehouse"
    plan = DemoPlan([("custom", "relation-greedy")])
    run_demo(warehouse, plan, n=2, sources_file=sources, questions=questions, instance=instance, log=print)
    assert not (warehouse / "graph.sqlite").exists()  # the graph went to PostgreSQL

    with psycopg.connect(postgres_server.url(instance_db, driver="postgresql")) as conn:
        runs = conn.execute("select status, count(*) from runs group by status").fetchall()
        materialized = conn.execute(
            "select distinct asset_key from event_logs "
            "where dagster_event_type = 'ASSET_MATERIALIZATION' order by 1"
        ).fetchall()
    assert runs == [("SUCCESS", 5)]  # two sources, the graph, one eval partition, the summary
    assert [key for (key,) in materialized] == [
        f'["{name}"]'
        for name in sorted(
            [
                "chunks",
                "eval_questions",
                "eval_results",
                "eval_summary",
                "extractions",
                "graph_updates",
                "knowledge_graph",
                "routing_decisions",
                "source_documents",
                "source_profile",
            ]
        )
    ]
    with psycopg.connect(postgres_server.url(graph_db, driver="postgresql")) as conn:
        assert conn.execute("select count(*) from nodes").fetchone() == (33,)

    # the same sources into SQLite on the default instance publish byte-identical graph tables
    monkeypatch.delenv("GRAPHWALK_GRAPH_URL")
    get_settings.cache_clear()
    on_sqlite = tmp_path / "sqlite_warehouse"
    with dg.instance_for_test() as local:
        resources = offline_resources(on_sqlite, sources_file=sources)
        ingest_sources(["films", "sample_db"], resources, local, print)
    assert (on_sqlite / "graph.sqlite").is_file()
    assert published(on_sqlite) == published(warehouse)
