"""Per-question and summary tables (Parquet), and summary.md in the results-table format."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa

from graphwalk_core.errors import InputError, OptionError
from graphwalk_core.eval import metrics
from graphwalk_core.eval.records import QuestionResult
from graphwalk_core.files import write_table_atomic, write_text_atomic

RESULTS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("dataset", pa.string()),
        ("split", pa.string()),
        ("hops", pa.int32()),
        ("qtype", pa.string()),
        ("system", pa.string()),
        ("question_id", pa.string()),
        ("question", pa.string()),
        ("gold", pa.list_(pa.string())),
        ("predicted", pa.list_(pa.string())),
        ("f1", pa.float64()),
        ("em", pa.float64()),
        ("hits_at_1", pa.float64()),
        ("linking_correct", pa.bool_()),
        ("linked_start", pa.list_(pa.string())),
        ("gold_start", pa.string()),
        ("latency_s", pa.float64()),
        ("decision_calls", pa.int32()),
        ("llm_calls", pa.int32()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("passages", pa.list_(pa.string())),
        ("recall_at_2", pa.float64()),
        ("recall_at_5", pa.float64()),
        ("recall_at_10", pa.float64()),
        ("all_supporting_at_10", pa.bool_()),
        ("decider", pa.string()),
        ("llm_model", pa.string()),
        ("embedder", pa.string()),
        ("extractor", pa.string()),
        ("reused", pa.bool_()),
        ("answer_scored", pa.bool_()),
    ]
)

SUMMARY_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("split", pa.string()),
        ("hops", pa.int32()),
        ("system", pa.string()),
        ("n", pa.int64()),
        ("n_ok", pa.int64()),
        ("n_error", pa.int64()),
        ("n_skipped", pa.int64()),
        ("skip_reason", pa.string()),
        ("first_error", pa.string()),
        ("f1", pa.float64()),
        ("f1_ci_low", pa.float64()),
        ("f1_ci_high", pa.float64()),
        ("em", pa.float64()),
        ("em_ci_low", pa.float64()),
        ("em_ci_high", pa.float64()),
        ("hits_at_1", pa.float64()),
        ("hits_at_1_ci_low", pa.float64()),
        ("hits_at_1_ci_high", pa.float64()),
        ("latency_p50_s", pa.float64()),
        ("latency_p95_s", pa.float64()),
        ("cost_per_1k_usd", pa.float64()),
        ("decision_calls_per_q", pa.float64()),
        ("llm_calls_per_q", pa.float64()),
        ("input_tokens_per_q", pa.float64()),
        ("output_tokens_per_q", pa.float64()),
        ("linking_acc", pa.float64()),
        ("recall_at_2", pa.float64()),
        ("recall_at_5", pa.float64()),
        ("recall_at_10", pa.float64()),
        ("all_supporting_at_10", pa.float64()),
    ]
)


#: Retrieval measures: per question in results, their means in the summary (null without gold passages).
RETRIEVAL_COLUMNS = ("recall_at_2", "recall_at_5", "recall_at_10", "all_supporting_at_10")


def results_table(results: Iterable[QuestionResult]) -> pa.Table:
    """One row per question result (columns documented in docs/eval-tables.md)."""
    rows = [r.model_dump(include=set(RESULTS_SCHEMA.names)) for r in results]
    return pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA)


def _summary_row(key: tuple[str, str, int | None, str], rows: list[dict], *, seed: int) -> dict:
    answered = [r for r in rows if r["status"] != "skipped"]
    out: dict = dict(zip(("dataset", "split", "hops", "system"), key, strict=True))
    out.update(
        n=len(rows),
        n_ok=sum(r["status"] == "ok" for r in rows),
        n_error=sum(r["status"] == "error" for r in rows),
        n_skipped=sum(r["status"] == "skipped" for r in rows),
        skip_reason=next((r["error"] for r in rows if r["status"] == "skipped"), None),
        first_error=next((r["error"] for r in rows if r["status"] == "error"), None),
    )
    for name in ("f1", "em", "hits_at_1"):
        # errors count as 0 (a failed answer is a wrong answer) where the answer would have been scored
        # (``answer_scored``: not a passage ranker's, it retrieves, it does not answer); rows written
        # before that column: where the system's other answers carry a score; skipped ones are excluded
        done = [r[name] for r in answered if r["status"] != "error"]
        legacy = not done or any(v is not None for v in done)
        values = [
            0.0 if r["status"] == "error" else r[name]
            for r in answered
            if r[name] is not None
            or (r["status"] == "error" and (legacy if r["answer_scored"] is None else r["answer_scored"]))
        ]
        ci = metrics.bootstrap_ci(values, seed=seed)
        out[name] = metrics.mean_or_none(values)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = ci if ci else (None, None)
    latencies = [r["latency_s"] for r in answered]
    out["latency_p50_s"] = metrics.percentile(latencies, 50)
    out["latency_p95_s"] = metrics.percentile(latencies, 95)
    out["cost_per_1k_usd"] = metrics.cost_per_1k([r["cost_usd"] for r in answered])
    for col, field in (
        ("decision_calls_per_q", "decision_calls"),
        ("llm_calls_per_q", "llm_calls"),
        ("input_tokens_per_q", "input_tokens"),
        ("output_tokens_per_q", "output_tokens"),
    ):
        out[col] = metrics.mean_or_none([r[field] for r in answered])
    links = [r["linking_correct"] for r in answered if r["linking_correct"] is not None]
    out["linking_acc"] = metrics.mean_or_none([1.0 if v else 0.0 for v in links])
    for name in RETRIEVAL_COLUMNS:
        out[name] = metrics.mean_or_none([float(r[name]) for r in answered if r[name] is not None])
    return out


def summary_table(results_tables: Sequence[pa.Table], *, seed: int = 0) -> pa.Table:
    """Per dataset × split × hops × system: n, F1/EM/hits@1 with 95% bootstrap CIs, latency, cost, calls.

    Scores average over answered questions; an errored question scores 0 (where the system's answered
    questions are scored at all), a skipped one is excluded (and counted in ``n_skipped`` with its
    reason).
    """
    groups: dict[tuple[str, str, int | None, str], list[dict]] = {}
    for table in results_tables:
        for row in table.to_pylist():
            key = (row["dataset"], row["split"], row["hops"], row["system"])
            groups.setdefault(key, []).append(row)
    order = sorted(groups, key=lambda k: (k[0], k[1], -1 if k[2] is None else k[2], k[3]))
    return pa.Table.from_pylist([_summary_row(k, groups[k], seed=seed) for k in order], schema=SUMMARY_SCHEMA)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


#: Characters of the first error shown under a summary.md row.
ERROR_CHARS = 100


def _cell(text: str | None, limit: int | None = None) -> str:
    """``text`` as one Markdown table cell: on one line, cut to ``limit`` characters, ``|`` escaped."""
    flat = " ".join(str(text).split())
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return flat.replace("|", "\\|")


def _none_answered(row: dict) -> bool:
    """Whether every question of the row that was not skipped failed."""
    return row["n_error"] > 0 and row["n_error"] == row["n"] - row["n_skipped"]


def _errors_note(row: dict) -> str:
    """The line under a row with failed questions: how many of those not skipped, whether their 0 counts
    in its scores, and the first error."""
    none = ", none answered" if _none_answered(row) else ""
    scored = " (scored 0)" if row["f1"] is not None else ""
    error = _cell(row["first_error"], ERROR_CHARS)
    return f"↳ {row['n_error']} of {row['n'] - row['n_skipped']} errors{none}{scored}, first: {error}"


def _ci(row: dict, name: str) -> str:
    if row[name] is None:
        return "—"
    low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    return f"{row[name]:.3f} [{low:.2f}, {high:.2f}]"


def _f1(row: dict) -> str:
    """The F1 cell: a row whose every question failed says so beside its 0 (no answer was wrong)."""
    if row["f1"] is not None and _none_answered(row):
        return f"{row['f1']:.3f}: none answered"
    return _ci(row, "f1")


def summary_markdown(summary: pa.Table) -> str:
    """Markdown tables, one per dataset/split, in the results-table layout."""
    rows = summary.to_pylist()
    lines: list[str] = []
    header = (
        "| hops | system | n | F1 [95% CI] | EM | hits@1 | p50 s | p95 s | $/1k q "
        "| decision calls/q | LLM calls/q | linking acc. | R@2 | R@5 | R@10 | all@10 |"
    )
    current = None
    for row in rows:
        if (row["dataset"], row["split"]) != current:
            current = (row["dataset"], row["split"])
            lines += ["", f"### {row['dataset']} ({row['split']})", "", header, "|" + "---|" * 16]
        if row["n_skipped"] == row["n"]:
            lines.append(
                f"| {row['hops'] or '—'} | {row['system']} | {row['n']} "
                f"| skipped: {_cell(row['skip_reason'])} | | | | | | | | | | | | |"
            )
            continue
        lines.append(
            f"| {row['hops'] if row['hops'] is not None else '—'} | {row['system']} | {row['n']} "
            f"| {_f1(row)} | {_fmt(row['em'])} | {_fmt(row['hits_at_1'])} "
            f"| {_fmt(row['latency_p50_s'], 2)} | {_fmt(row['latency_p95_s'], 2)} "
            f"| {_fmt(row['cost_per_1k_usd'], 4)} | {_fmt(row['decision_calls_per_q'], 2)} "
            f"| {_fmt(row['llm_calls_per_q'], 2)} | {_fmt(row['linking_acc'])} "
            + "".join(f"| {_fmt(row[name])} " for name in RETRIEVAL_COLUMNS)
            + "|"
        )
        if row["n_error"]:
            lines.append(f"|  | {_errors_note(row)} |" + " |" * 14)
    return "\n".join(lines).lstrip("\n") + "\n"


def write_report(
    out_dir: Path,
    results_tables: Sequence[pa.Table],
    *,
    run_metadata: Sequence[dict] = (),
    plots: bool = True,
) -> dict[str, Path]:
    """Write results.parquet, summary.parquet, summary.md, runs.json and (optionally) the PNG plots."""
    out_dir = Path(out_dir)
    combined = pa.concat_tables(list(results_tables)) if results_tables else RESULTS_SCHEMA.empty_table()
    summary = summary_table([combined])
    paths = {
        "results": write_table_atomic(combined, out_dir / "results.parquet"),
        "summary": write_table_atomic(summary, out_dir / "summary.parquet"),
        "summary_md": write_text_atomic(
            "# Evaluation summary\n\n" + summary_markdown(summary), out_dir / "summary.md"
        ),
        "runs": write_text_atomic(
            json.dumps(list(run_metadata), indent=2, default=str), out_dir / "runs.json"
        ),
    }
    if plots:
        from graphwalk_core.eval.plots import plot_cost_vs_f1, plot_f1_by_hops

        paths["f1_by_hops"] = plot_f1_by_hops(summary, out_dir / "f1_by_hops.png")
        paths["cost_vs_f1"] = plot_cost_vs_f1(summary, out_dir / "cost_vs_f1.png")
    return paths


def report_from_runs(out_dir: Path, *, plots: bool = True) -> dict[str, Path]:
    """``write_report`` over every run checkpointed under ``out_dir/runs`` (e.g. after several commands).

    Two runs of one dataset × split × system (another subset, decider, graph, or an old run folder beside
    its rerun) would be pooled into one summary row, their shared questions counted twice: refused,
    naming both folders, and nothing is written.
    """
    from graphwalk_core.eval.checkpoint import read_checkpoint
    from graphwalk_core.eval.runner import CHECKPOINT, METADATA

    runs = Path(out_dir) / "runs"
    # rglob: a hub run of the earlier, unencoded layout is nested in an hf:owner folder
    folders = sorted({p.parent for p in runs.rglob(CHECKPOINT)})
    if not folders:
        raise OptionError(
            "no eval run checkpointed under {runs}: give the {out} folder of an eval command", runs=runs
        )
    tables, metas = [], []
    owners: dict[tuple[str, str, str], Path] = {}
    for folder in folders:
        table = results_table(read_checkpoint(folder / CHECKPOINT))
        rows = table.select(["dataset", "split", "system"]).to_pylist()
        for key in dict.fromkeys((r["dataset"], r["split"], r["system"]) for r in rows):
            if key in owners:
                raise InputError(
                    f"{owners[key]} and {folder} are two runs of {key[0]} ({key[1]}) with {key[2]}: a "
                    "summary would pool their answers; move one out of "
                    f"{runs} (or give each eval its own --out)"
                )
            owners[key] = folder
        tables.append(table)
        if (folder / METADATA).exists():
            metas.append(json.loads((folder / METADATA).read_text(encoding="utf-8")))
    return write_report(out_dir, tables, run_metadata=metas, plots=plots)
