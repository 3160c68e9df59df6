"""``graphwalk demo``'s command line: where it writes, and the commands it tells the user to type."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.errors import DagsterExecutionInterruptedError
from dagster_fixtures import REPO
from rich.console import Console
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.settings import get_settings
from graphwalk_core.warehouse import Warehouse
from graphwalk_dagster import demo, demo_report
from graphwalk_dagster.demo_report import command


@pytest.fixture
def settings_from_env() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_the_demo_writes_to_the_warehouse_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings_from_env: None
) -> None:
    """The demo writes where ``graphwalk sql`` and the Dagster definitions look: GRAPHWALK_WAREHOUSE."""
    written: list[Path] = []
    monkeypatch.setenv("GRAPHWALK_WAREHOUSE", str(tmp_path / "wh"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "run_demo", lambda warehouse, *args, **kwargs: written.append(warehouse))
    monkeypatch.setattr(demo_report, "print_report", lambda root, *args, **kwargs: written.append(root))
    result = CliRunner().invoke(app, ["demo", "--dagster-home", str(tmp_path / "home")])
    assert result.exit_code == 0, result.output
    assert written == [tmp_path / "wh", tmp_path / "wh"]


def test_the_demo_ingests_the_sample_sources_whatever_graphwalk_sources_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``graphwalk demo`` ingests data/sources.yaml (its help, docs/dagster.md): a GRAPHWALK_SOURCES set
    for a deployment made it ingest those sources, offline, beside questions about the sample films."""
    monkeypatch.setenv("GRAPHWALK_SOURCES", str(tmp_path / "production_sources.yaml"))
    sources = demo.offline_resources(tmp_path / "wh")["sources"]
    assert sources.file() == (REPO / "data" / "sources.yaml").resolve()
    given = tmp_path / "mine.yaml"
    assert demo.offline_resources(tmp_path / "wh", sources_file=given)["sources"].file() == given


def test_fresh_deletes_only_a_folder_that_is_a_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--fresh`` removed whatever folder ``--warehouse`` or GRAPHWALK_WAREHOUSE named (``.``, a project
    folder), whole; a warehouse (its database, or the objects/ folder of a demo cut short) still goes."""
    monkeypatch.setattr(demo, "run_demo", lambda *args, **kwargs: None)
    monkeypatch.setattr(demo_report, "print_report", lambda *args, **kwargs: None)
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine\n", encoding="utf-8")
    args = ["demo", "--fresh", "--dagster-home", str(tmp_path / "home"), "--warehouse"]
    refused = CliRunner().invoke(app, [*args, str(project)])
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: --fresh deletes the warehouse folder {project}, but it holds neither warehouse.duckdb nor "
        "objects/: not a warehouse, so nothing was deleted; remove it yourself or give another --warehouse\n",
    )
    assert (project / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    for mark in ("warehouse.duckdb", "objects"):
        warehouse = tmp_path / f"wh-{mark}"
        (warehouse / mark).mkdir(parents=True)
        (warehouse / "old.parquet").write_bytes(b"PAR1")
        assert CliRunner().invoke(app, [*args, str(warehouse)]).exit_code == 0
        assert not warehouse.exists()
    (tmp_path / "empty").mkdir()
    for empty in (tmp_path / "missing", tmp_path / "empty"):  # nothing to lose
        assert CliRunner().invoke(app, [*args, str(empty)]).exit_code == 0


def test_commands_are_named_so_the_shell_finds_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an activated virtualenv the report names the programs beside the interpreter, by a path
    relative to the working folder when it is inside it."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "graphwalk").is_file()
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(bin_dir.parent.parent)
    assert command("graphwalk") == os.path.relpath(bin_dir / "graphwalk")
    assert command("no-such-program") == "no-such-program"
    monkeypatch.chdir(tmp_path)
    assert command("graphwalk") == str(bin_dir / "graphwalk")
    monkeypatch.setenv("PATH", str(bin_dir))
    assert command("graphwalk") == "graphwalk"


def test_the_plan_trains_on_metaqa_dev_and_scores_its_test_questions(tmp_path: Path) -> None:
    """With MetaQA's KB in the data folder the demo trains a decider on its dev questions and scores the
    local and the trained decider on test questions; without it, neither (and it says why)."""
    questions = tmp_path / "questions.jsonl"
    questions.write_text("{}\n", encoding="utf-8")
    bare = demo_report.demo_plan(data_dir=tmp_path, questions=questions)
    assert bare.train_on == () and bare.splits == {}
    assert {d for d, _ in bare.partitions} == {"custom"}
    assert bare.left_out == dict.fromkeys(
        ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop"), f"no MetaQA data at {tmp_path / 'metaqa'}"
    )
    (tmp_path / "metaqa").mkdir()
    (tmp_path / "metaqa" / "kb.txt").write_text("Inception|directed_by|Christopher Nolan\n", encoding="utf-8")
    plan = demo_report.demo_plan(data_dir=tmp_path, questions=questions)
    metaqa = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop")
    assert plan.train_on == metaqa and plan.train_questions == 200 and plan.left_out == {}
    assert plan.splits == dict.fromkeys(metaqa, "test")
    systems = ("relation-greedy", "relation-greedy-trained", "vector-rag")
    assert [p for p in plan.partitions if p[0] != "custom"] == [(m, s) for m in metaqa for s in systems]


def test_the_demo_runs_its_whole_plan(tmp_path: Path, metaqa_dir: Path) -> None:
    """``graphwalk demo`` end to end, as ``make demo`` runs it: every partition of its plan lands in the
    warehouse (a run config one partition refused broke it, and no other test ran the demo whole), the
    decider it trains on MetaQA dev walks the ``-trained`` partitions, and MetaQA scores test questions."""
    import subprocess

    from dagster_fixtures import warehouse_rows

    plan = demo_report.demo_plan()
    assert plan.train_on
    env = {**os.environ, "GRAPHWALK_EMBED_CACHE": "off", "COLUMNS": "200"}
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("graphwalk")),
            "demo",
            "--n",
            "2",
            "--warehouse",
            str(tmp_path / "wh"),
            "--dagster-home",
            str(tmp_path / "home"),
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = warehouse_rows(tmp_path / "wh", "select distinct dataset, system from eval_results order by all")
    assert rows == sorted(plan.partitions)
    model = (tmp_path / "wh" / "models" / "decider" / "LATEST").read_text(encoding="utf-8").strip()
    walks = warehouse_rows(
        tmp_path / "wh",
        "select distinct dataset, split, system, decider from eval_results"
        " where dataset like 'metaqa%' and system like 'relation-greedy%' order by all",
    )
    local = "local:fastembed:sentence-transformers/all-MiniLM-L6-v2:t=0.05:gain+0.05:natural:w=0.5"
    trained = f"trained:decider@{model}:fastembed:sentence-transformers/all-MiniLM-L6-v2"
    assert walks == [
        (name, "test", system, decider)
        for name in plan.train_on
        for system, decider in (("relation-greedy", local), ("relation-greedy-trained", trained))
    ]
    assert f"Trained decider: {tmp_path / 'wh' / 'models' / 'decider' / model}" in done.stdout


def test_the_report_names_the_trained_model_and_what_its_accuracy_measures(tmp_path: Path) -> None:
    """The validation accuracy is per decision step on the held-out tenth of the dev questions, not the
    walks' F1: the report says so, and which split the benchmarks are scored on."""
    from rich.console import Console

    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import MODELS_DIR, mark_latest

    wh = Warehouse(tmp_path)
    folder = tmp_path / MODELS_DIR / "0123456789ab"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text('{"validation_accuracy": {"all": 0.98125}}', encoding="utf-8")
    mark_latest(wh, folder)
    metaqa = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop")
    plan = demo_report.DemoPlan([], train_on=metaqa, splits=dict.fromkeys(metaqa, "test"))
    console = Console(width=400, record=True)
    demo_report._print_training(wh, console, plan)
    assert console.export_text().splitlines() == [
        f"Trained decider: {folder}, learned from 200 dev questions each of metaqa-1hop, metaqa-2hop, "
        "metaqa-3hop (step accuracy on its held-out tenth of them: 0.981)",
        "metaqa-1hop, metaqa-2hop, metaqa-3hop: scored on test questions",
    ]


def test_the_report_names_the_graph_the_demo_wrote_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings_from_env: None
) -> None:
    """With GRAPHWALK_GRAPH_URL set the demo writes its sample graph there, not to graph.sqlite: the
    report says where (a shared graph should not be filled with the sample by surprise)."""
    graphs: list[str | None] = []
    monkeypatch.setenv("GRAPHWALK_GRAPH_URL", "postgresql+psycopg://gw:s3cret@db:5432/graph")
    monkeypatch.setattr(demo, "run_demo", lambda *args, **kwargs: None)
    monkeypatch.setattr(demo_report, "print_report", lambda *args, **kwargs: graphs.append(kwargs["graph"]))
    result = CliRunner().invoke(
        app, ["demo", "--warehouse", str(tmp_path / "wh"), "--dagster-home", str(tmp_path / "home")]
    )
    assert result.exit_code == 0, result.output
    assert graphs == ["postgresql+psycopg://gw:s3cret@db:5432/graph"]
    monkeypatch.undo()
    Warehouse(tmp_path / "wh").write("nodes", [{"id": "a"}])
    console = Console(record=True, width=60)
    demo_report.print_report(tmp_path / "wh", console, graph=graphs[0])
    lines = console.export_text().splitlines()
    assert [line for line in lines if line.startswith("Graph")] == [
        "Graph: postgresql+psycopg://gw:***@db:5432/graph"
    ]
    assert "s3cret" not in console.export_text()


@dg.asset
def broken_graph() -> int:
    return 1


@dg.asset_check(asset=broken_graph)
def edges_fail() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=False, metadata={"dangling": 3})


@dg.asset_check(asset=broken_graph, blocking=True)
def floor_fails() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=False, metadata={"accuracy": 0.25})


@dg.asset
def disk_full() -> int:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize(
    ("assets", "message"),
    [
        (
            [broken_graph, edges_fail],
            "ingesting films: asset check failed: broken_graph:edges_fail (dangling: 3)",
        ),
        (
            [broken_graph, floor_fails],
            "ingesting films: asset check failed: broken_graph:floor_fails (accuracy: 0.25)",
        ),
        ([disk_full], "ingesting films failed: OSError: [Errno 28] No space left on device"),
    ],
)
def test_a_failed_run_or_check_is_one_message_naming_it_and_its_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, assets: list[Any], message: str
) -> None:
    """A run whose step raised or whose error-level check failed ended ``graphwalk demo`` in a
    RuntimeError's (or Dagster's) traceback; now one message names the step or the check and the run to
    look up (Dagster's console logs the step's stack trace no more), and the exit code is 1 (it ran and
    found a problem)."""

    def ingest(source_ids: Any, resources: Any, instance: dg.DagsterInstance, log: Any) -> None:
        demo._materialize(assets, "ingesting films", instance, log, run_config=demo.QUIET_LOGS)

    monkeypatch.setattr(demo, "ingest_sources", ingest)
    home = tmp_path / "home"
    args = ["demo", "--warehouse", str(tmp_path / "wh"), "--dagster-home", str(home)]
    result = CliRunner().invoke(app, args)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_id = instance.get_runs(limit=1)[0].run_id
    ui = f"DAGSTER_HOME={home.resolve()} {command('dagster')} dev -w workspace.yaml"
    assert (result.exit_code, result.output) == (1, f"error: {message}\nSee run {run_id} in the UI: {ui}\n")


def test_a_questions_file_that_is_not_there_is_an_error_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--questions`` naming no file ran the whole demo (ingest, training, MetaQA evals) and only then
    listed its custom partitions as left out; now it is an error naming the option, and nothing runs."""
    ran: list[object] = []
    monkeypatch.setattr(demo, "run_demo", lambda *args, **kwargs: ran.append(args))
    for given in (tmp_path / "typo.jsonl", tmp_path):
        args = ["demo", "--warehouse", str(tmp_path / "wh"), "--dagster-home", str(tmp_path / "home")]
        result = CliRunner().invoke(app, [*args, "--questions", str(given)])
        assert (result.exit_code, result.output) == (2, f"error: --questions {given}: no such file\n")
    assert ran == [] and not (tmp_path / "home").exists()


def test_a_warehouse_or_dagster_home_that_is_a_file_is_an_error_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file as ``--dagster-home`` was a FileExistsError traceback, as ``--warehouse`` a failed first
    run (NotADirectoryError under objects/); now each is an error naming the option, and nothing runs."""
    ran: list[object] = []
    monkeypatch.setattr(demo, "run_demo", lambda *args, **kwargs: ran.append(args))
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n", encoding="utf-8")
    outputs = []
    for warehouse, home in ((taken, tmp_path / "home"), (tmp_path / "wh", taken / "home")):
        args = ["demo", "--warehouse", str(warehouse), "--dagster-home", str(home)]
        result = CliRunner().invoke(app, args)
        outputs.append((result.exit_code, result.output))
    assert outputs == [
        (2, f"error: --warehouse {taken}: {taken} is a file, not a folder\n"),
        (2, f"error: --dagster-home {taken / 'home'}: {taken} is a file, not a folder\n"),
    ]
    assert ran == [] and taken.read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "home").exists() and not (tmp_path / "wh").exists()


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, DagsterExecutionInterruptedError])
def test_ctrl_c_is_one_line_saying_so_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupt: type[BaseException]
) -> None:
    """Ctrl-C during a step (Dagster raises its own interrupt there) or between runs ended the demo in a
    traceback through Dagster's and pyarrow's frames; now one line, and the exit code of a Ctrl-C."""

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise interrupt()

    monkeypatch.setattr(demo, "run_demo", interrupted)
    home = tmp_path / "home"
    result = CliRunner().invoke(
        app, ["demo", "--warehouse", str(tmp_path / "wh"), "--dagster-home", str(home)]
    )
    ui = f"DAGSTER_HOME={home.resolve()} {command('dagster')} dev -w workspace.yaml"
    assert (result.exit_code, result.output) == (
        130,
        f"interrupted: what finished is kept; the runs so far in the UI: {ui}\n",
    )


def test_the_demo_report_counts_errors_beside_the_scores(tmp_path: Path) -> None:
    """A system whose every question failed showed n 2 and an empty F1, like one with nothing to score:
    the report's table now counts the errors, and the query it suggests shows n_error."""
    import pyarrow as pa

    from graphwalk_core.eval.report import RESULTS_SCHEMA
    from graphwalk_core.eval.tables import write_results

    warehouse = Warehouse(tmp_path / "wh")
    base = {"dataset": "custom", "latency_s": 0.5, "decision_calls": 1}
    rows = {
        "down": [{**base, "question_id": q, "status": "error", "error": "boom"} for q in ("c1", "c2")],
        "walk": [{**base, "question_id": q, "status": "ok", "f1": 1.0, "em": 1.0} for q in ("c1", "c2")],
    }
    for system, results in rows.items():
        table = pa.Table.from_pylist([{**r, "system": system} for r in results], schema=RESULTS_SCHEMA)
        write_results(warehouse, "custom", system, table)
    console = Console(record=True, width=200)
    demo_report.print_report(tmp_path / "wh", console)
    lines = console.export_text().splitlines()
    start = lines.index(next(line for line in lines if "dataset" in line and "errors" in line))
    assert [line.strip() for line in lines[start : start + 5]] == [
        "┃ dataset ┃ system ┃ n ┃ errors ┃ f1  ┃ em  ┃ hits_at_1 ┃ p50_s ┃ calls_per_q ┃",
        "┡━━━━━━━━━╇━━━━━━━━╇━━━╇━━━━━━━━╇━━━━━╇━━━━━╇━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━┩",
        "│ custom  │ down   │ 2 │ 2      │     │     │           │ 0.5   │ 1.0         │",
        "│ custom  │ walk   │ 2 │ 0      │ 1.0 │ 1.0 │           │ 0.5   │ 1.0         │",
        "└─────────┴────────┴───┴────────┴─────┴─────┴───────────┴───────┴─────────────┘",
    ]
    assert "n_ok, n_error, n_skipped" in demo_report.SUMMARY_QUERY
