"""The floor plan of docs/DEVELOPING.md, enforced: import-linter's contracts hold, and they do fail
when the core imports the Dagster layer or a cycle appears."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages under ``root`` with ``root``'s pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The two packages and pyproject.toml, copied so a test can break them."""
    for package in ("graphwalk_core", "graphwalk_dagster"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    return tmp_path


def test_import_contracts_are_kept() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_core_importing_dagster_breaks_the_contracts(tree_copy: Path) -> None:
    settings = tree_copy / "graphwalk_core" / "settings.py"
    settings.write_text(settings.read_text() + "\nimport graphwalk_dagster.metadata  # noqa\n")
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    assert "graphwalk_core.settings -> graphwalk_dagster.metadata" in result.stdout
    assert "graphwalk_core never imports graphwalk_dagster BROKEN" in result.stdout


def test_a_cycle_breaks_the_contracts(tree_copy: Path) -> None:
    tables = tree_copy / "graphwalk_core" / "warehouse" / "layout.py"
    tables.write_text(
        tables.read_text() + "\n\ndef _late() -> None:\n    import graphwalk_core.warehouse.views\n"
    )
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    assert "No cycles are allowed in graphwalk_core.warehouse." in result.stdout


def test_demo_command_comes_from_the_dagster_package() -> None:
    from graphwalk_core.cli import app

    commands = {c.name: c.callback for c in app.registered_commands}
    assert "demo" in commands, "graphwalk demo is not registered: reinstall the package (make setup)"
    assert commands["demo"].__module__ == "graphwalk_dagster.cli"


def test_developing_floor_plan_is_the_layers_contract() -> None:
    """The drawing in docs/DEVELOPING.md lists the layers of pyproject.toml's contract, in its order."""
    doc = (REPO / "docs" / "DEVELOPING.md").read_text(encoding="utf-8")
    [drawing] = re.findall(r"## Floor plan\n.*?```\n(.*?)```", doc, re.S)
    drawn = [
        {
            name if name == "graphwalk_dagster" else f"graphwalk_core.{name}"
            for name in re.split(r" \| ", layer)
        }
        for layer in re.findall(r"^(\S.*?)(?:\s{2,}|$)", drawing, re.M)
    ]
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    [layers] = [c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert drawn == [set(layer.split(" | ")) for layer in layers]
