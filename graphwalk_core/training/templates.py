"""Question templates (the text with its entity masked) and holding a share of them out of training."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphwalk_core.decisions.views import mask_mentions
from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Dataset
from graphwalk_core.training.examples import DecisionExample
from graphwalk_core.training.fit import is_validation


def held_out(template: str, fraction: float) -> bool:
    """Whether ``template`` falls in the stable ``fraction`` of templates kept out of training."""
    return is_validation("template:" + template, fraction)


def hold_out_templates(
    examples: Sequence[DecisionExample], fraction: float
) -> tuple[list[DecisionExample], list[str]]:
    """(examples of the kept templates, the held-out templates sorted) for a share ``fraction``."""
    templates = sorted({ex.view.question for ex in examples})
    held = [t for t in templates if held_out(t, fraction)]
    dropped = set(held)
    return [ex for ex in examples if ex.view.question not in dropped], held


def question_template(text: str, mentions: Sequence[str]) -> str:
    """A question's template: its text with the entity mentions masked (as the trained decider reads it)."""
    return mask_mentions(text, mentions)


def held_out_of(model_dir: Path) -> frozenset[str]:
    """The templates a model was trained without (``held_out_templates`` of its manifest)."""
    manifest = model_dir / "manifest.json"
    try:
        held = json.loads(manifest.read_text(encoding="utf-8")).get("held_out_templates")
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{manifest}: cannot read the model's manifest ({exc})") from exc
    if not held:
        raise InputError(f"{manifest}: the model held no templates out (train it with --hold-out-templates)")
    return frozenset(held)


def only_templates(dataset: Any, templates: frozenset[str]) -> Any:
    """The dataset restricted to questions whose template is in ``templates``."""
    kept = [
        q
        for q in dataset.questions
        if question_template(q.text, [q.topic or q.gold_start or ""]) in templates
    ]
    return dataset.model_copy(update={"questions": kept})


def held_out_questions(dataset: Dataset, model_dir: Path) -> Dataset:
    """``--templates-from``: the questions of ``dataset`` (a seeded ``--n`` subset, as drawn) whose
    template the model in ``model_dir`` was trained without, recorded in the dataset's info. The subset
    is drawn first, so a command keeps the questions it kept when the results in docs/results.md were
    measured; none at all is an InputError."""
    held = held_out_of(model_dir)
    kept = only_templates(dataset, held).questions
    if not kept:
        raise InputError(
            f"--templates-from {model_dir}: no question of {dataset.name}-{dataset.split} has a template "
            f"held out by that model ({len(held)} held out)"
        )
    info = {**dataset.info, "templates_from": str(model_dir), "held_out_questions": len(kept)}
    return dataset.model_copy(update={"questions": kept, "info": info})
