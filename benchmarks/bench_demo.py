"""Time `graphwalk demo` (goal: <= 60 s after installation), cold (fresh warehouse) and warm (rerun).

Each run is a fresh process, as `make demo` starts it; the per-step table times the demo's own
progress lines as they arrive. The 1-minute load average is printed: the machine is shared.

    python benchmarks/bench_demo.py [--n N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

GOAL_S = 60.0
ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}


def run_demo(warehouse: Path, n: int | None, fresh: bool) -> tuple[float, list[tuple[str, float]]]:
    """Wall seconds of one `graphwalk demo` process (``n``: its --n, else the demo's default), and
    seconds per progress step. Its Dagster instance is beside ``warehouse`` (not ./.dagster)."""
    cmd = [
        str(Path(sys.executable).with_name("graphwalk")),
        "demo",
        "--warehouse",
        str(warehouse),
        "--dagster-home",
        str(warehouse.parent / "dagster"),
        *(["--n", str(n)] if n is not None else []),
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, *(["--fresh"] if fresh else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **ENV, "COLUMNS": "200"},
    )
    steps: list[tuple[str, float]] = []
    last, label = start, "start-up (imports)"
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("materialize "):
            now = time.perf_counter()
            steps.append((label, now - last))
            last, label = now, line.removeprefix("materialize ").strip()
    now = time.perf_counter()
    steps.append((label + " + report", now - last))
    if proc.wait() != 0:
        raise SystemExit(f"graphwalk demo failed with exit code {proc.returncode}")
    return now - start, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, help="questions per eval partition (default: the demo's own)")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = Path(tmp) / "warehouse"
        # cold: an empty embedding cache, as after installation; the rerun finds what the first run kept
        os.environ.setdefault("GRAPHWALK_EMBED_CACHE", str(Path(tmp) / "vectors.sqlite"))
        cold, steps = run_demo(warehouse, args.n, fresh=True)
        warm, _ = run_demo(warehouse, args.n, fresh=False)
    table = Table("step (cold run)", "seconds", title="graphwalk demo steps")
    for label, seconds in steps:
        table.add_row(label, f"{seconds:.1f}")
    console.print(table)
    summary = Table("run", "seconds", f"goal <= {GOAL_S:.0f} s", "load avg (1 min)", title="graphwalk demo")
    load = os.getloadavg()[0]
    summary.add_row("cold (fresh warehouse)", f"{cold:.1f}", "yes" if cold <= GOAL_S else "no", f"{load:.1f}")
    summary.add_row(
        "warm (rerun, nothing changed)", f"{warm:.1f}", "yes" if warm <= GOAL_S else "no", f"{load:.1f}"
    )
    console.print(summary)


if __name__ == "__main__":
    main()
