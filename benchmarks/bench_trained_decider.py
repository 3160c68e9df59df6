"""The trained decider's speed: per decision step (model included) and 1,000 MetaQA questions end to end.

Goals: p50 ≤ 1 ms per decision step (question embedded once per walk, option texts cached) and
1,000 questions (334/333/333 dev, relation-greedy) in ≤ 15 s end to end: load the questions, build the
KB graph, load the embedder and model, walk, score, checkpoint and write the report.
Usage: ``bench_trained_decider.py [MODEL_DIR]`` (without one, a model is first trained on 300 dev
questions per hop count, outside the timing). Prints a table with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

import numpy as np
from metaqa_sample import metaqa_datasets, walk_and_report
from rich.console import Console
from rich.table import Table
from stopwatch import Stopwatch

from graphwalk_core.decisions import DecisionRequest, DecisionResponse
from graphwalk_core.decisions.trained import TrainedDecisionBackend
from graphwalk_core.eval.datasets.base import default_data_dir
from graphwalk_core.eval.systems.registry import build_system

TARGET_STEP_MS = 1.0
TARGET_S = 15.0


class Timed:
    """The trained decider, timing each call (one question per call in relation-greedy)."""

    def __init__(self, inner: TrainedDecisionBackend) -> None:
        self.inner = inner
        self.seconds: list[float] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def max_options(self) -> int:
        return self.inner.max_options

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        t0 = time.perf_counter()
        response = await self.inner.decide(request)
        self.seconds.append((time.perf_counter() - t0) / len(request.questions))
        return response


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def quick_model(folder: Path) -> Path:
    from graphwalk_core.cli.train import _embedder
    from graphwalk_core.embeddings import factory
    from graphwalk_core.training.build import labeled_sources
    from graphwalk_core.training.examples import weak_examples
    from graphwalk_core.training.fit import fit_decider

    store, questions, _ = asyncio.run(
        labeled_sources(dataset="metaqa", questions=None, graph=None, split="dev", n=300)
    )
    examples, _ = asyncio.run(weak_examples(store, questions))
    fit_decider(examples, _embedder(None), out=folder)
    factory._fastembed.cache_clear()  # the timed run loads its own embedder, no vectors from training
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "model_dir", type=Path, nargs="?", help="a trained model (default: train a quick one)"
    )
    args = parser.parse_args()
    if not (default_data_dir() / "metaqa" / "kb.txt").is_file():
        print(f"skipped: {default_data_dir()}/metaqa is absent")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model_dir or quick_model(Path(tmp) / "quick")
        return run(model)


def run(model: Path) -> int:
    from graphwalk_core.cli.train import _embedder

    load_before = os.getloadavg()
    watch = Stopwatch()
    laps, lap = watch.laps, watch.lap

    datasets = metaqa_datasets()
    lap("load questions")
    embedder = _embedder(None)
    decider = Timed(TrainedDecisionBackend.load(model, embedder))
    lap("load embedder + model")
    systems = [
        build_system("relation-greedy", ds, decider=decider, embedder=embedder, llm=None) for ds in datasets
    ]  # type: ignore[arg-type]
    gc.freeze()
    lap("build graph + system")
    runs = walk_and_report(datasets, systems, watch)
    total = watch.total()
    results = [r for run in runs for r in run.results]
    steps = np.array(decider.seconds) * 1000
    f1 = [np.mean([r.f1 for r in run.results if r.f1 is not None]) for run in runs]
    table = Table(
        title=f"bench_trained_decider: {len(results)} MetaQA dev questions, relation-greedy, {model.name}"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, seconds in laps.items():
        table.add_row(f"{name} s", f"{seconds:.2f}")
    table.add_row(
        "total s", f"{total:.2f} (target ≤ {TARGET_S:.0f} → {'met' if total <= TARGET_S else 'NOT met'})"
    )
    p50, p95 = np.percentile(steps, 50), np.percentile(steps, 95)
    table.add_row("decision steps", str(len(steps)))
    table.add_row(
        "ms per step p50 / p95",
        f"{p50:.3f} / {p95:.3f} (target p50 ≤ {TARGET_STEP_MS:g} → {verdict(p50 <= TARGET_STEP_MS)})",
    )
    table.add_row(
        "embedder cache hits / misses", f"{decider.inner.cache.hits} / {decider.inner.cache.misses}"
    )
    # the quick model learned from the first 300 of these 333 per hop, a model trained on all of dev from
    # all of them: a check that the walks still work, not a quality measure (that is a test-split eval)
    table.add_row("F1 1/2/3-hop (dev: trained on)", " / ".join(f"{v:.3f}" for v in f1))
    table.add_row("load average before / after (1 min)", f"{load_before[0]:.1f} / {os.getloadavg()[0]:.1f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
