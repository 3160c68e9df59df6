"""Environment facts recorded with every run: git SHA, package versions, Python."""

from __future__ import annotations

import subprocess
import sys
from functools import lru_cache
from importlib import metadata

from graphwalk_core.eval.datasets.base import REPO_ROOT

PACKAGES = (
    "graphwalk",
    "typesafe-sdk",
    "litellm",
    "fastembed",
    "onnxruntime",
    "numpy",
    "pyarrow",
    "pydantic",
)


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=10
    ).stdout.strip()


@lru_cache(maxsize=1)
def git_sha() -> str | None:
    """The repository's HEAD commit (``+dirty`` when the tree has changes); None outside git."""
    try:
        sha = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "")


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape results (None when absent)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def python_version() -> str:
    return sys.version.split()[0]
