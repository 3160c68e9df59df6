"""The 1,000-question MetaQA dev sample the eval benchmarks walk, and its timed walk + report stages."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stopwatch import Stopwatch

from graphwalk_core.eval.datasets import load_dataset
from graphwalk_core.eval.report import results_table, write_report
from graphwalk_core.eval.runner import run_eval

N_QUESTIONS = 1000


def metaqa_datasets() -> list[Any]:
    """334 / 333 / 333 seeded dev questions over 1 / 2 / 3 hops."""
    per_hop = N_QUESTIONS // 3
    return [load_dataset(f"metaqa-{h}hop", n=per_hop + (1 if h == 1 else 0), seed=0) for h in (1, 2, 3)]


def walk_and_report(datasets: Sequence[Any], systems: Sequence[Any], watch: Stopwatch) -> list[Any]:
    """Run each system on its dataset (concurrency 4, checkpointing), then write the Parquet report."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = [
            run_eval(ds, s, out_dir=Path(tmp), concurrency=4) for ds, s in zip(datasets, systems, strict=True)
        ]
        watch.lap("walk + score + checkpoint")
        write_report(Path(tmp), [results_table(r.results) for r in runs], plots=False)
        watch.lap("report")
    return runs
