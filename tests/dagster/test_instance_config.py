"""An instance folder's dagster.yaml written by an earlier ``graphwalk demo`` / ``make ui``: it lacked the
run queue's one-run-per-partition limit, and nothing said so."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster_fixtures import REPO
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_dagster import demo, demo_report, instance_config
from graphwalk_dagster.instance_config import prepare

#: dagster.yaml as the repository shipped it before the limit (commit 11a0cf2).
EARLIER = (
    "# Dagster instance config. Use it as DAGSTER_HOME/dagster.yaml (see docs/dagster.md).\n"
    "telemetry:\n"
    "  enabled: false\n"
    "# Steps in a pool run one at a time: the ingestion steps that open the graph store use the\n"
    '# "graph_store" pool, so concurrent source runs never contend for the SQLite file.\n'
    "concurrency:\n"
    "  pools:\n"
    "    default_limit: 1\n"
)
WARNING = (
    "warning: {file} lacks the run queue's limit of one run per partition (concurrency.runs."
    "tag_concurrency_limits: [{{key: dagster/partition, value: {{applyLimitPerUniqueValue: true}}, "
    "limit: 1}}]; "
    "{shipped} has it): two runs of one source can start at once, and the one overtaken fails with "
    "StaleDiffError. It is no copy of a dagster.yaml graphwalk shipped (edited?), so it is left as it is: "
    "add the setting (docs/dagster.md)"
)


def test_an_earlier_copy_is_replaced_by_the_current_file(tmp_path: Path) -> None:
    for text in (
        EARLIER,
        "# Dagster instance config: copy or point DAGSTER_HOME at a folder holding this file.\n"
        "telemetry:\n  enabled: false\n",
    ):
        (tmp_path / "dagster.yaml").write_text(text, encoding="utf-8")
        assert prepare(tmp_path) == (
            f"updated {tmp_path / 'dagster.yaml'}: it was an earlier dagster.yaml, without the limit of one "
            "run per partition"
        )
        assert (tmp_path / "dagster.yaml").read_bytes() == (REPO / "dagster.yaml").read_bytes()
        assert prepare(tmp_path) is None


def test_an_edited_file_without_the_limit_is_named_and_kept(tmp_path: Path) -> None:
    edited = EARLIER + "run_monitoring:\n  enabled: true\n"
    (tmp_path / "dagster.yaml").write_text(edited, encoding="utf-8")
    assert prepare(tmp_path) == WARNING.format(file=tmp_path / "dagster.yaml", shipped=REPO / "dagster.yaml")
    assert (tmp_path / "dagster.yaml").read_text(encoding="utf-8") == edited


@pytest.mark.parametrize(
    "text",
    [
        (REPO / "dagster.yaml").read_text(encoding="utf-8"),
        (REPO / "dagster.postgres.yaml").read_text(encoding="utf-8"),
        "run_queue:\n  tag_concurrency_limits:\n"
        "    - {key: dagster/partition, value: {applyLimitPerUniqueValue: true}, limit: 1}\n",
    ],
)
def test_a_file_with_the_limit_is_left_alone(tmp_path: Path, text: str) -> None:
    (tmp_path / "dagster.yaml").write_text(text, encoding="utf-8")
    assert prepare(tmp_path) is None
    assert (tmp_path / "dagster.yaml").read_text(encoding="utf-8") == text


def test_a_missing_file_is_copied(tmp_path: Path) -> None:
    assert prepare(tmp_path / "home") is None
    assert (tmp_path / "home" / "dagster.yaml").read_bytes() == (REPO / "dagster.yaml").read_bytes()


def test_the_demo_and_make_ui_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(demo, "run_demo", lambda *args, **kwargs: None)
    monkeypatch.setattr(demo_report, "print_report", lambda *args, **kwargs: None)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(EARLIER + "# mine\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["demo", "--dagster-home", str(home), "--warehouse", str(tmp_path / "w")]
    )
    warning = WARNING.format(file=home / "dagster.yaml", shipped=REPO / "dagster.yaml")
    assert (result.exit_code, result.stderr) == (0, warning + "\n")
    assert instance_config.main([str(home)]) == 0
    assert capsys.readouterr().err == warning + "\n"


def test_main_help_and_a_missing_shipped_file_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--help`` was taken for HOME (a folder ``--help`` with a dagster.yaml), and a SHIPPED that is no file
    left HOME made but empty."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_help:
        instance_config.main(["--help"])
    assert exit_help.value.code == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "usage: python -m graphwalk_dagster.instance_config [-h] home [shipped]"
    )
    with pytest.raises(SystemExit) as exit_missing:
        instance_config.main(["home", "dagster.postgres.yml"])
    assert exit_missing.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: dagster.postgres.yml is not a file: give a shipped instance config (dagster.postgres.yaml)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []
