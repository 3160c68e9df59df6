"""Fixtures for the Dagster layer: a temp copy of data/, a temp warehouse, an in-process instance."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Questions over the sample graph built from data/sources.yaml (answers are node names).
CUSTOM_QUESTIONS = [
    '{"id": "c1", "question": "Who directed Inception?", "answers": ["Christopher Nolan"], '
    '"start": "Inception"}',
    '{"id": "c2", "question": "Which films did Christopher Nolan direct?", "answers": ["Inception", '
    '"Interstellar"], "start": "Christopher Nolan"}',
]


def copy_data(dest: Path) -> Path:
    """A copy of the repository's sample data; returns its sources.yaml."""
    shutil.copytree(REPO / "data", dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest / "sources.yaml"


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    yield home


def metadata_values(result: object, asset: str) -> dict[str, object]:
    """The metadata of ``asset``'s materialization in an in-process result, as plain values."""
    import dagster as dg

    assert isinstance(result, dg.ExecuteInProcessResult)
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == asset]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def warehouse_rows(root: Path, sql: str) -> list[tuple[object, ...]]:
    """The rows of ``sql`` over the warehouse's DuckDB file at ``root``, read-only."""
    import duckdb

    con = duckdb.connect(str(root / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
