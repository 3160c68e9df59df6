"""Training the decider on all of MetaQA dev (1/2/3-hop): seconds per stage and peak memory.

Goals: ≤ 5 min in all and ≤ 4 GB peak RSS on the 2-core machine. Writes the model to ``--out``
(default: a temporary folder). Prints a table, the machine's load average beside the timings.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

from rich.console import Console
from rich.table import Table
from stopwatch import Stopwatch

from graphwalk_core.eval.datasets.base import default_data_dir
from graphwalk_core.training.build import labeled_sources
from graphwalk_core.training.examples import weak_examples
from graphwalk_core.training.fit import FitConfig, fit_decider

TARGET_S = 300.0
TARGET_MB = 4096.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--n", type=int, default=None, help="questions per hop count (default: all)")
    args = parser.parse_args()
    if not (default_data_dir() / "metaqa" / "kb.txt").is_file():
        print(f"skipped: {default_data_dir()}/metaqa is absent")
        return 0
    from graphwalk_core.cli.train import _embedder

    load_before = os.getloadavg()
    watch = Stopwatch()
    laps, lap = watch.laps, watch.lap

    store, questions, _ = asyncio.run(
        labeled_sources(dataset="metaqa", questions=None, graph=None, split="dev", hops=args.hops, n=args.n)
    )
    embedder = _embedder(None)
    lap("load questions + KB graph + embedder")
    examples, unlabeled = asyncio.run(weak_examples(store, questions))
    lap("weak labels (relation paths)")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "decider"
        report = fit_decider(examples, embedder, config=FitConfig(name=out.name), out=out)
    for stage, seconds in report.seconds.items():
        laps[f"fit: {stage}"] = seconds
    total = watch.total()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    table = Table(title=f"bench_train_decider: MetaQA dev {args.hops}-hop, {len(questions)} questions")
    table.add_column("stage")
    table.add_column("seconds / value", justify="right")
    for name, seconds in laps.items():
        if not name.startswith("fit: "):
            table.add_row(name, f"{seconds:.1f}")
    for name, seconds in report.seconds.items():
        table.add_row(f"fit: {name}", f"{seconds:.1f}")
    table.add_row(
        "total", f"{total:.1f} (target ≤ {TARGET_S:.0f} s → {'met' if total <= TARGET_S else 'NOT met'})"
    )
    table.add_row(
        "peak RSS MB",
        f"{peak_mb:.0f} (target ≤ {TARGET_MB:.0f} → {'met' if peak_mb <= TARGET_MB else 'NOT met'})",
    )
    table.add_row("examples / distinct rows", f"{len(examples)} / {report.examples['rows']}")
    table.add_row("questions without a path to a gold answer", str(unlabeled))
    table.add_row(
        "validation accuracy (first / later / stop / all)",
        " / ".join(  # None: no validation example of that kind (a small --n)
            "—" if (v := report.validation_accuracy[k]) is None else f"{v:.3f}"
            for k in ("first", "later", "stop", "all")
        ),
    )
    table.add_row("load average before / after (1 min)", f"{load_before[0]:.1f} / {os.getloadavg()[0]:.1f}")
    table.add_row("CPU seconds (user + sys)", f"{sum(resource.getrusage(resource.RUSAGE_SELF)[:2]):.1f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
