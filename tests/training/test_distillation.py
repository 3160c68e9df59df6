"""Distillation end to end: walks against the Jev test server (a teacher with a fixed policy, over real
HTTP) leave traces; a student trained on those traces alone agrees with the teacher on unseen questions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr
from servers.jev_server import JevServer, running_server

from graphwalk_core.decisions import DecisionBackend, DecisionRequest, DecisionResponse
from graphwalk_core.decisions.jev import JevBackend
from graphwalk_core.decisions.trained import TrainedDecisionBackend
from graphwalk_core.decisions.views import PATH_STEP_TEXT
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.training.examples import trace_examples
from graphwalk_core.training.fit import FitConfig, fit_decider
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.engine import Traverser

from .kb import store

#: The teacher's plan per question phrase: the moves to take, then STOP.
PLANS: dict[str, list[tuple[str, str]]] = {
    "share the director": [("directed_by", "out"), ("directed_by", "in")],
    "co-star": [("starred_actors", "out"), ("starred_actors", "in")],
    "directed": [("directed_by", "out")],
    "released": [("release_year", "out")],
    "starred": [("starred_actors", "out")],
}
TEMPLATES = [
    "who directed {}",
    "when was {} released",
    "who starred in {}",
    "which films share the director of {}",
    "which films co-star an actor of {}",
]


def teacher(name: str, question: dict[str, Any], state: Any) -> dict[str, float]:
    """0.8 on the plan's next move (STOP once the plan is done), the rest shared like Jev rounds it."""
    query = state["query"]
    plan = next(moves for phrase, moves in PLANS.items() if phrase in query)
    taken = [PATH_STEP_TEXT.match(step) for step in question["instructions"]["path"]]
    walked = [(m["relation"], m["direction"]) for m in taken if m]
    criteria = question["criteria"]
    want = plan[len(walked)] if len(walked) < len(plan) else None
    best = next(
        (
            label
            for label, d in criteria.items()
            if isinstance(d, dict) and (d["relation"], d["direction"]) == want
        ),
        "STOP",
    )
    rest = round(0.2 / (len(criteria) - 1), 2)
    return {label: 0.8 if label == best else rest for label in criteria}


class Recording:
    """A decider that records every request it answers with the response."""

    def __init__(self, inner: DecisionBackend) -> None:
        self.inner = inner
        self.calls: list[tuple[DecisionRequest, DecisionResponse]] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def max_options(self) -> int:
        return self.inner.max_options

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        response = await self.inner.decide(request)
        self.calls.append((request, response))
        return response


@pytest.fixture
def server() -> Iterator[JevServer]:
    for running in running_server():
        running.answer_fn = teacher
        yield running


async def test_student_agrees_with_its_teacher_on_unseen_questions(server: JevServer) -> None:
    jev = Recording(JevBackend(SecretStr("test-key"), base_url=server.base_url, provider="typesafe"))
    config = TraversalConfig(hop_mode="relation", strategy="greedy", allow_stop_at_start=False)
    traverser = Traverser(store(), jev, config=config)
    examples = []
    for i in range(8):  # films 0-7 teach
        for k, template in enumerate(TEMPLATES):
            result = await traverser.walk(template.format(f"Film {i}"), [f"Film {i}"])
            assert result.status == "ok"
            examples += trace_examples(result.trace, question_id=f"film{i}-t{k}")
    assert len(server.calls()) == len(jev.calls) > 0  # every decision went over HTTP
    assert {ex.source for ex in examples} == {"trace"}

    embedder = HashingEmbedder(dim=64)
    report = fit_decider(examples, embedder, config=FitConfig(hidden=(16,), max_iter=300))
    assert report.model is not None
    student = TrainedDecisionBackend(report.model, embedder)

    jev.calls.clear()
    for i in range(8, 12):  # films 8-11: questions the student never saw
        for template in TEMPLATES:
            await traverser.walk(template.format(f"Film {i}"), [f"Film {i}"])
    agree = total = 0
    for request, response in jev.calls:
        mine = await student.decide(request)
        for key, result in response.results.items():
            total += 1
            agree += mine.results[key].top == result.top
    assert total >= 40
    assert agree / total >= 0.95, f"agreement {agree}/{total}"
