"""A decider trained on 1- and 2-hop questions only walks a 3-hop question that chains their phrasings."""

from __future__ import annotations

import asyncio

import pytest

from graphwalk_core.decisions.trained import TrainedDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.training.examples import LabeledQuestion, weak_examples
from graphwalk_core.training.fit import FitConfig, fit_decider
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.engine import Traverser

from .kb import directed, films_of_director, store, year

EMBEDDER = HashingEmbedder(dim=64)


def short_questions(films: range) -> list[LabeledQuestion]:
    """1-hop (director, year) and 2-hop (the director's other films; a director's films' years)."""
    out = []
    for i in films:
        name = f"Film {i}"
        same = [f for f in films_of_director(i % 4) if f != name]
        out += [
            LabeledQuestion(f"dir-{i}", f"who directed {name}", [name], directed(i), "dev", [name]),
            LabeledQuestion(f"year-{i}", f"when was {name} released", [name], year(i), "dev", [name]),
            LabeledQuestion(f"same-{i}", f"which films share the director of {name}", [name], same, "dev"),
        ]
    for d in range(4):
        person = f"Director {d}"
        years = sorted({y for f in films_of_director(d) for y in year(int(f.split()[1]))})
        text = f"when were the films directed by {person} released"
        out.append(LabeledQuestion(f"years-{d}", text, [person], years, "dev", [person]))
    return out


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> TrainedDecisionBackend:
    examples, unlabeled = asyncio.run(weak_examples(store(), short_questions(range(9))))
    assert unlabeled == 0 and max(len(ex.view.path) for ex in examples) == 2  # never a 3-hop path
    out = tmp_path_factory.mktemp("model") / "short"
    fit_decider(examples, EMBEDDER, config=FitConfig(hidden=(16,), max_iter=200, name="short"), out=out)
    return TrainedDecisionBackend.load(out, EMBEDDER)


@pytest.mark.parametrize("film", [9, 10, 11])
async def test_a_composed_three_hop_question(backend: TrainedDecisionBackend, film: int) -> None:
    """Films never trained on, a question chaining a 2-hop phrasing and a 1-hop one."""
    config = TraversalConfig(hop_mode="relation", strategy="greedy", allow_stop_at_start=False)
    name = f"Film {film}"
    result = await Traverser(store(), backend, config=config).walk(
        f"when were the films that share the director of {name} released", [name]
    )
    others = [int(f.split()[1]) for f in films_of_director(film % 4) if f != name]
    assert result.answers[0].relation_path == ["directed_by:out", "directed_by:in", "release_year:out"]
    assert sorted(result.answers[0].names) == sorted({y for i in others for y in year(i)})
