"""The Dagster UI starts from workspace.yaml, lists every asset and partition, and runs a real backfill.

The webserver runs as a subprocess (its own process group, killed at the end); the backfill is launched
through its GraphQL API and executed by Dagster's backfill daemon iteration, run in this process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from conftest import shared_path
from dagster_fixtures import REPO, copy_data

from graphwalk_dagster import ui_check

INGEST = ["chunks", "extractions", "graph_updates", "routing_decisions", "source_documents", "source_profile"]
UNPARTITIONED = ["decision_examples", "eval_summary", "knowledge_graph", "trained_decider"]


@dataclass
class Server:
    url: str
    home: Path
    warehouse: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("ui")
    home = ui_check.prepare_home(base / "dagster_home")
    env = {
        "DAGSTER_HOME": str(home),
        "GRAPHWALK_WAREHOUSE": str(base / "warehouse"),
        "GRAPHWALK_SOURCES": str(copy_data(base / "data")),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("sources", ["films", "sample_db"])
    port = ui_check.free_port()
    proc = ui_check.start_webserver(port, env)
    try:
        url = f"http://127.0.0.1:{port}"
        ui_check.wait_ready(url, proc, timeout=90)
        yield Server(url, home, base / "warehouse")
    finally:
        ui_check.stop(proc)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert proc.poll() is not None


def test_ui_lists_every_asset_and_partition(server: Server) -> None:
    listed = ui_check.asset_partitions(server.url)
    assert sorted(listed) == sorted([*INGEST, *UNPARTITIONED, "eval_questions", "eval_results"])
    for asset in INGEST:
        assert listed[asset] == ["films", "sample_db"]
    for asset in UNPARTITIONED:
        assert listed[asset] is None
    for asset in ("eval_questions", "eval_results"):
        assert len(listed[asset]) == 120  # 8 datasets x (11 systems + 4 trained walk presets)
        assert {"custom|relation-greedy", "metaqa-3hop|iter-rag", "2wiki|graph-reader"} <= set(listed[asset])
        assert {"2wiki-retrieval|graph-ppr", "hotpotqa|typed-path", "2wiki-retrieval|dense"} <= set(
            listed[asset]
        )


def test_backfill_of_two_eval_partitions(server: Server) -> None:
    shared_path("data", "metaqa")
    partitions = ["metaqa-1hop|vector-rag", "metaqa-2hop|vector-rag"]
    backfill_id = ui_check.launch_backfill(server.url, ["eval_questions", "eval_results"], partitions)
    status = ui_check.run_backfill_daemon(REPO / "workspace.yaml", backfill_id, server.url, timeout=120)
    assert status["status"] == "COMPLETED_SUCCESS", status
    assert sorted(r["status"] for r in status["runs"]) == ["SUCCESS", "SUCCESS"]
    con = duckdb.connect(str(server.warehouse / "warehouse.duckdb"), read_only=True)
    rows = con.execute(
        "select dataset, system, status, count(*) from eval_results group by all order by 1"
    ).fetchall()
    con.close()
    assert rows == [
        ("metaqa-1hop", "vector-rag", "skipped", 20),
        ("metaqa-2hop", "vector-rag", "skipped", 20),
    ]


def test_ui_check_prints_the_instance_dagster_home_names(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m graphwalk_dagster.ui_check`` over $DAGSTER_HOME lists the partitions registered there."""
    ui_check.main([])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"instance: {server.home}"
    assert "source_profile: 2 partition(s) ['films', 'sample_db']" in lines
    assert "knowledge_graph: not partitioned" in lines


def test_ui_check_help_prints_usage_without_starting_the_webserver(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_webserver(*_: object) -> None:
        raise AssertionError("--help started the webserver")

    monkeypatch.setattr(ui_check, "start_webserver", no_webserver)
    monkeypatch.setattr("sys.argv", ["ui_check", "--help"])
    with pytest.raises(SystemExit) as done:
        ui_check.main()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: ui_check [-h]\n")
