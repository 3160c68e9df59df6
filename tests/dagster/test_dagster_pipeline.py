"""Materialize ingestion, the graph and eval partitions in process; read the warehouse back with DuckDB."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from dagster_fixtures import CUSTOM_QUESTIONS, copy_data, metadata_values, warehouse_rows
from rich.console import Console

from graphwalk_core.eval.metrics import f1_score
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources.specs import load_sources, open_source
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_dagster.defs.shared.resources import DeciderResource, EmbedderResource, LLMResource
from graphwalk_dagster.demo import evaluate, ingest_sources, offline_resources
from graphwalk_dagster.demo_report import SUMMARY_QUERY, print_report

SYSTEMS = [("custom", "relation-greedy"), ("custom", "vector-rag")]


#: Keys set in the environment for the whole module: they must never show up in logs, metadata or files.
SECRETS = {
    "GRAPHWALK_JEV_API_KEY": "sk-jev-TOPSECRET-7f3a9c",
    "GRAPHWALK_LLM_API_KEY": "sk-llm-TOPSECRET-22b1e0",
}


@dataclass
class Run:
    root: Path
    instance: dg.DagsterInstance
    first: list[dg.ExecuteInProcessResult]
    again: dg.ExecuteInProcessResult
    evals: list[dg.ExecuteInProcessResult]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    base = tmp_path_factory.mktemp("pipeline")
    sources = copy_data(base / "data")
    questions = base / "questions.jsonl"
    questions.write_text("\n".join(CUSTOM_QUESTIONS) + "\n", encoding="utf-8")
    root = base / "warehouse"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in SECRETS.items():
            mp.setenv(name, value)
        resources = {
            **offline_resources(root, sources_file=sources),
            "decider": DeciderResource(backend="local", jev_api_key=dg.EnvVar("GRAPHWALK_JEV_API_KEY")),
            "llm": LLMResource(model="", api_key=dg.EnvVar("GRAPHWALK_LLM_API_KEY")),
        }
        with dg.instance_for_test() as instance:
            first = ingest_sources(["films", "sample_db"], resources, instance, log=lambda _: None)
            # nothing changed: the whole chain again for films must cost nothing
            (again,) = ingest_sources(["films"], resources, instance, log=lambda _: None)[:1]
            evals = evaluate(
                SYSTEMS,
                resources,
                instance,
                n=10,
                log=lambda _: None,
                questions_config={"questions": str(questions)},
            )
            yield Run(root, instance, first, again, evals)


def test_keys_never_in_logs_metadata_or_files(run: Run) -> None:
    runs = run.instance.get_runs()
    assert len(runs) == 2 + 1 + 2 + 2 + 1  # two sources + graph, films again + graph, two evals + summary
    text = ""
    for dagster_run in runs:
        records = run.instance.get_records_for_run(dagster_run.run_id, limit=100_000).records
        text += "\n".join(str(r.event_log_entry) for r in records) + str(dagster_run.run_config)
    assert "routing_decisions" in text and "ASSET_MATERIALIZATION" in text
    stored = "\n".join(p.read_text(errors="replace") for p in run.root.rglob("*.json"))
    assert '"chunks"' in stored  # the JSON IO manager wrote the intermediate outputs
    for secret in SECRETS.values():
        assert secret not in text and secret not in stored


def test_ingestion_metadata_matches_the_pipeline(run: Run, tmp_path: Path) -> None:
    """The assets report what graphwalk_core's one-call pipeline reports for the same source."""
    films = run.first[0]
    assert metadata_values(films, "source_documents")["new"] == 11
    extraction = metadata_values(films, "extractions")
    assert (extraction["extractor"], extraction["items"], extraction["failures"], extraction["calls"]) == (
        "nlp:2",
        11,
        0,
        0,
    )
    (spec,) = [s for s in load_sources(run.root.parent / "data" / "sources.yaml") if s.id == "films"]
    embedder = EmbedderResource().make()
    store = SQLGraphStore(f"sqlite:///{tmp_path / 'graph.sqlite'}")
    report = asyncio.run(
        ingest(
            open_source(spec),
            store,
            decider=DeciderResource(backend="local").make(embedder),
            embedder=embedder,
        )
    )
    asyncio.run(store.close())
    routing = metadata_values(films, "routing_decisions")
    assert (routing["mentions"], routing["calls"]) == (report.mentions, report.routing_cost.calls)
    assert report.mentions == 54
    updates = metadata_values(films, "graph_updates")
    expected = report.update.model_dump(exclude={"source_id", "documents_applied", "documents_incomplete"})
    assert {k: updates[k] for k in expected} == expected
    assert updates["ledger_written"] == 11


def test_unchanged_sources_cost_nothing(run: Run) -> None:
    docs = metadata_values(run.again, "source_documents")
    assert (docs["new"], docs["changed"], docs["unchanged"], docs["deleted"]) == (0, 0, 11, 0)
    assert metadata_values(run.again, "chunks")["chunks"] == 0
    assert metadata_values(run.again, "extractions")["calls"] == 0
    assert metadata_values(run.again, "routing_decisions")["calls"] == 0
    assert metadata_values(run.again, "graph_updates")["ledger_written"] == 0
    assert "unchanged since the last run" in str(
        metadata_values(run.again, "source_documents")["skipped_why"]
    )


def test_knowledge_graph_tables(run: Run) -> None:
    counts = {
        t: warehouse_rows(run.root, f"select count(*) from {t}")[0][0]
        for t in ("nodes", "edges", "conflicts", "ledger")
    }
    assert counts == {"nodes": 33, "edges": 57, "conflicts": 14, "ledger": 37}
    assert warehouse_rows(run.root, "select source, count(*) from ledger group by all order by 1") == [
        ("films", 11),
        ("sample_db", 26),
    ]
    assert warehouse_rows(
        run.root,
        "select t.name from edges e join nodes s on s.id = e.source join nodes t on t.id = e.target "
        "where s.name = 'Dune' and e.type = 'director'",
    ) == [("Denis Villeneuve",)]
    assert (run.root / "nodes" / "part-0.parquet").is_file()
    assert (run.root / "documents" / "source=films" / "part-0.parquet").is_file()


def test_graph_checks_pass(run: Run) -> None:
    graph_run = run.first[-1]
    outcomes = {e.check_name: e.passed for e in graph_run.get_asset_check_evaluations()}
    assert outcomes == {
        "edge_endpoints_exist": True,
        "elements_have_provenance": True,
        "ledger_has_documents": True,
        "ledger_sources_declared": True,
    }


def test_eval_results_in_warehouse(run: Run) -> None:
    path = run.root / "eval_results" / "dataset=custom" / "system=relation-greedy" / "part-0.parquet"
    assert path.is_file()
    rows = warehouse_rows(
        run.root,
        "select dataset, system, question_id, status, error from eval_results order by system, question_id",
    )
    reason = "no LLM configured (set GRAPHWALK_LLM_MODEL)"
    assert [r[:4] for r in rows] == [
        ("custom", "relation-greedy", "c1", "ok"),
        ("custom", "relation-greedy", "c2", "ok"),
        ("custom", "vector-rag", "c1", "skipped"),
        ("custom", "vector-rag", "c2", "skipped"),
    ]
    assert [r[4] for r in rows[2:]] == [reason, reason]
    checks = {
        (r.dagster_run.tags["dagster/partition"], e.check_name): (e.passed, e.severity.value)
        for r in run.evals[:2]
        for e in r.get_asset_check_evaluations()
    }
    assert checks == {
        ("custom|relation-greedy", "eval_results_valid"): (True, "ERROR"),
        ("custom|relation-greedy", "eval_results_answered"): (True, "WARN"),
        ("custom|vector-rag", "eval_results_valid"): (True, "ERROR"),
        ("custom|vector-rag", "eval_results_answered"): (False, "WARN"),
    }
    # the stored f1 is the metric of the stored answers (whatever the walk found)
    scored = warehouse_rows(
        run.root, "select predicted, gold, f1 from eval_results where status = 'ok' order by question_id"
    )
    assert [f1 for _, _, f1 in scored] == [f1_score(list(p), list(g)) for p, g, _ in scored]


def test_skipped_partition_is_visible_as_skipped(run: Run) -> None:
    """Without an LLM, vector-rag's partition says skipped (with why) and claims no score."""
    reason = "no LLM configured (set GRAPHWALK_LLM_MODEL)"
    skipped = metadata_values(run.evals[1], "eval_results")
    assert {k: skipped[k] for k in ("status", "n", "n_skipped", "skip_reason", "answered")} == {
        "status": "skipped",
        "n": 2,
        "n_skipped": 2,
        "skip_reason": reason,
        "answered": 0,  # skipped questions were not answered
    }
    assert not {"f1", "em", "hits_at_1", "latency_p50_s"} & set(skipped)
    (check,) = [
        e for e in run.evals[1].get_asset_check_evaluations() if e.check_name == "eval_results_answered"
    ]
    assert (check.passed, check.severity, check.metadata["skip_reason"].value) == (
        False,
        dg.AssetCheckSeverity.WARN,
        reason,
    )
    answered = metadata_values(run.evals[0], "eval_results")
    assert (answered["status"], answered["n_skipped"], answered["reused"]) == ("ok", 0, 0)
    assert isinstance(answered["f1"], float)


def test_the_demo_report_suggests_a_summary_query_that_fits_and_runs(run: Run) -> None:
    console = Console(record=True, width=400)
    print_report(run.root, console)
    (line,) = [line for line in console.export_text().splitlines() if line.startswith("Query it:")]
    assert line.endswith(f'sql "{SUMMARY_QUERY}" --warehouse {run.root}')
    rows = warehouse_rows(run.root, SUMMARY_QUERY)
    assert rows == [
        ("custom", None, "relation-greedy", 2, 2, 0, 0, 0.0, 0.0, 0.0),
        ("custom", None, "vector-rag", 2, 0, 0, 2, None, None, None),
    ]


def test_eval_summary(run: Run) -> None:
    rows = warehouse_rows(run.root, "select dataset, system, n, n_skipped from eval_summary order by system")
    assert rows == [("custom", "relation-greedy", 2, 0), ("custom", "vector-rag", 2, 2)]
    summary = metadata_values(run.evals[-1], "eval_summary")
    assert summary["rows"] == 2
    assert "data:image/png;base64," in str(summary["plots"])
    assert (run.root / "plots" / "f1_by_hops.png").is_file()
