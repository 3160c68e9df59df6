"""What the decider sees: a shared state (the query only) and one literal, local question per walk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from graphwalk_core.decisions import prompt_keys as pk
from graphwalk_core.decisions.base import ChoiceQuestion
from graphwalk_core.model import Node

STOP = "STOP"
ANSWER_TYPE_KEY = "answer_type"

_ENTITY_TASK = (
    "You are walking a knowledge graph one hop at a time to answer the query in the state. "
    "Judge only this step: pick the edge from the current node that moves toward the answer, "
    "or STOP if the current node is itself an answer to the query."
)
_RELATION_TASK = (
    "You are walking a knowledge graph one relation at a time to answer the query in the state. "
    "Judge only this step: pick the relation to follow from the current node set, "
    "or STOP if the current node set is itself the answer to the query."
)
_ANSWER_TYPE_TASK = "Which type of entity is the answer to the query in the state?"


def build_state(query: str) -> dict[str, str]:
    """The shared state: the query only (Jev is weaker with large, irrelevant state)."""
    return {"query": query}


def stop_description(
    style: Literal["plain", "literal"], current: Sequence[str], total: int | None = None
) -> str:
    """The STOP option's description; ``total``: how many current nodes there are, when ``current`` names
    only the first of them."""
    if style == "plain":
        return "stop here: the current node answers the query"
    named = current[:3]
    more = (len(current) if total is None else total) - len(named)
    shown = ", ".join(named) + (f" and {more} more" if more > 0 else "")
    return f"STOP: {shown} is itself the answer to the query; take no further hop"


def edge_text(source: str, relation: str, target: str) -> str:
    """An edge in its stored direction: ``Memento --directed_by--> Christopher Nolan``."""
    return f"{source} --{relation}--> {target}"


def entity_option(
    relation: str,
    direction: Literal["out", "in"],
    current_name: str,
    node: Node,
    *,
    show_types: bool,
    glosses: dict[str, str],
) -> dict[str, Any]:
    """Description of moving along one edge to one neighbor (the edge shown as stored)."""
    source, target = (current_name, node.name) if direction == "out" else (node.name, current_name)
    option: dict[str, Any] = {
        pk.EDGE: edge_text(source, relation, target),
        pk.RELATION: relation,
        pk.DIRECTION: direction,
        pk.NODE: node.name,
    }
    if show_types:
        option[pk.TYPE] = node.type
    if node.summary:
        option[pk.SUMMARY] = node.summary
    if relation in glosses:
        option[pk.MEANING] = glosses[relation]
    return option


def relation_option(
    relation: str,
    direction: Literal["out", "in"],
    leads_to: Sequence[str],
    count: int,
    *,
    glosses: dict[str, str],
) -> dict[str, Any]:
    """Description of following one relation from the whole current set."""
    option: dict[str, Any] = {
        pk.RELATION: relation,
        pk.DIRECTION: direction,
        pk.LEADS_TO: list(leads_to),
        pk.COUNT: count,
    }
    if relation in glosses:
        option[pk.MEANING] = glosses[relation]
    return option


def instructions(
    hop_mode: Literal["entity", "relation"],
    path: Sequence[str],
    current: Sequence[str],
    frontier_size: int,
    *,
    current_type: str | None = None,
    answer_hint: str | None = None,
    start: Sequence[str] = (),
) -> dict[str, Any]:
    """One walk's own context: the task, where it started, the path so far and where it stands."""
    out: dict[str, Any] = {pk.TASK: _ENTITY_TASK if hop_mode == "entity" else _RELATION_TASK}
    if start:
        out[pk.START] = list(start)
    out[pk.PATH] = list(path)
    if hop_mode == "entity":
        here: dict[str, Any] = {pk.NODE: current[0]}
        if current_type is not None:
            here[pk.TYPE] = current_type
        out[pk.CURRENT] = here
    else:
        out[pk.CURRENT] = {pk.COUNT: frontier_size, pk.EXAMPLES: list(current)}
    if answer_hint is not None:
        out[pk.EXPECTED_ANSWER_TYPE] = answer_hint
    return out


def answer_type_question(types: Sequence[str]) -> ChoiceQuestion:
    """The answer-type question batched into the first call (labels t1..tN)."""
    return ChoiceQuestion(
        key=ANSWER_TYPE_KEY,
        instructions={pk.TASK: _ANSWER_TYPE_TASK},
        options={f"t{i + 1}": t for i, t in enumerate(types)},
    )
