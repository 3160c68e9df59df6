"""The README's "From Python" example runs as printed there, and a second run re-ingests nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _blocks(readme: str) -> tuple[str, str]:
    """The section's Python code and the output it says the code prints."""
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    code, printed = re.findall(r"```(?:python)?\n(.*?)```", section, flags=re.S)
    return code, printed


def test_readme_python_example_prints_what_the_readme_says(tmp_path: Path, minilm_dir: Path) -> None:
    code, printed = _blocks((REPO / "README.md").read_text(encoding="utf-8"))
    (tmp_path / "data").symlink_to(REPO / "data")
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHWALK_")}
    env["GRAPHWALK_EMBED_CACHE"] = str(tmp_path / "vectors.sqlite")  # not the developer's cache

    def run() -> list[str]:
        done = subprocess.run(
            [sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.splitlines()

    assert run() == printed.splitlines()
    assert run() == [
        "films new: 0 unchanged: 11",
        "sample new: 0 unchanged: 26",
        "['Christopher Nolan'] [('spouse', ['films/people.jsonl#1'])]",
    ]
