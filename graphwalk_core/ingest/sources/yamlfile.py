"""Reading the small YAML files ingestion is configured with (sources, record mappings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from graphwalk_core.errors import InputError


def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML of ``path``; an unreadable or invalid file is an InputError naming ``what`` and it."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{what} {path} is not valid YAML: {exc}") from exc


def item_lines(path: Path) -> list[int]:
    """The line (from 1) where each item of the file's top-level list starts; empty when it is no list.
    For error messages about a file :func:`read_yaml` has read."""
    node = yaml.compose(path.read_text(encoding="utf-8"))
    return [item.start_mark.line + 1 for item in node.value] if isinstance(node, yaml.SequenceNode) else []
