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
    # the UI names what is retracted (it showed only how many)
    assert docs["deleted_documents"] == f"- `{deleted[0]}`: gone from the source; what it gave is retracted"
    assert metadata_values(chain, "graph_updates")["ledger_deleted"] == 1
    assert warehouse_rows(root, "select count(*) from ledger")[0][0] == ledger_before - 1
    assert warehouse_rows(root, f"select count(*) from ledger where document_id = '{deleted[0]}'") == [(0,)]
    assert warehouse_rows(root, "select count(*) from nodes where name = 'Warner Bros. Pictures'") == [(0,)]
    assert {e.check_name: e.passed for e in graph.get_asset_check_evaluations()} == {
        "edge_endpoints_exist": True,
        "elements_have_provenance": True,
        "ledger_has_documents": True,
        "ledger_sources_declared": True,
    }


def test_a_source_that_becomes_empty_fails_and_retracts_nothing(tmp_path: Path) -> None:
    """An unmounted share whose mount point remains lists nothing: its run retracted every document it
    had given. Now it fails naming the source; ``allow_empty: true`` in its entry retracts them."""
    from graphwalk_dagster.demo import INGEST_CHAIN, QUIET_LOGS

    sources = copy_data(tmp_path / "data")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    films = tmp_path / "data" / "films"
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films"], resources, instance, log=lambda _: None)
        for path in films.iterdir():
            path.unlink()
        run = dg.materialize(
            INGEST_CHAIN,
            partition_key="films",
            resources=resources,
            instance=instance,
            run_config=QUIET_LOGS,
            raise_on_error=False,
        )
        (failure,) = run.get_step_failure_events()
        error = failure.step_failure_data.error
        assert failure.step_key == "source_documents"
        assert error is not None and error.cause is not None
        assert error.cause.message.strip() == (
            f"graphwalk_core.ingest.stages.EmptySourceError: source 'films' lists no documents at {films}, "
            "where the graph holds 11 of its documents: nothing is retracted (an unmounted share or an "
            "emptied folder or table?); to retract them all, ingest it with --allow-empty (sources.yaml: "
            "allow_empty: true)"
        )
        sources.write_text(
            sources.read_text().replace("  extractor: nlp\n", "  extractor: nlp\n  allow_empty: true\n", 1)
        )
        chain, _graph = ingest_sources(["films"], resources, instance, log=lambda _: None)
    assert metadata_values(chain, "source_documents")["deleted"] == 11
    assert warehouse_rows(root, "select count(*) from ledger") == [(0,)]


def test_a_cli_ingest_of_a_namesake_folder_keeps_a_dagster_source(tmp_path: Path) -> None:
    """Dagster's runs record where a source's documents come from, as ``graphwalk ingest`` does: an
    ingest of another folder named like the source (same path-derived id) is refused; it retracted all
    eleven documents of the Dagster source before."""
    from typer.testing import CliRunner

    from graphwalk_core.cli import app

    sources = copy_data(tmp_path / "data")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films"], resources, instance, log=lambda _: None)
    other = tmp_path / "other" / "films"
    other.mkdir(parents=True)
    (other / "b.txt").write_text("Greta Gerwig directed Barbie.\n", encoding="utf-8")
    graph = root / "graph.sqlite"
    result = CliRunner().invoke(app, ["ingest", str(other), "--graph", str(graph)], env={"COLUMNS": "500"})
    assert (result.exit_code, " ".join(result.output.split())) == (
        2,
        f"error: source 'films' holds documents read from {tmp_path / 'data' / 'films'}; {other} would "
        "replace them (what it lacks would be retracted). Give it a source id of its own (--source-id NAME), "
        "or --source-id films to replace them",
    )
    with sqlite3.connect(graph) as db:
        query = "select count(*) from metadata where key like 'ingest/ledger/films/%'"
        ledgered = db.execute(query).fetchone()
    assert ledgered == (11,)


def test_a_source_removed_from_sources_yaml_is_named_by_a_graph_check(tmp_path: Path) -> None:
    """An entry removed from sources.yaml (or renamed) leaves its documents in the graph, by design; the
    published graph said nothing about them (every check passed, the sensor's ticks were silent). Now
    knowledge_graph's ``ledger_sources_declared`` check warns, naming the source and its documents."""
    from graphwalk_dagster.demo import GRAPH, QUIET_LOGS

    sources = copy_data(tmp_path / "data")
    root = tmp_path / "warehouse"
    resources = offline_resources(root, sources_file=sources)
    with dg.DagsterInstance.ephemeral() as instance:
        ingest_sources(["films", "sample_db"], resources, instance, log=lambda _: None)
        text = sources.read_text(encoding="utf-8")
        sources.write_text(text[: text.index("- id: sample_db")], encoding="utf-8")
        graph = dg.materialize(GRAPH, resources=resources, instance=instance, run_config=QUIET_LOGS)
    checks = {e.check_name: e for e in graph.get_asset_check_evaluations()}
    assert {name: e.passed for name, e in checks.items()} == {
        "edge_endpoints_exist": True,
        "elements_have_provenance": True,
        "ledger_has_documents": True,
        "ledger_sources_declared": False,
    }
    declared = checks["ledger_sources_declared"]
    assert declared.severity == dg.AssetCheckSeverity.WARN
    assert {k: v.value for k, v in declared.metadata.items()} == {
        "failures": 1,
        "examples": "- `sample_db: 26 document(s)`",
        "sources_file": str(sources),
    }
    assert warehouse_rows(root, "select source, count(*) from ledger group by 1 order by 1") == [
        ("films", 11),
        ("sample_db", 26),
    ]
