"""The demo's plan (which eval partitions it runs) and the report it prints afterwards."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from graphwalk_core.eval.datasets.base import default_data_dir
from graphwalk_core.eval.partition_dataset import CUSTOM_QUESTIONS
from graphwalk_core.eval.systems.registry import SYSTEM_NAMES
from graphwalk_core.stores.sql_engine import redact_url
from graphwalk_core.training.store import validation_accuracy
from graphwalk_core.warehouse import Warehouse, query
from graphwalk_core.warehouse.models import latest_model

#: Benchmarks the demo adds when ../shared/data holds them, with the systems it runs on them: the
#: fastest walk with the untrained local decider and with the decider the demo trains on their dev
#: questions, and one LLM system (recorded as skipped offline, with the reason).
DEMO_BENCHMARKS = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop")
DEMO_BENCHMARK_SYSTEMS = ("relation-greedy", "relation-greedy-trained", "vector-rag")
#: The split the benchmarks are scored on: the trained decider learned from their dev questions.
DEMO_BENCHMARK_SPLIT = "test"
#: Dev questions per benchmark the demo's decider learns from (about 10 s of training for all three).
DEMO_TRAIN_QUESTIONS = 200

#: F1, EM and hits@1 average the questions answered without error; ``errors`` counts the others, so a
#: system that failed every question shows errors = n and no F1, not a 0 read as answers all wrong.
SUMMARY_SQL = """
SELECT dataset, system, count(*) AS n, count(*) FILTER (WHERE status = 'error') AS errors,
       round(avg(f1), 3) AS f1, round(avg(em), 3) AS em, round(avg(hits_at_1), 3) AS hits_at_1,
       round(median(latency_s), 3) AS p50_s, round(avg(decision_calls), 2) AS calls_per_q
FROM eval_results WHERE status <> 'skipped' GROUP BY ALL ORDER BY dataset, system
"""
#: The query the report suggests over ``eval_summary`` (its columns that fit a terminal). It has a row per
#: dataset × split × hops × system, so ``hops`` tells apart a system's rows of a dataset mixing hop counts
#: (the sample questions do).
SUMMARY_QUERY = (
    "select dataset, hops, system, n, n_ok, n_error, n_skipped, f1, em, hits_at_1 "
    "from eval_summary order by all"
)
SKIPPED_SQL = """
SELECT any_value(error) AS reason, string_agg(DISTINCT system, ', ' ORDER BY system) AS systems
FROM eval_results WHERE status = 'skipped' GROUP BY error ORDER BY reason
"""


def command(name: str) -> str:
    """How to call the program ``name`` from here: its bare name when the shell finds it, else its path
    beside this interpreter (the project's ``.venv/bin`` when it is not activated), relative when inside
    the working folder."""
    if shutil.which(name):
        return name
    beside = Path(sys.executable).parent / name
    if not beside.is_file():
        return name
    return os.path.relpath(beside) if beside.is_relative_to(Path.cwd()) else str(beside)


@dataclass(frozen=True)
class DemoPlan:
    """The eval partitions to run, the datasets left out (with why), the datasets the decider is trained
    on first (``train_questions`` dev questions of each; none: no training) and the split each dataset is
    scored on (named in the run config, and printed in the report, even where it is the default)."""

    partitions: list[tuple[str, str]]
    left_out: dict[str, str] = field(default_factory=dict)
    train_on: tuple[str, ...] = ()
    train_questions: int = DEMO_TRAIN_QUESTIONS
    splits: dict[str, str] = field(default_factory=dict)


def demo_plan(*, data_dir: Path | None = None, questions: Path = CUSTOM_QUESTIONS) -> DemoPlan:
    """custom (the sample questions over the sample graph) × every system, plus, when the data is there,
    a decider trained on MetaQA's dev questions and MetaQA 1/2/3-hop test questions ×
    ``DEMO_BENCHMARK_SYSTEMS``."""
    partitions: list[tuple[str, str]] = []
    left_out: dict[str, str] = {}
    if questions.is_file():
        partitions += [("custom", system) for system in SYSTEM_NAMES]
    else:
        left_out["custom"] = f"no question file at {questions}"
    kb = (data_dir or default_data_dir()) / "metaqa" / "kb.txt"
    if not kb.is_file():
        left_out.update(dict.fromkeys(DEMO_BENCHMARKS, f"no MetaQA data at {kb.parent}"))
        return DemoPlan(partitions, left_out)
    partitions += [(name, system) for name in DEMO_BENCHMARKS for system in DEMO_BENCHMARK_SYSTEMS]
    return DemoPlan(
        partitions,
        left_out,
        train_on=DEMO_BENCHMARKS,
        splits=dict.fromkeys(DEMO_BENCHMARKS, DEMO_BENCHMARK_SPLIT),
    )


def _print_training(warehouse: Warehouse, console: Console, plan: DemoPlan) -> None:
    """Which model the ``-trained`` rows walked with, what it learned from, and the split they score."""
    folder = latest_model(warehouse) if plan.train_on else None
    if folder is None:
        return
    accuracy = validation_accuracy(folder)
    score = "n/a" if accuracy is None else f"{accuracy:.3f}"
    console.print(
        f"[bold]Trained decider[/bold]: {escape(str(folder))}, learned from {plan.train_questions} dev "
        f"questions each of {', '.join(plan.train_on)} (step accuracy on its held-out tenth of them: "
        f"{score})",
        soft_wrap=True,
    )
    for split in sorted(set(plan.splits.values())):
        names = ", ".join(name for name, s in plan.splits.items() if s == split)
        console.print(f"{names}: scored on {split} questions", soft_wrap=True)


def print_report(
    root: Path,
    console: Console,
    *,
    plan: DemoPlan | None = None,
    seconds: float | None = None,
    graph: str | None = None,
) -> None:
    """Where the results are (and the graph, its password hidden), row counts per table, and the DuckDB
    summary over eval_results."""
    warehouse = Warehouse(root)
    console.print(f"\n[bold]Warehouse[/bold]: {escape(f'{warehouse.root}  (DuckDB: {warehouse.db_path})')}")
    if graph is not None:
        console.print(f"[bold]Graph[/bold]: {escape(redact_url(graph))}", soft_wrap=True)
    counts = Table("table", "rows", title="Tables (DuckDB views over hive-partitioned Parquet)")
    tables = warehouse.tables()
    for name in tables:
        counts.add_row(name, str(query(root, f'SELECT count(*) FROM "{name}"').rows[0][0]))
    console.print(counts)
    if plan is not None:
        for name, reason in plan.left_out.items():
            console.print(f"[yellow]left out[/yellow] {escape(f'{name}: {reason}')}")
        _print_training(warehouse, console, plan)
    if "eval_results" in tables:
        result = query(root, SUMMARY_SQL)
        summary = Table(*result.columns, title="eval_results, answered questions (DuckDB)")
        for row in result.rows:
            summary.add_row(*("" if v is None else str(v) for v in row))
        console.print(summary)
        for reason, systems in query(root, SKIPPED_SQL).rows:
            console.print(f"[yellow]skipped[/yellow] {escape(f'{systems}: {reason}')}")
    sql = "select dataset, system, avg(f1) from eval_results group by all"
    console.print(
        f'Query it: {command("graphwalk")} sql "{SUMMARY_QUERY}" --warehouse {root}\n'
        f'      or: {command("duckdb")} {warehouse.db_path} -c "{sql}"',
        soft_wrap=True,
    )
    if seconds is not None:
        console.print(f"Demo finished in {seconds:.1f}s")
