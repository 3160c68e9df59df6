"""Exact values for the pure modules: scoring, sampling, batching, config."""

from __future__ import annotations

import math
import random

import pytest

from graphwalk_core.decisions.base import ChoiceQuestion
from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.traversal.batching import estimate_tokens, question_tokens, split_batches
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.sampling import (
    apply_temperature,
    apply_top_p,
    draw,
    used_distribution,
    walk_rng,
)
from graphwalk_core.traversal.scoring import Beam, normalized_score, rank_walks, step_logp

from .conftest import printed_by_hash_seed


def test_step_logp_floors_small_probabilities() -> None:
    assert step_logp(0.5, 1e-3) == math.log(0.5)
    assert step_logp(0.0, 1e-3) == math.log(1e-3)
    assert step_logp(0.0004, 1e-3) == math.log(1e-3)
    assert step_logp(1.0, 1e-3) == 0.0


@pytest.mark.parametrize(("alpha", "expected"), [(0.0, -2.0), (1.0, -0.5), (0.5, -1.0)])
def test_length_normalization(alpha: float, expected: float) -> None:
    assert normalized_score(-2.0, 4, alpha, 1e-3) == expected


def test_walk_without_real_choices_scores_floor() -> None:
    assert normalized_score(0.0, 0, 1.0, 1e-3) == math.log(1e-3)
    # a forced STOP is a decision (p = 1) but not a choice: still the lowest score
    assert normalized_score(0.0, 1, 1.0, 1e-3, n_choices=0) == math.log(1e-3)
    assert normalized_score(0.0, 1, 1.0, 1e-3, n_choices=1) == 0.0


def test_beam_records_decisions_and_confidence() -> None:
    beam = Beam(id=0, parent=None)
    assert beam.record_decision(0.5, 1e-3, 0.4) == math.log(0.5)
    assert beam.record_decision(0.0, 1e-3, 0.9) == math.log(1e-3)
    beam.record_decision(1.0, 1e-3, None, forced=True)
    assert (beam.n_decisions, beam.n_choices, beam.min_confidence) == (3, 2, 0.4)
    assert beam.score(1.0, 1e-3) == (math.log(0.5) + math.log(1e-3)) / 3
    assert beam.score(0.0, 1e-3) == math.log(0.5) + math.log(1e-3)


def test_rank_puts_ended_walks_first_then_score() -> None:
    beams = []
    for i, lp in enumerate([-1.0, -0.5, -1.0, -0.1]):
        b = Beam(id=i, parent=None)
        b.record_decision(math.exp(lp), 1e-3, None)
        beams.append(b)
    beams[3].terminated_by = "max_depth"
    beams[0].finish("stop")
    beams[1].finish("dead_end")
    beams[2].finish("stop")
    assert [b.id for b in rank_walks(beams, 1.0, 1e-3)] == [1, 0, 2, 3]


def test_temperature() -> None:
    dist = {"a": 0.6, "b": 0.3, "c": 0.1}
    assert apply_temperature(dist, 1.0) == dist
    sharp = apply_temperature(dist, 0.5)
    assert sharp == pytest.approx({"a": 0.36 / 0.46, "b": 0.09 / 0.46, "c": 0.01 / 0.46}, abs=1e-12)
    flat = apply_temperature(dist, 2.0)
    total = math.sqrt(0.6) + math.sqrt(0.3) + math.sqrt(0.1)
    assert flat["a"] == pytest.approx(math.sqrt(0.6) / total, abs=1e-12)
    # T = 0: argmax, ties by offer order
    assert apply_temperature({"x": 0.4, "y": 0.4, "z": 0.2}, 0.0) == {"x": 1.0, "y": 0.0, "z": 0.0}


def test_low_temperature_keeps_the_mass_of_the_most_probable_labels() -> None:
    # p ** (1 / T) underflowed to 0 for every label (60 equal options at T = 0.004, or p = 1e-200 at
    # T = 0.5): the walk ended with ZeroDivisionError; now the powers are taken relative to the maximum
    uniform = {f"o{i}": 1 / 60 for i in range(60)}
    assert apply_temperature(uniform, 0.004) == uniform
    assert apply_temperature({"a": 0.02, "b": 0.01, "STOP": 0.97}, 0.004) == {"a": 0.0, "b": 0.0, "STOP": 1.0}
    assert apply_temperature({"a": 1e-200, "b": 0.0}, 0.5) == {"a": 1.0, "b": 0.0}


def test_top_p() -> None:
    dist = {"a": 0.2, "b": 0.5, "c": 0.3}
    assert apply_top_p(dist, 0.8) == pytest.approx({"a": 0.0, "b": 0.625, "c": 0.375}, abs=1e-12)
    assert apply_top_p(dist, 0.5) == {"a": 0.0, "b": 1.0, "c": 0.0}
    assert apply_top_p(dist, 1.0) == dist
    # ties keep offer order: the first of two equal labels enters the nucleus
    assert apply_top_p({"x": 0.4, "y": 0.4, "z": 0.2}, 0.3) == {"x": 1.0, "y": 0.0, "z": 0.0}
    # temperature then top-p
    assert used_distribution(dist, 0.0, 0.9) == {"a": 0.0, "b": 1.0, "c": 0.0}


def test_top_p_renormalizes_alike_under_every_hash_seed() -> None:
    # the nucleus is a set of labels: its mass was summed in set order, which PYTHONHASHSEED changes,
    # so the probabilities a sampled walk records (and draws from) varied in their last bits
    program = (
        "from graphwalk_core.traversal.sampling import apply_top_p\n"
        "print(apply_top_p({'o1': 0.1, 'o2': 0.2, 'o3': 0.3, 'o4': 0.35, 'STOP': 0.05}, 0.99))"
    )
    assert printed_by_hash_seed(program) == {"{'o1': 0.1, 'o2': 0.2, 'o3': 0.3, 'o4': 0.35, 'STOP': 0.05}\n"}


def test_draw_and_walk_rng_are_deterministic() -> None:
    dist = {"a": 0.25, "b": 0.0, "c": 0.75}
    rng = random.Random(1)  # first random() = 0.134...
    assert draw(dist, rng) == "a"
    assert draw(dist, random.Random(2)) == "c"  # 0.956...
    r1, r2 = walk_rng(7, "q", 0), walk_rng(7, "q", 0)
    assert [r1.random() for _ in range(3)] == [r2.random() for _ in range(3)]
    assert walk_rng(7, "q", 0).random() != walk_rng(7, "q", 1).random()
    assert walk_rng(7, "q", 0).random() != walk_rng(7, "other", 0).random()


def _q(key: str, chars: int) -> ChoiceQuestion:
    return ChoiceQuestion(key=key, instructions="x" * chars, options={"o1": None, "STOP": None})


def test_token_estimate_is_compact_json_at_3_chars_with_margin() -> None:
    assert estimate_tokens("abc") == 2  # '"abc"' = 5 chars -> ceil(5 / 3 * 1.2) = 2
    assert estimate_tokens({"query": "x" * 28}) == 16  # 40 chars -> 16
    q = _q("b0", 10)
    wire = '{"b0":{"type":"choice","instructions":"xxxxxxxxxx","criteria":{"o1":null,"STOP":null}}}'
    assert question_tokens(q) == math.ceil(len(wire) / 3 * 1.2)


def test_split_batches_respects_request_and_single_limits() -> None:
    state = {"query": "x" * 28}  # 16 tokens
    qs = [_q(f"b{i}", 200) for i in range(5)]
    cost = question_tokens(qs[0])
    assert cost == 111  # 277 chars of wire JSON
    assert [len(b) for b in split_batches(state, qs)] == [5]
    # room for 2 questions per call: 16 + 2 * 111 = 238
    batches = split_batches(state, qs, request_limit=238, single_limit=1000)
    assert [[q.key for q in b] for b in batches] == [["b0", "b1"], ["b2", "b3"], ["b4"]]
    assert [len(b) for b in split_batches(state, qs, per_beam=True)] == [1, 1, 1, 1, 1]
    with pytest.raises(
        InputError,
        match=r"^question 'b0' needs ~127 tokens \(16 of them the query\), over the "
        r"126-token limit for the query and one question \(lower prefilter_top_n\)$",
    ):
        split_batches(state, qs, single_limit=126)


def test_config_validation() -> None:
    assert TraversalConfig().width == 1
    assert TraversalConfig(strategy="beam", beam_width=5).width == 5
    assert TraversalConfig(strategy="sample", n_samples=7).width == 7
    with pytest.raises(ValueError, match="prefilter_top_n"):
        TraversalConfig(prefilter_threshold=10, prefilter_top_n=20)
    with pytest.raises(ValueError):
        TraversalConfig(strategy="bfs")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_options - 1"):
        TraversalConfig(prefilter_top_n=30).check_backend(30)
    TraversalConfig(prefilter_top_n=29).check_backend(30)
