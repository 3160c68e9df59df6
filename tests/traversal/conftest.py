"""Shared helpers for traversal tests: the movie fixture graph and scripted deciders."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.triples import read_triples

MOVIES = Path(__file__).resolve().parents[1] / "fixtures" / "movies.txt"


def printed_by_hash_seed(program: str, seeds: Iterable[int] = range(8)) -> set[str]:
    """What the Python ``program`` prints, run once per ``PYTHONHASHSEED`` in ``seeds``: one output when
    nothing it prints depends on the order of a set of strings."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in seeds
    ]
    outputs = {proc.communicate(timeout=120)[0] for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    return outputs


def movie_type(relation: str, role: str) -> str:
    """Node types of the movie fixture: subjects are films; objects by relation."""
    if role == "subject":
        return "film"
    return {"release_year": "year", "has_genre": "genre"}.get(relation, "person")


@pytest.fixture
def movies() -> MemoryGraphStore:
    return MemoryGraphStore.from_triples(read_triples(MOVIES), source_id="movies", node_type_for=movie_type)


def graph(triples: Sequence[tuple[str, str, str]]) -> MemoryGraphStore:
    return MemoryGraphStore.from_triples(triples, source_id="test")


def one_hot(question: ChoiceQuestion, label: str) -> dict[str, float]:
    """A full distribution with all mass on ``label``."""
    return {lab: 1.0 if lab == label else 0.0 for lab in question.options}


def gold_path_script(
    path: Sequence[tuple[str, str]],
) -> Callable[[ChoiceQuestion, JSONContent], dict[str, float] | None]:
    """Follow ``path`` (relation, direction) one hop per depth, then STOP (works in both hop modes)."""

    def script(question: ChoiceQuestion, state: JSONContent) -> dict[str, float] | None:
        if question.key == "answer_type":
            return None
        assert isinstance(question.instructions, dict)
        depth = len(question.instructions["path"])
        want = tuple(path[depth]) if depth < len(path) else None
        for label, desc in question.options.items():
            if isinstance(desc, dict) and (desc["relation"], desc["direction"]) == want:
                return one_hot(question, label)
        return one_hot(question, "STOP")

    return script


def by_node(table: dict[str, dict[str, float]]) -> Callable[[ChoiceQuestion, JSONContent], Any]:
    """Entity-mode script: per current node, a distribution keyed by neighbor name (or STOP)."""

    def script(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
        assert isinstance(question.instructions, dict)
        wanted = table[question.instructions["current"]["node"]]
        out = {}
        for label, desc in question.options.items():
            key = "STOP" if label == "STOP" else desc["node"]  # type: ignore[index]
            out[label] = wanted.get(key, 0.0)
        return out

    return script
