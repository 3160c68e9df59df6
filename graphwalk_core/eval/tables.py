"""Evaluation tables in the warehouse: per-partition results and the summary over all partitions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from graphwalk_core.eval.report import RESULTS_SCHEMA, summary_markdown, summary_table
from graphwalk_core.warehouse import Warehouse, query

RESULTS = "eval_results"
SUMMARY = "eval_summary"
PLOTS_DIR = "plots"


@dataclass(frozen=True)
class EvalSummary:
    """The summary table, its markdown, and the plot files written beside it."""

    table: pa.Table
    markdown: str
    plots: dict[str, Path]


def write_results(warehouse: Warehouse, dataset: str, system: str, results: pa.Table) -> Path:
    """Replace the ``eval_results`` partition ``dataset=<d>/system=<s>`` with ``results``."""
    return warehouse.write(RESULTS, results, {"dataset": dataset, "system": system})


def read_results(root: Path) -> pa.Table:
    """Every partition of ``eval_results`` (partition columns restored), in the results schema; a column
    no partition has (all written before graphwalk added it) reads as NULL."""
    present = {row[0] for row in query(root, f"DESCRIBE {RESULTS}").rows}
    columns = ", ".join(
        f'"{name}"' if name in present else f'NULL AS "{name}"' for name in RESULTS_SCHEMA.names
    )
    result = query(root, f"SELECT {columns} FROM {RESULTS} ORDER BY dataset, system, question_id")
    return pa.Table.from_pylist(
        [dict(zip(result.columns, row, strict=True)) for row in result.rows], RESULTS_SCHEMA
    )


def summarize(warehouse: Warehouse, *, plots: bool = True) -> EvalSummary:
    """Summarize every ``eval_results`` partition into ``eval_summary`` (+ PNG plots)."""
    summary = summary_table([read_results(warehouse.root)])
    warehouse.write(SUMMARY, summary)
    paths: dict[str, Path] = {}
    if plots:
        from graphwalk_core.eval.plots import plot_cost_vs_f1, plot_f1_by_hops

        folder = warehouse.root / PLOTS_DIR
        paths["f1_by_hops"] = plot_f1_by_hops(summary, folder / "f1_by_hops.png")
        paths["cost_vs_f1"] = plot_cost_vs_f1(summary, folder / "cost_vs_f1.png")
    return EvalSummary(summary, summary_markdown(summary), paths)


#: Scores a partition claims only when some question was answered.
SCORES = ("f1", "em", "hits_at_1", "latency_p50_s")


def partition_status(n: int, n_skipped: int, n_error: int = 0) -> str:
    """``skipped`` (no question answered: the system's backend is missing), ``failed`` (every question not
    skipped failed: its scores are errors counted as 0, not wrong answers), ``partial``, ``ok``, ``empty``."""
    if n == 0:
        return "empty"
    if n_skipped == n:
        return "skipped"
    return "failed" if n_error == n - n_skipped else "partial" if n_skipped else "ok"


def partition_stats(results: pa.Table) -> dict[str, object]:
    """One partition's headline numbers: status, the summary row over all its questions, usage totals,
    and how many results were reused from an earlier run's checkpoint.

    A skipped partition reports its reason and no scores (no F1 to mistake for a measurement).
    """
    if results.num_rows == 0:
        return {"status": "empty", "n": 0}
    flat = results.set_column(
        results.schema.get_field_index("hops"), "hops", pa.nulls(results.num_rows, pa.int32())
    )
    (row,) = summary_table([flat]).to_pylist()
    keep = ("n", "n_ok", "n_error", "n_skipped", "skip_reason", "first_error", *SCORES)
    stats: dict[str, object] = {"status": partition_status(row["n"], row["n_skipped"], row["n_error"])}
    stats |= {k: row[k] for k in keep if not (stats["status"] == "skipped" and k in SCORES)}
    stats["reused"] = sum(bool(v) for v in results.column("reused").to_pylist())
    for name in ("decision_calls", "llm_calls", "input_tokens", "output_tokens"):
        stats[name] = sum(results.column(name).to_pylist())
    costs = [c for c in results.column("cost_usd").to_pylist() if c is not None]
    stats["cost_usd"] = sum(costs) if costs else None
    return stats


def result_problems(results: pa.Table) -> list[str]:
    """What is wrong with one partition's results: repeated question ids, metrics outside [0, 1]."""
    problems: list[str] = []
    counts = Counter(results.column("question_id").to_pylist())
    repeated = sorted(i for i, c in counts.items() if c > 1)
    if repeated:
        problems.append(f"repeated question ids: {repeated[:10]}")
    for name in ("f1", "em", "hits_at_1"):
        bad = [v for v in results.column(name).to_pylist() if v is not None and not 0.0 <= v <= 1.0]
        if bad:
            problems.append(f"{name} outside [0, 1]: {bad[:10]}")
    return problems
