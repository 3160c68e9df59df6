"""Subprocess entry for the kill test: run the toy dataset slowly so the parent can SIGKILL it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakes import DictSystem, toy_dataset

from graphwalk_core.eval.runner import run_eval

if __name__ == "__main__":
    run_eval(toy_dataset(), DictSystem(delay_s=0.05), out_dir=Path(sys.argv[1]), concurrency=2)
