"""``graphwalk ... --help``: every help text reaches the user as written."""

from __future__ import annotations

from typing import Any

import typer
from rich.text import Text
from typer.testing import CliRunner

from graphwalk_core.cli import app


def _help_texts(command: Any, path: str) -> list[tuple[str, str]]:
    """(where, text) of ``command``'s help and its parameters' helps, and of every subcommand's."""
    texts = [(path, command.help or "")]
    texts += [(f"{path} {p.name}", getattr(p, "help", None) or "") for p in command.params]
    for name, sub in getattr(command, "commands", {}).items():
        texts += _help_texts(sub, f"{path} {name}")
    return texts


def test_no_help_text_loses_words_to_rich_markup() -> None:
    """Typer renders help as rich markup, where ``[default: x]`` is a style tag and vanishes."""
    texts = _help_texts(typer.main.get_command(app), "graphwalk")
    assert [(where, text) for where, text in texts if Text.from_markup(text).plain != text] == []


def test_query_help_names_the_defaults_of_strategy_and_hop_mode() -> None:
    result = CliRunner().invoke(app, ["query", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "greedy | beam | sample (default: greedy)" in result.output
    assert "entity | relation (default: entity)" in result.output


def test_help_texts_are_for_users_not_docstring_markup() -> None:
    """No reStructuredText (the module docstrings' ````name````) in what ``--help`` prints."""
    texts = _help_texts(typer.main.get_command(app), "graphwalk")
    assert [where for where, text in texts if "``" in text] == []


def test_every_data_dir_option_names_its_environment_default() -> None:
    """Every command reading the data folder falls back to $GRAPHWALK_DATA_DIR (``default_data_dir``)."""
    texts = _help_texts(typer.main.get_command(app), "graphwalk")
    data_dirs = {where: text for where, text in texts if where.endswith(" data_dir")}
    assert sorted(data_dirs) == [
        "graphwalk eval 2wiki data_dir",
        "graphwalk eval 2wiki-retrieval data_dir",
        "graphwalk eval hotpotqa data_dir",
        "graphwalk eval metaqa data_dir",
        "graphwalk train decider data_dir",
    ]
    assert set(data_dirs.values()) == {"data folder (default: $GRAPHWALK_DATA_DIR or ../shared/data)"}
