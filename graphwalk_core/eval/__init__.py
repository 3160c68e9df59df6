"""Evaluation: datasets, QA systems, metrics, the resumable runner, reports and the retrieval benchmark.

Public API (the Dagster layer wraps these as ``eval_questions`` / ``eval_results`` assets)::

    ds = load_dataset("metaqa-2hop", split="dev", n=200, seed=0)
    system = build_system("relation-greedy", ds, decider=..., embedder=..., llm=...)
    run = run_eval(ds, system, out_dir=Path("results"), concurrency=4)
    write_report(Path("results"), [results_table(run.results)])
"""

from graphwalk_core.eval.datasets import DATASET_NAMES, Dataset, Knowledge, Passage, Question, load_dataset
from graphwalk_core.eval.records import QuestionResult, RunMetadata
from graphwalk_core.eval.report import report_from_runs, results_table, summary_table, write_report
from graphwalk_core.eval.runner import EvalRun, run_eval, run_eval_async
from graphwalk_core.eval.systems.base import QASystem, SkippedSystem, SystemAnswer
from graphwalk_core.eval.systems.registry import SYSTEM_NAMES, build_system, build_system_async

__all__ = [
    "DATASET_NAMES",
    "SYSTEM_NAMES",
    "Dataset",
    "EvalRun",
    "Knowledge",
    "Passage",
    "QASystem",
    "Question",
    "QuestionResult",
    "RunMetadata",
    "SkippedSystem",
    "SystemAnswer",
    "build_system",
    "build_system_async",
    "load_dataset",
    "report_from_runs",
    "results_table",
    "run_eval",
    "run_eval_async",
    "summary_table",
    "write_report",
]
