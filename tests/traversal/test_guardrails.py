"""Every budget abort, backend failures, and engine-owned safety against an adversarial decider."""

from __future__ import annotations

import pytest

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.traversal.config import Budget, TraversalConfig
from graphwalk_core.traversal.engine import Traverser

from .conftest import gold_path_script, graph

NOLAN_YEARS = gold_path_script([("directed_by", "in"), ("release_year", "out")])


async def nolan(store: MemoryGraphStore, budget: Budget, **kw):  # type: ignore[no-untyped-def]
    decider = FakeDecisionBackend(script=NOLAN_YEARS, **kw)
    config = TraversalConfig(hop_mode="relation", allow_stop_at_start=False, budget=budget)
    return await Traverser(store, decider, config=config).walk("years", ["Christopher Nolan"]), decider


async def test_max_decision_calls_checked_before_the_call(movies: MemoryGraphStore) -> None:
    result, decider = await nolan(movies, Budget(max_decision_calls=1))
    assert (result.status, decider.calls) == ("aborted", 1)
    assert result.abort_reason == "max_decision_calls: depth 1 needs 1 call(s), 1 of 1 used"
    top = result.answers[0]
    assert (top.node_ids, top.terminated_by) == (["Inception", "Memento"], "aborted")
    assert len(result.trace.steps) == 1


async def test_max_input_tokens_checked_after_the_call(movies: MemoryGraphStore) -> None:
    # the fake reports 100 input tokens per question: 100 after depth 0, 200 after depth 1
    result, decider = await nolan(movies, Budget(max_input_tokens=150))
    assert (result.status, decider.calls) == ("aborted", 2)
    assert result.abort_reason == "max_input_tokens: 200 > 150"
    assert result.answers[0].node_ids == ["2000", "2010"]
    assert result.trace.totals.input_tokens == 200


async def test_max_depth_ends_open_walks(movies: MemoryGraphStore) -> None:
    result, decider = await nolan(movies, Budget(max_depth=2))
    assert (result.status, result.terminated_by, decider.calls) == ("ok", "max_depth", 2)
    assert result.answers[0].node_ids == ["2000", "2010"]


async def test_max_expansions(movies: MemoryGraphStore) -> None:
    # depth 0 reads Nolan's adjacency; depth 1 reads Memento's, then Inception's is over budget
    result, _ = await nolan(movies, Budget(max_expansions=2))
    assert (result.status, result.abort_reason) == ("aborted", "max_expansions: 2 adjacency reads used")
    assert result.answers[0].node_ids == ["Inception", "Memento"]
    assert result.trace.totals.expansions == 2


async def test_max_nodes(movies: MemoryGraphStore) -> None:
    result, _ = await nolan(movies, Budget(max_nodes=2))
    assert (result.status, result.abort_reason) == ("aborted", "max_nodes: reached 3 > 2 nodes")
    assert result.answers[0].node_ids == ["Inception", "Memento"]


async def test_backend_failure_is_a_result_with_the_trace(movies: MemoryGraphStore) -> None:
    result, decider = await nolan(movies, Budget(), fail_after=1)
    assert result.status == "error"
    assert result.error == "DecisionError: fake backend told to fail after 1 call(s)"
    assert (decider.calls, len(result.trace.calls)) == (2, 1)
    assert result.answers[0].node_ids == ["Inception", "Memento"]
    assert result.answers[0].terminated_by == "error"


async def test_any_exception_from_decide_is_an_error_result(movies: MemoryGraphStore) -> None:
    def boom(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
        raise RuntimeError("socket closed")

    decider = FakeDecisionBackend(script=boom)
    result = await Traverser(movies, decider).walk("q", ["Avatar"])
    assert (result.status, result.error) == ("error", "RuntimeError: socket closed")
    assert result.answers[0].node_ids == ["Avatar"]


def never_stop(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
    """Adversarial: all mass on the first move, never STOP."""
    first = next(label for label in question.options if label != "STOP")
    return {label: 1.0 if label == first else 0.0 for label in question.options}


CYCLE = [("A", "r", "B"), ("B", "r", "C"), ("C", "r", "A")]


@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
@pytest.mark.parametrize("hop_mode", ["entity", "relation"])
async def test_adversarial_decider_on_a_cycle_terminates(strategy: str, hop_mode: str) -> None:
    decider = FakeDecisionBackend(script=never_stop)
    budget = Budget(max_depth=10_000, max_decision_calls=10_000, max_expansions=25)
    config = TraversalConfig(strategy=strategy, hop_mode=hop_mode, exclude_visited=False, budget=budget)  # type: ignore[arg-type]
    result = await Traverser(graph(CYCLE), decider, config=config).walk("q", ["A"])
    assert result.status == "aborted"
    assert result.abort_reason == "max_expansions: 25 adjacency reads used"
    assert result.answers and result.answers[0].node_ids[0] in {"A", "B", "C"}
    # the depth cap alone also ends it (default budget)
    config = TraversalConfig(strategy=strategy, hop_mode=hop_mode, exclude_visited=False)  # type: ignore[arg-type]
    result = await Traverser(graph(CYCLE), decider, config=config).walk("q", ["A"])
    assert result.status == "ok"
    # beams also keep (floored) STOP alternatives, which rank before walks cut off by the cap
    assert "max_depth" in {a.terminated_by for a in result.answers}
    assert len({s.depth for s in result.trace.steps}) == 4


async def test_visited_set_ends_an_adversarial_entity_walk() -> None:
    decider = FakeDecisionBackend(script=never_stop)
    result = await Traverser(graph(CYCLE), decider).walk("q", ["A"])
    top = result.answers[0]
    # A -> B -> C, then A and B are visited: a dead end, forced STOP
    assert (result.status, top.node_ids, top.terminated_by) == ("ok", ["C"], "dead_end")
    assert decider.calls == 2


async def test_a_self_loop_is_offered_once() -> None:
    # it came as two moves (out and in) showing the same edge, which took the mass of two options
    decider = FakeDecisionBackend()
    config = TraversalConfig(exclude_visited=False, budget=Budget(max_depth=1))
    await Traverser(graph([("A", "r", "A"), ("A", "r", "B")]), decider, config=config).walk("q", ["A"])
    options = decider.requests[0].questions[0].options
    assert [(o["edge"], o["direction"]) for label, o in options.items() if label != "STOP"] == [  # type: ignore[index]
        ("A --r--> A", "out"),
        ("A --r--> B", "out"),
    ]
