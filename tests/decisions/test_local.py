"""LocalDecisionBackend: exact scores with a table embedder, STOP rules, caching, determinism."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from graphwalk_core.decisions import (
    ChoiceQuestion,
    DecisionBackend,
    DecisionError,
    DecisionRequest,
    LocalDecisionBackend,
    flatten_text,
)
from graphwalk_core.embeddings import HashingEmbedder
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings

QUERY = "who directed Memento"


class TableEmbedder:
    """Vectors from a fixed table (unknown texts are an error), recording every batch."""

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in table.items()}
        self.batches: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return "table"

    @property
    def dim(self) -> int:
        return 3

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.stack([self.table[t] for t in texts])


def softmax(scores: list[float], t: float) -> list[float]:
    exps = [math.exp(s / t) for s in scores]
    return [e / sum(exps) for e in exps]


def question(instructions: object = None, key: str = "b0") -> ChoiceQuestion:
    return ChoiceQuestion(
        key=key,
        instructions=instructions,
        options={
            "o1": {"relation": "directed_by", "direction": "out", "node": "Christopher Nolan"},
            "o2": {"relation": "release_year", "node": "2000"},
            "STOP": "stop here",
        },
    )


WALK_INSTRUCTIONS = {
    "task": "pick the next hop",
    "path": ["Memento"],
    "current": {"node": "Memento", "type": "movie"},
}


def test_flatten_text() -> None:
    assert flatten_text({"relation": "directed_by", "node": "X", "n": 3, "tags": ["a", None, "b"]}) == (
        "directed by; X; 3; a; b"
    )
    assert flatten_text({"task": "t", "edge": "e", "x": {"y": "z"}}, {"task", "edge"}) == "z"
    assert flatten_text(None) == ""
    assert flatten_text("plain_text") == "plain text"


async def test_gain_rule_exact_values() -> None:
    emb = TableEmbedder(
        {
            QUERY: [1, 0, 0],
            "Memento; Memento; movie": [0.6, 0.8, 0],
            "Memento; Memento; movie; directed by; Christopher Nolan": [0.8, 0.6, 0],
            "Memento; Memento; movie; release year; 2000": [0, 1, 0],
        }
    )
    local = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.0)
    req = DecisionRequest(state={"query": QUERY}, questions=[question(WALK_INSTRUCTIONS)])
    resp = await local.decide(req)
    r = resp.results["b0"]
    expected = softmax([0.8, 0.0, 0.6], 0.1)
    assert list(r.probabilities) == ["o1", "o2", "STOP"]
    assert [r.probabilities[k] for k in ("o1", "o2", "STOP")] == pytest.approx(expected, rel=1e-6)
    assert r.top == "o1"
    assert r.confidence == pytest.approx((3 * expected[0] - 1) / 2, rel=1e-6)
    assert resp.model == local.model_id == "local:table:t=0.1:gain+0:natural:w=0.5"
    assert (resp.usage.input_tokens, resp.usage.cost_usd) == (0, None)
    assert resp.provider == "local"

    biased = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.3)
    r2 = (await biased.decide(req)).results["b0"]
    assert [r2.probabilities[k] for k in ("o1", "o2", "STOP")] == pytest.approx(
        softmax([0.8, 0.0, 0.9], 0.1), rel=1e-6
    )
    assert r2.top == "STOP"


async def test_parts_composition_exact_values_and_reuses_pieces() -> None:
    ctx = "Memento; Memento; movie"
    emb = TableEmbedder(
        {
            QUERY: [1, 0, 0],
            ctx: [0, 1, 0],
            "directed by": [1, 0, 0],
            "Christopher Nolan": [0, 0, 1],
            "release year": [0, 1, 0],
            "2000": [0, 1, 0],
            "Inception; Inception; movie": [0, 0, 1],
        }
    )
    local = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.0, compose="parts")
    req = DecisionRequest(state={"query": QUERY}, questions=[question(WALK_INSTRUCTIONS)])
    r = (await local.decide(req)).results["b0"]
    # words: ctx 3, "directed by" 2, "Christopher Nolan" 2, "release year" 2, "2000" 1
    # o1: normalize(3 ctx + 4 normalize(2 [1,0,0] + 2 [0,0,1])) = [.5657, .6, .5657]; o2: [0, 1, 0]
    expected = softmax([0.4 * math.sqrt(2), 0.0, 0.0], 0.1)
    assert [r.probabilities[k] for k in ("o1", "o2", "STOP")] == pytest.approx(expected, rel=1e-6)
    assert emb.batches == [[QUERY, ctx, "directed by", "Christopher Nolan", "release year", "2000"]]
    assert local.model_id == "local:table:t=0.1:gain+0:natural:w=0.5:parts"
    # the same options from another node: only the new context is embedded (summaries are left out)
    here = {"node": "Inception", "type": "movie"}
    elsewhere = {**WALK_INSTRUCTIONS, "path": ["Inception"], "current": here}
    q2 = question(elsewhere)
    q2.options["o1"]["summary"] = "Nolan directed Inception."  # type: ignore[index]
    await local.decide(DecisionRequest(state={"query": QUERY}, questions=[q2]))
    assert emb.batches[1:] == [["Inception; Inception; movie"]]
    kept = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.0, compose="parts", unique_keys=())
    assert kept.model_id == "local:table:t=0.1:gain+0:natural:w=0.5:parts:u="
    with pytest.raises(ConfigError, match="unknown compose 'words'"):
        LocalDecisionBackend(emb, compose="words")  # type: ignore[arg-type]


async def test_description_and_fixed_rules_and_fallback() -> None:
    emb = TableEmbedder(
        {
            QUERY: [1, 0, 0],
            "directed by; Christopher Nolan": [0.6, 0.8, 0],
            "release year; 2000": [0, 0, 1],
            "stop here": [0.8, 0, 0.6],
        }
    )
    req = DecisionRequest(state=QUERY, questions=[question(WALK_INSTRUCTIONS)])
    by_description = LocalDecisionBackend(emb, stop_rule="description", temperature=0.2, stop_bias=0.0)
    desc = (await by_description.decide(req)).results["b0"]
    assert list(desc.probabilities.values()) == pytest.approx(softmax([0.6, 0.0, 0.8], 0.2), rel=1e-6)
    fixed = LocalDecisionBackend(emb, stop_rule="fixed", stop_bias=0.5, temperature=0.2)
    r = (await fixed.decide(req)).results["b0"]
    assert list(r.probabilities.values()) == pytest.approx(softmax([0.6, 0.0, 0.5], 0.2), rel=1e-6)
    # "gain" without context fields (plain-text instructions) falls back to "description".
    emb.table["who directed Memento; pick a hop"] = emb.table[QUERY]
    plain = DecisionRequest(state=QUERY, questions=[question("pick_a_hop")])
    r3 = (await LocalDecisionBackend(emb, temperature=0.2, stop_bias=0.0).decide(plain)).results["b0"]
    assert list(r3.probabilities.values()) == pytest.approx(softmax([0.6, 0.0, 0.8], 0.2), rel=1e-6)


async def test_each_text_embedded_once_per_call_and_cached_across_calls() -> None:
    emb = TableEmbedder(
        {
            QUERY: [1, 0, 0],
            "directed by; Christopher Nolan": [0, 1, 0],
            "release year; 2000": [0, 0, 1],
            "stop here": [1, 1, 0],
        }
    )
    local = LocalDecisionBackend(emb, stop_rule="description")
    req = DecisionRequest(state=QUERY, questions=[question(key="b0"), question(key="b1")])
    first = await local.decide(req)
    assert emb.batches == [[QUERY, "directed by; Christopher Nolan", "release year; 2000", "stop here"]]
    second = await local.decide(req)
    assert len(emb.batches) == 1  # all four texts came from the cache
    assert first.results == second.results
    assert first.results["b0"].probabilities == first.results["b1"].probabilities
    assert (local.cache.misses, local.cache.hits) == (4, 4)


async def test_hashing_embedder_is_deterministic_and_sensible() -> None:
    q = ChoiceQuestion(
        key="b0",
        instructions=WALK_INSTRUCTIONS,
        options={
            "o1": {"relation": "directed_by", "node": "Christopher Nolan"},
            "o2": {"relation": "release_year", "node": "2000"},
            "o3": {"relation": "starred_actors", "node": "Guy Pearce"},
            "STOP": "STOP: Memento is itself the answer",
        },
    )
    req = DecisionRequest(state={"query": "who directed Memento?"}, questions=[q])
    a = await LocalDecisionBackend(HashingEmbedder()).decide(req)
    b = await LocalDecisionBackend(HashingEmbedder()).decide(req)
    assert a.results == b.results
    assert a.results["b0"].top == "o1"
    assert sum(a.results["b0"].probabilities.values()) == pytest.approx(1.0)


async def test_contract_and_errors() -> None:
    local = LocalDecisionBackend(HashingEmbedder(), max_options=2)
    assert isinstance(local, DecisionBackend)
    assert local.max_options == 2
    assert local.model_id == "local:hashing:256:t=0.05:gain+0.05:natural:w=0.5"
    with pytest.raises(DecisionError, match="'b0': 3 options exceed the limit of 2"):
        await local.decide(DecisionRequest(state="s", questions=[question()]))
    with pytest.raises(ConfigError, match="temperature must be > 0, got 0"):
        LocalDecisionBackend(HashingEmbedder(), temperature=0)
    with pytest.raises(ConfigError, match="unknown stop_rule 'never'"):
        LocalDecisionBackend(HashingEmbedder(), stop_rule="never")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown option_style 'prose'"):
        LocalDecisionBackend(HashingEmbedder(), option_style="prose")  # type: ignore[arg-type]


def relation_hop(path: list[str], current: list[str], hint: str | None = None) -> ChoiceQuestion:
    """A relation-mode question as the engine builds it (two moves and STOP)."""
    instructions: dict[str, object] = {
        "task": "pick a relation",
        "path": path,
        "current": {"count": len(current), "examples": current},
    }
    if hint is not None:
        instructions["expected_answer_type"] = hint
    return ChoiceQuestion(
        key="b0",
        instructions=instructions,
        options={
            "o1": {"relation": "directed_by", "direction": "in", "leads_to": ["Insomnia"], "count": 1},
            "o2": {"relation": "release_year", "direction": "out", "leads_to": ["2000"], "count": 1},
            "STOP": "stop",
        },
    )


async def test_natural_style_reads_a_reversed_hop_as_same() -> None:
    emb = TableEmbedder(
        {
            QUERY: [1, 0, 0],
            "directed by (out)": [0.8, 0.6, 0],
            "directed by (out); other ones with the same directed by": [0.6, 0.8, 0],
            "directed by (out); release year": [0, 1, 0],
            "directed by (out); directed by": [1, 0, 0],
        }
    )
    req = DecisionRequest(state=QUERY, questions=[relation_hop(["directed_by (out)"], ["Christopher Nolan"])])
    natural = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.0)
    r = (await natural.decide(req)).results["b0"]
    assert list(r.probabilities.values()) == pytest.approx(softmax([0.6, 0.0, 0.8], 0.1), rel=1e-6)
    assert r.top == "STOP"
    flat = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.0, option_style="flat")
    r2 = (await flat.decide(req)).results["b0"]
    assert list(r2.probabilities.values()) == pytest.approx(softmax([1.0, 0.0, 0.8], 0.1), rel=1e-6)
    assert r2.top == "o1"
    # a path that is not the engine's "relation (direction)" form: no reversal is read
    other = DecisionRequest(state=QUERY, questions=[relation_hop(["Memento --directed_by--> X"], ["X"])])
    emb.table["Memento --directed by--> X"] = emb.table[QUERY]
    emb.table["Memento --directed by--> X; directed by"] = emb.table[QUERY]
    emb.table["Memento --directed by--> X; release year"] = emb.table[QUERY]
    r3 = (await natural.decide(other)).results["b0"]
    assert list(r3.probabilities.values()) == pytest.approx([1 / 3] * 3, rel=1e-6)


async def test_answer_type_term_exact_values() -> None:
    emb = TableEmbedder(
        {
            f"{QUERY}; person": [1, 0, 0],
            "year (out)": [0.6, 0.8, 0],
            "year (out); directed by": [0.6, 0.8, 0],
            "year (out); release year": [0.6, 0.8, 0],
            "person": [0, 0, 1],
            "Christopher Nolan": [0, 0.6, 0.8],
            "Insomnia": [0, 1, 0],
            "2000": [0, 0.8, 0.6],
        }
    )
    req = DecisionRequest(
        state=QUERY, questions=[relation_hop(["year (out)"], ["Christopher Nolan"], hint="person")]
    )
    local = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.05, type_weight=0.5)
    r = (await local.decide(req)).results["b0"]
    # every text scores 0.6 with the question; the type term adds 0.5 * cos(person, names)
    expected = softmax([0.6 + 0.0, 0.6 + 0.5 * 0.6, 0.6 + 0.05 + 0.5 * 0.8], 0.1)
    assert list(r.probabilities.values()) == pytest.approx(expected, rel=1e-6)
    assert r.top == "STOP"
    off = LocalDecisionBackend(emb, temperature=0.1, stop_bias=0.05, type_weight=0.0)
    r2 = (await off.decide(req)).results["b0"]
    assert list(r2.probabilities.values()) == pytest.approx(softmax([0.6, 0.6, 0.65], 0.1), rel=1e-6)
    assert "person" not in [t for batch in emb.batches[1:] for t in batch]  # only embedded when used


def test_from_settings_uses_every_local_setting() -> None:
    settings = GraphwalkSettings(
        local_temperature=0.2,
        local_stop_rule="fixed",
        local_stop_bias=0.1,
        local_option_style="flat",
        local_type_weight=0.3,
        local_compose="parts",
    )
    local = LocalDecisionBackend.from_settings(HashingEmbedder(), settings)
    assert local.compose == "parts"
    assert (local.temperature, local.stop_rule, local.stop_bias, local.option_style, local.type_weight) == (
        0.2,
        "fixed",
        0.1,
        "flat",
        0.3,
    )
    assert repr(local) == "LocalDecisionBackend('local:hashing:256:t=0.2:fixed+0.1:flat:w=0.3:parts')"
    defaults = GraphwalkSettings()
    assert (defaults.local_stop_bias, defaults.local_option_style, defaults.local_type_weight) == (
        0.05,
        "natural",
        0.5,
    )
