"""Reading the small YAML files ingestion is configured with (sources, record mappings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from graphwalk_core.errors import InputError


class _RepeatedKey(Exception):
    """A YAML mapping naming one key twice: ``(key, line, first line)``."""


class _Loader(yaml.SafeLoader):
    """``yaml.safe_load``'s loader, refusing a mapping that names a key twice: YAML keeps the last value
    without a word (a ``relations:`` written twice lost the first list, a mapping key twice its first
    mapping). Merge keys (``<<``) still override as YAML says."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                if key in first:
                    raise _RepeatedKey(key, line, first[key])
                first[key] = line
            except TypeError:  # an unhashable key: the constructor below says so
                break
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML of ``path``; an unreadable or invalid file (or a mapping in it that names a key
    twice) is an InputError naming ``what`` and it."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # a SafeLoader
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{what} {path} is not valid YAML: {exc}") from exc
    except _RepeatedKey as exc:
        key, line, earlier = exc.args
        raise InputError(
            f"{what} {path}:{line}: the key {key!r} repeats the one on line {earlier} (YAML would keep the "
            "last and drop the other without a word)"
        ) from None


def item_lines(path: Path) -> list[int]:
    """The line (from 1) where each item of the file's top-level list starts; empty when it is no list.
    For error messages about a file :func:`read_yaml` has read."""
    node = yaml.compose(path.read_text(encoding="utf-8"))
    return [item.start_mark.line + 1 for item in node.value] if isinstance(node, yaml.SequenceNode) else []
