"""Held-out templates: a stable share of masked question texts kept out of training and scored apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
from graphwalk_core.training.examples import weak_examples
from graphwalk_core.training.templates import held_out_of, hold_out_templates, only_templates

from .kb import questions, store


async def test_hold_out_removes_every_example_of_the_held_templates() -> None:
    examples, _ = await weak_examples(store(), questions(range(4)))
    kept, held = hold_out_templates(examples, 0.5)
    templates = sorted({ex.view.question for ex in examples})
    assert templates == [
        "when was ENTITY released",
        "which films share the director of ENTITY",
        "who directed ENTITY",
    ]
    assert held == sorted(held) and set(held) < set(templates)
    assert {ex.view.question for ex in kept} == set(templates) - set(held)
    assert hold_out_templates(examples, 0.5) == (kept, held)  # stable


def test_only_the_held_templates_are_scored(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"held_out_templates": ["who directed ENTITY"]}))
    qs = [
        Question(id="a", text="who directed Heat", gold=["x"], topic="Heat", extra={"start": "Heat"}),
        Question(id="b", text="when was Heat released", gold=["1995"], topic="Heat", extra={"start": "Heat"}),
    ]
    ds = Dataset(name="d", split="test", questions=qs, knowledge=Knowledge(graph="triples", triples=[]))
    assert [q.id for q in only_templates(ds, held_out_of(tmp_path)).questions] == ["a"]
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(InputError, match="held no templates out"):
        held_out_of(tmp_path)
