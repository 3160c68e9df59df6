"""Shared test fixtures: paths to ../shared, offline environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_DATA = SHARED / "data"
SHARED_MODEL = SHARED / "models" / "all-minilm-l6-v2-onnx"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a message naming it."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: this test needs ../shared (see ../shared/README.md)")
    return path


@pytest.fixture
def metaqa_dir() -> Path:
    return shared_path("data", "metaqa")


@pytest.fixture
def minilm_dir() -> Path:
    return shared_path("models", "all-minilm-l6-v2-onnx")
