"""An offline decision backend: cosine similarity of embeddings, calibrated by a softmax.

Texts
    *question*: the state plus the instructions, without the context fields and boilerplate keys.
    *context*: the instructions' context fields (default ``path`` and ``current``): where the walk is.
    *move*: an option's description flattened to text (its label when it has none). With
    ``option_style="natural"`` (default) a relation move that walks the previous hop back (same
    relation, other direction, read from the engine's ``path``) reads "other ones with the same
    <relation>": it reaches siblings of the previous set, which only "same ..." questions want.

STOP rule (``stop_rule``), for options whose label is in ``stop_labels``:
    ``"gain"`` (default): a move scores ``cos(question, context + move)`` and STOP scores
    ``cos(question, context)``: the walk stops when no move brings the context closer to the
    question. Without context fields it falls back to ``"description"``.
    ``"description"``: STOP is an ordinary option, scored by ``cos(question, its description)``.
    ``"fixed"``: STOP scores 0; moves score ``cos(question, move)``.
    Under every rule ``stop_bias`` is added to STOP's score (positive: stop more readily).

Answer type (``type_weight``): when the instructions carry the engine's expected answer type
(``expected_answer_type``), every option also scores ``type_weight * cos(type, names)``, where the
names are the nodes it stands for: STOP the current nodes, a move the nodes it leads to. The walk
then prefers to stop on, and move toward, nodes that look like the expected answer.

Composition (``compose``): ``"text"`` (default) embeds each compared text whole, so every
``context; move`` pair is a new text at every step. ``"parts"`` embeds the pieces (the context, the
relation phrase, each field of the move: node name, type, ...) and compares the question with their
word-weighted mean, ``normalize(w_c v(context) + w_m normalize(sum of w_p v(part))))`` (``w``: words in
a text or group; mean pooling weighs a concatenated text's pieces by length): pieces recur across steps and
questions (node names are the graph's own, see ``traversal.name_vectors``), so a step embeds about
one new text (its context) instead of one per option. Per-node free text that never recurs
(``unique_keys``, default ``summary``) is left out of the parts: embedding it would cost one new text
per option again.

The scores become a distribution with ``softmax(score / temperature)``. Deterministic given the
embedder; every distinct text is embedded at most once per call and cached by content (LRU).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from typing import Any, Literal, TypeAlias

import numpy as np

from graphwalk_core.decisions import prompt_keys as pk
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
from graphwalk_core.decisions.views import PATH_STEP_TEXT, relation_phrase
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings

StopRule = Literal["gain", "description", "fixed"]
STOP_RULES: tuple[str, ...] = ("gain", "description", "fixed")
OptionStyle = Literal["natural", "flat"]
OPTION_STYLES: tuple[str, ...] = ("natural", "flat")
Compose = Literal["text", "parts"]
COMPOSE_MODES: tuple[str, ...] = ("text", "parts")
#: A compared vector: the word-weighted mean of its groups, each the word-weighted mean of its texts'
#: vectors (see ``target_vector``); one text in one group is that text's own vector.
Target: TypeAlias = tuple[tuple[str, ...], ...]
#: Per option: the vector its score compares with the question (None: no similarity), an additive bias
#: and the names it stands for (compared with the expected answer type; None: no type term).
Plan: TypeAlias = list[tuple[Target | None, float, str | None]]
#: The engine's instructions key holding the expected answer type (``traversal.prompts``).
DEFAULT_TYPE_KEY = pk.EXPECTED_ANSWER_TYPE

#: Keys whose values are boilerplate or noise for similarity (dropped when flattening): the task text,
#: the start names (the query names them already), edge direction and counts, the edge string (it
#: repeats relation and node) and example lists (target names dilute a relation's meaning).
DEFAULT_SKIP_KEYS = frozenset({pk.TASK, pk.START, pk.DIRECTION, pk.COUNT, pk.EDGE, pk.LEADS_TO, pk.EXAMPLES})
DEFAULT_CONTEXT_KEYS = (pk.PATH, pk.CURRENT)
#: Option fields left out under ``compose="parts"``: free text unique to one node.
DEFAULT_UNIQUE_KEYS = frozenset({pk.SUMMARY})


def flatten_text(value: Any, skip_keys: Collection[str] = ()) -> str:
    """JSON content as plain text: values only (keys in ``skip_keys`` dropped), ``_`` read as a space."""
    return "; ".join(flatten_parts(value, skip_keys))


def flatten_parts(value: Any, skip_keys: Collection[str] = ()) -> list[str]:
    """The values of JSON content as texts, in order (keys in ``skip_keys`` dropped; ``_`` -> space)."""
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
                parts.append(text.replace("_", " "))

    walk(value)
    return parts


def last_step(instructions: Any) -> tuple[str, str] | None:
    """(relation, direction) of the walk's last hop from the instructions' ``path``, if it reads as one."""
    path = instructions.get(pk.PATH) if isinstance(instructions, dict) else None
    if not isinstance(path, list) or not path:
        return None
    match = PATH_STEP_TEXT.match(str(path[-1]))
    return (match["relation"], match["direction"]) if match else None


def current_names(instructions: Any) -> str:
    """The walk's current node name(s) from engine instructions (``current.node``/``examples``)."""
    here = instructions.get(pk.CURRENT) if isinstance(instructions, dict) else None
    if not isinstance(here, dict):
        return ""
    return flatten_text(here.get(pk.NODE) or here.get(pk.EXAMPLES))


def option_names(description: Any) -> str:
    """The node name(s) a move leads to (``node`` or ``leads_to`` of an engine option)."""
    if not isinstance(description, dict):
        return ""
    return flatten_text(description.get(pk.NODE) or description.get(pk.LEADS_TO))


def target_vector(target: Target, vecs: dict[str, np.ndarray]) -> np.ndarray:
    """The vector of a ``Target``: one text's own vector, else ``normalize(sum_g w_g u_g)`` with
    ``u_g = normalize(sum_t w_t v_t)`` over the group's texts and ``w`` the words in a text or group."""
    if len(target) == 1 and len(target[0]) == 1:
        return vecs[target[0][0]]
    total = np.zeros_like(vecs[target[0][0]])
    for group in target:
        weights = [max(len(t.split()), 1) for t in group]
        total += sum(weights) * _unit(
            np.sum([w * vecs[t] for w, t in zip(weights, group, strict=True)], axis=0)
        )
    return _unit(total)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


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
        stop_bias: float = 0.05,
        option_style: OptionStyle = "natural",
        compose: Compose = "text",
        type_weight: float = 0.5,
        type_key: str = DEFAULT_TYPE_KEY,
        stop_labels: Collection[str] = ("STOP",),
        context_keys: Iterable[str] = DEFAULT_CONTEXT_KEYS,
        skip_keys: Collection[str] = DEFAULT_SKIP_KEYS,
        unique_keys: Collection[str] = DEFAULT_UNIQUE_KEYS,
        max_options: int = 255,
        cache_size: int = 50_000,
    ) -> None:
        if not temperature > 0:
            raise ConfigError(f"local decider temperature must be > 0, got {temperature}")
        if stop_rule not in STOP_RULES:
            raise ConfigError(f"unknown stop_rule {stop_rule!r}: expected one of {list(STOP_RULES)}")
        if option_style not in OPTION_STYLES:
            raise ConfigError(f"unknown option_style {option_style!r}: expected one of {list(OPTION_STYLES)}")
        if compose not in COMPOSE_MODES:
            raise ConfigError(f"unknown compose {compose!r}: expected one of {list(COMPOSE_MODES)}")
        self.option_style: OptionStyle = option_style
        self.compose: Compose = compose
        self.type_weight = float(type_weight)
        self.type_key = type_key
        self.embedder = embedder
        self.temperature = float(temperature)
        self.stop_rule: StopRule = stop_rule
        self.stop_bias = float(stop_bias)
        self.stop_labels = frozenset(stop_labels)
        self.context_keys = tuple(context_keys)
        self.skip_keys = frozenset(skip_keys)
        self.unique_keys = frozenset(unique_keys)
        self._max_options = max_options
        #: this decider's own texts; None: the embedder is a pool that keeps every vector already
        self.cache: VectorCache | None = VectorCache(cache_size)

    @property
    def model_id(self) -> str:
        """The embedder and every calibration knob, so results of differently tuned runs never mix."""
        return (
            f"local:{self.embedder.model_id}:t={self.temperature:g}:{self.stop_rule}{self.stop_bias:+g}"
            f":{self.option_style}:w={self.type_weight:g}" + self._compose_id
        )

    @property
    def _compose_id(self) -> str:
        """``:parts`` (with the unique keys when not the default ones), nothing for ``text``."""
        if self.compose != "parts":
            return ""
        return (
            ":parts"
            if self.unique_keys == DEFAULT_UNIQUE_KEYS
            else f":parts:u={','.join(sorted(self.unique_keys))}"
        )

    @classmethod
    def from_settings(cls, embedder: Embedder, settings: GraphwalkSettings) -> LocalDecisionBackend:
        """A backend configured by every ``GRAPHWALK_LOCAL_*`` setting."""
        return cls(
            embedder,
            temperature=settings.local_temperature,
            stop_rule=settings.local_stop_rule,
            stop_bias=settings.local_stop_bias,
            option_style=settings.local_option_style,
            compose=settings.local_compose,
            type_weight=settings.local_type_weight,
        )

    @property
    def max_options(self) -> int:
        return self._max_options

    def __repr__(self) -> str:
        return f"LocalDecisionBackend({self.model_id!r})"

    def _split(self, question: ChoiceQuestion, state: JSONContent) -> tuple[str, str]:
        """(question text, context text) for one question."""
        instr = question.instructions
        context = ""
        if isinstance(instr, dict):
            context = flatten_text([instr.get(k) for k in self.context_keys], self.skip_keys)
            instr = {k: v for k, v in instr.items() if k not in self.context_keys}
        text = flatten_text([state, instr], self.skip_keys)
        return text, context

    def _type_hint(self, question: ChoiceQuestion) -> str | None:
        """The expected answer type from the instructions, when the type term is on."""
        instr = question.instructions
        if self.type_weight == 0 or not isinstance(instr, dict):
            return None
        hint = flatten_text(instr.get(self.type_key))
        return hint or None

    def _plan(self, question: ChoiceQuestion, state: JSONContent) -> tuple[str, str | None, Plan]:
        """The question text, the answer-type hint and the per-option plan (see ``Plan``)."""
        if len(question.options) > self._max_options:
            raise DecisionError(
                f"question {question.key!r}: {len(question.options)} options exceed the limit "
                f"of {self._max_options}"
            )
        text, context = self._split(question, state)
        rule = "description" if self.stop_rule == "gain" and not context else self.stop_rule
        plan: Plan = []
        previous = last_step(question.instructions)
        hint = self._type_hint(question)
        for label, description in question.options.items():
            move = self._move_parts(label, description, previous)
            if label in self.stop_labels:
                target = {"gain": self._target(context), "description": self._target(*move), "fixed": None}
                names = (current_names(question.instructions) or None) if hint else None
                plan.append((target[rule], self.stop_bias, names))
            else:
                names = (option_names(description) or None) if hint else None
                plan.append((self._target(*move, context=context if rule == "gain" else None), 0.0, names))
        return text, hint, plan

    def _target(self, *move: str, context: str | None = None) -> Target:
        """The compared vector of a move (its parts) after an optional context (see ``compose``)."""
        if self.compose == "parts":
            return ((context,), move) if context is not None else (move,)
        joined = "; ".join(move)
        return ((f"{context}; {joined}" if context is not None else joined,),)

    def _move_parts(
        self, label: str, description: JSONContent | None, previous: tuple[str, str] | None
    ) -> tuple[str, ...]:
        """An option as texts: a relation move as words (``natural``), then its description's values."""
        if (
            self.option_style == "natural"
            and isinstance(description, dict)
            and isinstance(description.get(pk.RELATION), str)
            and description.get(pk.DIRECTION) in ("out", "in")
        ):
            rest = {key: v for key, v in description.items() if key != pk.RELATION}
            phrase = relation_phrase(description[pk.RELATION], description[pk.DIRECTION], previous)
            return (phrase, *flatten_parts(rest, self._option_skip))
        return tuple(flatten_parts(description, self._option_skip)) or (label.replace("_", " "),)

    @property
    def _option_skip(self) -> frozenset[str]:
        """Keys left out of an option's texts: ``skip_keys``, and ``unique_keys`` under ``parts``."""
        return self.skip_keys | self.unique_keys if self.compose == "parts" else self.skip_keys

    def _answer(
        self, question: ChoiceQuestion, text: str, hint: str | None, plan: Plan, vecs: dict[str, np.ndarray]
    ) -> ChoiceResult:
        q = vecs[text]
        scores = np.zeros(len(plan))
        for i, (target, bias, names) in enumerate(plan):
            scores[i] = bias + (float(np.dot(q, target_vector(target, vecs))) if target is not None else 0.0)
            if hint is not None and names:
                scores[i] += self.type_weight * float(np.dot(vecs[hint], vecs[names]))
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
        wanted = (
            t
            for text, hint, plan in plans
            for t in (
                text,
                hint,
                *(t for target, _, _ in plan for group in target or () for t in group),
                *(names for _, _, names in plan),
            )
        )
        texts = list(dict.fromkeys(t for t in wanted if t is not None))
        if self.cache is None:
            matrix = self.embedder.embed(texts)
        else:
            matrix = self.cache.embed_through(texts, self.embedder.dim, self.embedder.embed)
        vecs = dict(zip(texts, matrix, strict=True))
        results = {
            q.key: self._answer(q, text, hint, plan, vecs)
            for q, (text, hint, plan) in zip(request.questions, plans, strict=True)
        }
        return DecisionResponse(
            results=results,
            usage=Usage(),
            latency_s=time.perf_counter() - started,
            model=self.model_id,
            provider="local",
        )
