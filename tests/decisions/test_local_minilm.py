"""LocalDecisionBackend with the shared offline MiniLM model on MetaQA-style relation hops."""

from __future__ import annotations

import pytest
from conftest import shared_path

from graphwalk_core.decisions import ChoiceQuestion, DecisionRequest, LocalDecisionBackend
from graphwalk_core.embeddings import FastEmbedEmbedder
from graphwalk_core.traversal import prompts as P

pytestmark = pytest.mark.shared


def hop(current: list[str], path: list[str], rels: list[tuple[str, str, list[str]]]) -> ChoiceQuestion:
    options = {
        f"r{i + 1}": P.relation_option(rel, direction, targets, len(targets), glosses={})
        for i, (rel, direction, targets) in enumerate(rels)
    }
    options["STOP"] = P.stop_description("literal", current)
    return ChoiceQuestion(
        key="b0", instructions=P.instructions("relation", path, current, len(current)), options=options
    )


CASES = [
    (
        "what movies did Temuera Morrison act in",
        hop(
            ["Temuera Morrison"],
            ["Temuera Morrison"],
            [("starred_actors", "in", ["Once Were Warriors"]), ("has_tags", "in", ["Once Were Warriors"])],
        ),
        "r1",
        0.7709,
    ),
    (
        "when was Memento released",
        hop(
            ["Memento"],
            ["Memento"],
            [
                ("directed_by", "out", ["Christopher Nolan"]),
                ("release_year", "out", ["2000"]),
                ("starred_actors", "out", ["Guy Pearce"]),
            ],
        ),
        "r2",
        0.8168,
    ),
    (
        "when was Memento released",
        hop(["2000"], ["Memento", "release_year:out"], [("release_year", "in", ["Memento", "Gladiator"])]),
        "STOP",
        0.8114,
    ),
    (
        # walking the first hop back reads "other ones with the same directed by": STOP wins
        "who directed Memento",
        hop(
            ["Christopher Nolan"],
            ["directed_by (out)"],
            [("directed_by", "in", ["Insomnia", "Inception"]), ("written_by", "in", ["Memento"])],
        ),
        "STOP",
        0.9115,
    ),
]


@pytest.fixture(scope="module")
def minilm() -> FastEmbedEmbedder:
    """One model load for the module (skips when ../shared is absent)."""
    folder = shared_path("models", "all-minilm-l6-v2-onnx")
    return FastEmbedEmbedder("sentence-transformers/all-MiniLM-L6-v2", folder)


@pytest.mark.parametrize(("query", "question", "top", "p_top"), CASES)
async def test_minilm_relation_hops(
    minilm: FastEmbedEmbedder, query: str, question: ChoiceQuestion, top: str, p_top: float
) -> None:
    local = LocalDecisionBackend(minilm)
    assert (
        local.model_id
        == "local:fastembed:sentence-transformers/all-MiniLM-L6-v2:t=0.05:gain+0.05:natural:w=0.5"
    )
    request = DecisionRequest(state=P.build_state(query), questions=[question])
    result = (await local.decide(request)).results["b0"]
    assert result.top == top
    assert result.probabilities[top] == pytest.approx(p_top, abs=2e-3)
    again = (await LocalDecisionBackend(minilm).decide(request)).results["b0"]
    assert again.probabilities == pytest.approx(result.probabilities, abs=1e-6)


async def test_minilm_answer_type_hint_raises_stop_on_matching_nodes(minilm: FastEmbedEmbedder) -> None:
    _, question, _, _ = CASES[3]
    assert isinstance(question.instructions, dict)
    probs = {}
    for hint in ("person", "film"):
        hinted = question.model_copy(
            update={"instructions": {**question.instructions, "expected_answer_type": hint}}
        )
        request = DecisionRequest(state=P.build_state("who directed Memento"), questions=[hinted])
        probs[hint] = (await LocalDecisionBackend(minilm).decide(request)).results["b0"].probabilities["STOP"]
    assert probs["person"] == pytest.approx(0.9477, abs=2e-3)
    assert probs["film"] == pytest.approx(0.8659, abs=2e-3)
