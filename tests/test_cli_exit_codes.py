"""Every ``graphwalk`` command exits 2 on an error that stops it (bad input, usage, settings), as
``graphwalk --help`` says; 1 is kept for a command that ran and found a problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphwalk_core.cli import EXIT_CODES, app


def test_help_ends_with_the_exit_codes() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "1000"})
    assert (result.exit_code, result.output.split()[-len(EXIT_CODES.split()) :]) == (0, EXIT_CODES.split())


@pytest.mark.parametrize(
    "args",
    [
        ["graph", "import", "{tmp}/missing.txt", "-o", "{tmp}/g"],
        ["graph", "export", "{tmp}/missing.db", "-o", "{tmp}/out"],
        ["graph", "stats", "{tmp}/missing.db"],
        ["sql", "select 1", "--warehouse", "{tmp}/wh"],
        ["query", "{tmp}/missing.db", "who?"],
        ["ingest", "{tmp}/missing", "--graph", "{tmp}/g.sqlite"],
        ["eval", "report", "{tmp}"],
        ["demo", "--fresh", "--warehouse", "{tmp}/not-a-warehouse", "--dagster-home", "{tmp}/home"],
        ["graph", "stats"],  # a usage error (click's)
    ],
)
def test_bad_input_exits_2_in_every_command(tmp_path: Path, args: list[str]) -> None:
    """``graphwalk graph ...``, ``sql`` and ``demo`` exited 1 on bad input, the others 2."""
    (tmp_path / "not-a-warehouse").mkdir()
    (tmp_path / "not-a-warehouse" / "notes.txt").write_text("mine\n", encoding="utf-8")
    result = CliRunner().invoke(app, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    assert (tmp_path / "not-a-warehouse" / "notes.txt").read_text(encoding="utf-8") == "mine\n"
