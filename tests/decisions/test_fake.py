"""FakeDecisionBackend: scripting, seeded draws independent of call order, failures, usage."""

from __future__ import annotations

import pytest

from graphwalk_core.decisions import (
    ChoiceQuestion,
    DecisionBackend,
    DecisionError,
    DecisionRequest,
    FakeDecisionBackend,
)
from graphwalk_core.decisions.fake import dirichlet_draw

Q1 = ChoiceQuestion(key="b0", instructions="next hop", options={"o1": "a", "o2": "b", "STOP": "stop"})
Q2 = ChoiceQuestion(key="b1", instructions={"path": ["x"]}, options={"o1": "c", "o2": "d"})


def req(*qs: ChoiceQuestion, state: str = "who directed Memento?") -> DecisionRequest:
    return DecisionRequest(state=state, questions=list(qs))


async def test_protocol_and_identity() -> None:
    fake = FakeDecisionBackend(seed=7)
    assert isinstance(fake, DecisionBackend)
    assert fake.model_id == "fake:seed=7"
    assert fake.max_options == 255


async def test_script_callable_normalizes_and_records() -> None:
    def script(q: ChoiceQuestion, state: object) -> dict[str, float] | None:
        return {"o1": 3.0, "o2": 1.0} if q.key == "b0" else None

    fake = FakeDecisionBackend(seed=1, script=script)
    resp = await fake.decide(req(Q1, Q2))
    r0 = resp.results["b0"]
    assert r0.probabilities == {"o1": 0.75, "o2": 0.25, "STOP": 0.0}
    assert list(r0.probabilities) == ["o1", "o2", "STOP"]
    assert r0.top == "o1"
    assert r0.confidence == pytest.approx((3 * 0.75 - 1) / 2)
    assert resp.results["b1"].probabilities == dirichlet_draw(1, Q2, "who directed Memento?", 1.0)
    assert resp.usage.input_tokens == 200
    assert resp.usage.output_tokens == 20
    assert resp.usage.cost_usd is None
    assert resp.latency_s == 0.0
    assert resp.model == "fake:seed=1"
    assert fake.calls == 1
    assert fake.requests[0].questions == [Q1, Q2]
    assert fake.questions == [Q1, Q2]


async def test_script_mapping_by_question_key() -> None:
    fake = FakeDecisionBackend(script={"b1": {"o2": 1.0}})
    resp = await fake.decide(req(Q2))
    assert resp.results["b1"].probabilities == {"o1": 0.0, "o2": 1.0}
    assert resp.results["b1"].top == "o2"


async def test_script_unknown_label_is_error() -> None:
    fake = FakeDecisionBackend(script={"b1": {"zz": 1.0}})
    with pytest.raises(DecisionError, match="not offered: \\['zz'\\]"):
        await fake.decide(req(Q2))


async def test_unscripted_draw_is_independent_of_call_order_and_seeded() -> None:
    a, b = FakeDecisionBackend(seed=3), FakeDecisionBackend(seed=3)
    ra1 = (await a.decide(req(Q1))).results["b0"]
    ra2 = (await a.decide(req(Q2))).results["b1"]
    rb2 = (await b.decide(req(Q2))).results["b1"]
    rb1 = (await b.decide(req(Q1))).results["b0"]
    assert ra1 == rb1
    assert ra2 == rb2
    assert sum(ra1.probabilities.values()) == pytest.approx(1.0)
    other_seed = (await FakeDecisionBackend(seed=4).decide(req(Q1))).results["b0"]
    assert other_seed.probabilities != ra1.probabilities
    other_state = (await FakeDecisionBackend(seed=3).decide(req(Q1, state="x"))).results["b0"]
    assert other_state.probabilities != ra1.probabilities


def test_dirichlet_draw_exact_values() -> None:
    draw = dirichlet_draw(0, Q2, "s", 1.0)
    assert draw == {"o1": pytest.approx(0.4459360400614343), "o2": pytest.approx(0.5540639599385657)}
    assert list(draw) == ["o1", "o2"]


async def test_fail_after_and_raise_on() -> None:
    fake = FakeDecisionBackend(fail_after=1)
    await fake.decide(req(Q1))
    with pytest.raises(DecisionError, match="fail after 1 call"):
        await fake.decide(req(Q1))
    assert fake.calls == 2

    keyed = FakeDecisionBackend(raise_on={"b1"})
    await keyed.decide(req(Q1))
    with pytest.raises(DecisionError, match="'b1'"):
        await keyed.decide(req(Q1, Q2))

    pred = FakeDecisionBackend(raise_on=lambda q: "STOP" in q.options)
    await pred.decide(req(Q2))
    with pytest.raises(DecisionError, match="'b0'"):
        await pred.decide(req(Q1))


async def test_too_many_options_and_bad_args() -> None:
    fake = FakeDecisionBackend(max_options=2)
    with pytest.raises(DecisionError, match="3 options exceed the limit of 2"):
        await fake.decide(req(Q1))
    with pytest.raises(ValueError, match="alpha"):
        FakeDecisionBackend(alpha=0)
    with pytest.raises(ValueError, match="fail_after"):
        FakeDecisionBackend(fail_after=-1)


def test_duplicate_question_keys_are_refused() -> None:
    with pytest.raises(ValueError, match=r"repeated: \['b0'\]"):
        DecisionRequest(state="s", questions=[Q1, Q1])
