"""Eval throughput: 1,000 MetaQA dev questions end to end with the fake decider (target ≤ 10 s).

End to end = load the questions, build the KB graph, walk every question (relation-greedy preset, no
embedder), score, checkpoint (fsync per question), and write the Parquet/summary report. Prints a table.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

from metaqa_sample import metaqa_datasets, walk_and_report
from rich.console import Console
from rich.table import Table
from stopwatch import Stopwatch

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.eval.datasets.base import Question, default_data_dir
from graphwalk_core.eval.report import results_table, write_report
from graphwalk_core.eval.runner import run_eval
from graphwalk_core.eval.systems.base import SystemAnswer
from graphwalk_core.eval.systems.registry import build_system


class InstantSystem:
    """Answers the gold set at once: isolates the eval pipeline's own overhead from the walk."""

    name = "instant"

    def identity(self) -> dict[str, str]:
        return {"system": "instant"}

    async def answer(self, question: Question) -> SystemAnswer:
        return SystemAnswer(answers=list(question.gold), latency_s=0.0001)


TARGET_S = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", nargs="?", default="relation-greedy", help="the walk preset to time")
    args = parser.parse_args()
    if not (default_data_dir() / "metaqa" / "kb.txt").is_file():
        print(f"skipped: {default_data_dir()}/metaqa is absent")
        return 0
    watch = Stopwatch()
    laps, lap = watch.laps, watch.lap

    datasets = metaqa_datasets()
    lap("load questions")
    decider = FakeDecisionBackend(seed=0)
    systems = [build_system(args.preset, ds, decider=decider, embedder=None, llm=None) for ds in datasets]
    gc.freeze()  # as `graphwalk eval` does: the graph lives until exit, so the cyclic GC skips it
    lap("build graph + system")
    runs = walk_and_report(datasets, systems, watch)
    total = watch.total()
    n = sum(len(r.results) for r in runs)
    with tempfile.TemporaryDirectory() as tmp:  # the same pipeline around a system that answers instantly
        t0 = time.perf_counter()
        instant = [run_eval(ds, InstantSystem(), out_dir=Path(tmp), concurrency=4) for ds in datasets]
        write_report(Path(tmp), [results_table(r.results) for r in instant], plots=False)
        overhead = time.perf_counter() - t0
    table = Table(title=f"bench_eval: {n} MetaQA questions, fake decider, {args.preset}, no embedder")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    for name, seconds in laps.items():
        table.add_row(name, f"{seconds:.2f}")
    table.add_row("total", f"{total:.2f}")
    table.add_row("per question (walk stage)", f"{laps['walk + score + checkpoint'] / n * 1000:.1f} ms")
    table.add_row("target", f"≤ {TARGET_S:.0f} s → {'met' if total <= TARGET_S else 'NOT met'}")
    table.add_row("runner + scoring + checkpoint + report alone (instant system)", f"{overhead:.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
