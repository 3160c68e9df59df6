"""graphwalk sql prints a query's result as a table."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.warehouse import Warehouse


def test_sql_prints_rows(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("eval_results", [{"f1": 0.25}, {"f1": 0.75}], {"dataset": "custom"})
    result = CliRunner().invoke(
        app,
        ["sql", "select dataset, avg(f1) as f1 from eval_results group by all", "--warehouse", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "custom" in line]
    assert lines == ["│ custom  │ 0.5 │"]
    assert result.output.rstrip().endswith("1 row(s)")


def test_sql_reports_a_bad_query(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = CliRunner().invoke(app, ["sql", "select b from t", "--warehouse", str(tmp_path)])
    assert result.exit_code == 1
    assert "query failed" in result.output
