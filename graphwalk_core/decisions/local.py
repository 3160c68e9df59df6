"""An offline decision backend: cosine similarity of embeddings, calibrated by a softmax.

Texts
    *question*: the state plus the instructions, without the context fields and boilerplate keys.
    *context*: the instructions' context fields (default ``path`` and ``current``): where the walk is.
    *move*: an option's description flattened to text (its label when it has none).

STOP rule (``stop_rule``), for options whose label is in ``stop_labels``:
    ``"gain"`` (default): a move scores ``cos(question, context + move)`` and STOP scores
    ``cos(question, context)``: the walk stops when no move brings the context closer to the
    question. Without context fields it falls back to ``"description"``.
    ``"description"``: STOP is an ordinary option, scored by ``cos(question, its description)``.
    ``"fixed"``: STOP scores 0; moves score ``cos(question, move)``.
    Under every rule ``stop_bias`` is added to STOP's score (positive: stop more readily).

The scores become a distribution with ``softmax(score / temperature)``. Deterministic given the
embedder; every distinct text is embedded at most once per call and cached by content (LRU).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from typing import Any, Literal, TypeAlias

import numpy as np

from graphwalk_core.decisions.base import (
    ChoiceQuestion,
    ChoiceResult,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    JSONContent,
    Usage,
    choice_confidence,
    normalize_distribution,
    top_label,
)
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.errors import ConfigError

StopRule = Literal["gain", "description", "fixed"]
STOP_RULES: tuple[str, ...] = ("gain", "description", "fixed")
OptionStyle = Literal["natural", "flat"]
OPTION_STYLES: tuple[str, ...] = ("natural", "flat")
#: Per option: the text its score compares with the question (None: no similarity), and a bias.
Plan: TypeAlias = list[tuple[str | None, float]]

#: Keys whose values are boilerplate or noise for similarity (dropped when flattening): the task text,
#: edge direction and counts, the edge string (it repeats relation and node) and example lists (target
#: names dilute a relation's meaning).
DEFAULT_SKIP_KEYS = frozenset({"task", "direction", "count", "edge", "leads_to", "examples"})
DEFAULT_CONTEXT_KEYS = ("path", "current")


def flatten_text(value: Any, skip_keys: Collection[str] = ()) -> str:
    """JSON content as plain text: values only (keys in ``skip_keys`` dropped), ``_`` read as a space."""
    parts: list[str] = []

    def walk(v: Any) -> None:
        if v is None:
            return
        if isinstance(v, dict):
            for k, item in v.items():
                if k not in skip_keys:
                    walk(item)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item)
        else:
            text = str(v).strip()
            if text:
                parts.append(text)

    walk(value)
    return "; ".join(parts).replace("_", " ")


def relation_phrase(relation: str, direction: str, subject: str, meaning: str = "") -> str:
    """A relation move as words: ``out`` -> "release year of Memento", ``in`` -> "things whose
    directed by is Christopher Nolan"; a gloss (``meaning``) is appended in parentheses."""
    words = relation.replace("_", " ").strip()
    phrase = f"{words} of {subject}" if direction == "out" else f"things whose {words} is {subject}"
    return f"{phrase} ({meaning})" if meaning else phrase


def current_subject(instructions: Any) -> str:
    """The walk's current node name(s) from engine instructions (``current.node``/``examples``)."""
    here = instructions.get("current") if isinstance(instructions, dict) else None
    if not isinstance(here, dict):
        return "it"
    if here.get("node"):
        return str(here["node"])
    examples = [str(e) for e in here.get("examples") or []]
    if not examples:
        return "them"
    return examples[0] if len(examples) == 1 else ", ".join(examples[:3])


def softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """``exp(s / T)`` normalized, computed stably."""
    z = scores / temperature
    z = np.exp(z - z.max())
    return z / z.sum()


class LocalDecisionBackend:
    """Answers choice questions by embedding similarity; no key, no network (see module doc)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        temperature: float = 0.05,
        stop_rule: StopRule = "gain",
        stop_bias: float = 0.0,
        option_style: OptionStyle = "natural",
        stop_labels: Collection[str] = ("STOP",),
        context_keys: Iterable[str] = DEFAULT_CONTEXT_KEYS,
        skip_keys: Collection[str] = DEFAULT_SKIP_KEYS,
        max_options: int = 255,
        cache_size: int = 50_000,
    ) -> None:
        if not temperature > 0:
            raise ConfigError(f"local decider temperature must be > 0, got {temperature}")
        if stop_rule not in STOP_RULES:
            raise ConfigError(f"unknown stop_rule {stop_rule!r}: expected one of {list(STOP_RULES)}")
        if option_style not in OPTION_STYLES:
            raise ConfigError(f"unknown option_style {option_style!r}: expected one of {list(OPTION_STYLES)}")
        self.option_style: OptionStyle = option_style
        self.embedder = embedder
        self.temperature = float(temperature)
        self.stop_rule: StopRule = stop_rule
        self.stop_bias = float(stop_bias)
        self.stop_labels = frozenset(stop_labels)
        self.context_keys = tuple(context_keys)
        self.skip_keys = frozenset(skip_keys)
        self._max_options = max_options
        self.cache = VectorCache(cache_size)

    @property
    def model_id(self) -> str:
        return f"local:{self.embedder.model_id}:t={self.temperature:g}"

    @property
    def max_options(self) -> int:
        return self._max_options

    def __repr__(self) -> str:
        return f"LocalDecisionBackend({self.model_id!r}, stop_rule={self.stop_rule!r})"

    def _split(self, question: ChoiceQuestion, state: JSONContent) -> tuple[str, str]:
        """(question text, context text) for one question."""
        instr = question.instructions
        context = ""
        if isinstance(instr, dict):
            context = flatten_text([instr.get(k) for k in self.context_keys], self.skip_keys)
            instr = {k: v for k, v in instr.items() if k not in self.context_keys}
        text = flatten_text([state, instr], self.skip_keys)
        return text, context

    def _plan(self, question: ChoiceQuestion, state: JSONContent) -> tuple[str, Plan]:
        """The question text and, per option, (text to compare with or None, additive bias)."""
        if len(question.options) > self._max_options:
            raise DecisionError(
                f"question {question.key!r}: {len(question.options)} options exceed the limit "
                f"of {self._max_options}"
            )
        text, context = self._split(question, state)
        rule = "description" if self.stop_rule == "gain" and not context else self.stop_rule
        plan: Plan = []
        subject = current_subject(question.instructions)
        for label, description in question.options.items():
            move = self._move_text(label, description, subject)
            if label in self.stop_labels:
                target = {"gain": context, "description": move, "fixed": None}[rule]
                plan.append((target, self.stop_bias))
            else:
                plan.append((f"{context}; {move}" if rule == "gain" else move, 0.0))
        return text, plan

    def _move_text(self, label: str, description: JSONContent | None, subject: str) -> str:
        """An option as text: a relation move as words (``natural``), else its flattened description."""
        if (
            self.option_style == "natural"
            and isinstance(description, dict)
            and isinstance(description.get("relation"), str)
            and description.get("direction") in ("out", "in")
        ):
            rest = {k: v for k, v in description.items() if k not in ("relation", "meaning")}
            phrase = relation_phrase(
                description["relation"],
                description["direction"],
                subject,
                "" if "meaning" in self.skip_keys else flatten_text(description.get("meaning")),
            )
            extra = flatten_text(rest, self.skip_keys)
            return f"{phrase}; {extra}" if extra else phrase
        return flatten_text(description, self.skip_keys) or label.replace("_", " ")

    def _answer(
        self, question: ChoiceQuestion, text: str, plan: Plan, vecs: dict[str, np.ndarray]
    ) -> ChoiceResult:
        q = vecs[text]
        scores = np.array(
            [(float(np.dot(q, vecs[target])) if target is not None else 0.0) + bias for target, bias in plan]
        )
        labels = list(question.options)
        probs = softmax(scores, self.temperature)
        raw = dict(zip(labels, probs.tolist(), strict=True))
        dist = normalize_distribution(labels, raw, key=question.key)
        return ChoiceResult(
            key=question.key, probabilities=dist, top=top_label(dist), confidence=choice_confidence(dist)
        )

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        started = time.perf_counter()
        plans = [self._plan(q, request.state) for q in request.questions]
        wanted = (t for text, plan in plans for t in (text, *(target for target, _ in plan)))
        texts = list(dict.fromkeys(t for t in wanted if t is not None))
        matrix = self.cache.embed_through(texts, self.embedder.dim, self.embedder.embed)
        vecs = dict(zip(texts, matrix, strict=True))
        results = {
            q.key: self._answer(q, text, plan, vecs)
            for q, (text, plan) in zip(request.questions, plans, strict=True)
        }
        return DecisionResponse(
            results=results,
            usage=Usage(),
            latency_s=time.perf_counter() - started,
            model=self.model_id,
            provider="local",
        )
