"""A decision as a trained decider reads it: the masked question, the path so far and the moves offered.

The same :class:`DecisionView` comes from a live :class:`ChoiceQuestion` (inference) and from a row of
the ``decision_examples`` table (training), so both sides render exactly the same texts.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from graphwalk_core.decisions import prompt_keys as pk
from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent

#: What an entity mention becomes in the masked question.
MASK = "ENTITY"
#: A relation-mode path step as the engine writes it: ``directed_by (out)`` (a relation may have spaces).
PATH_STEP_TEXT = re.compile(r"^(?P<relation>.+) \((?P<direction>out|in)\)$")
#: An entity-mode path step (an edge as stored): ``Memento --directed_by--> Christopher Nolan``; read
#: before PATH_STEP_TEXT, which also matches an edge to a node named like ``Nolan (in)``.
_EDGE_STEP = re.compile(r"^(?P<source>.*) --(?P<relation>.+?)--> (?P<target>.*)$")

#: A move: (relation, direction); ``None`` stands for STOP.
Move = tuple[str, str]


@dataclass(frozen=True, slots=True)
class DecisionView:
    """One decision: masked question, path so far (moves taken) and the offered moves (None: STOP)."""

    question: str
    path: tuple[Move, ...]
    options: tuple[Move | None, ...]


def mask_mentions(text: str, names: Sequence[str]) -> str:
    """``text`` with every whole-word mention of ``names`` (longest first, case-insensitive) replaced by
    MASK (a one-letter film "O" must not mask the o of "movie")."""
    for name in sorted({n.strip() for n in names if n and n.strip()}, key=lambda n: (-len(n), n)):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", MASK, text, flags=re.IGNORECASE)
    return " ".join(text.split())


def _path_moves(path: Any, current: str | None) -> tuple[Move, ...]:
    """The moves of an engine ``path``: relation steps as written, edge steps oriented back from
    ``current``, the node the walk stands on (of several start nodes, any one may have begun it)."""
    if not isinstance(path, list):
        return ()
    moves: list[Move] = []
    here = current
    for step in reversed(path):
        text = str(step)
        edge = _EDGE_STEP.match(text)
        if edge:
            forward = here is None or edge["target"] == here
            moves.append((edge["relation"], "out" if forward else "in"))
            here = edge["source"] if forward else edge["target"]
            continue
        relation_step = PATH_STEP_TEXT.match(text)
        if relation_step:
            moves.append((relation_step["relation"], relation_step["direction"]))
    return tuple(reversed(moves))


def option_move(label: str, description: JSONContent | None) -> Move:
    """An engine option as a move; an option without a relation is read by its text."""
    if isinstance(description, dict) and isinstance(description.get(pk.RELATION), str):
        direction = description.get(pk.DIRECTION)
        return description[pk.RELATION], direction if direction in ("out", "in") else "out"
    text = description if isinstance(description, str) else label
    return str(text), "out"


def view_of(
    state: JSONContent, question: ChoiceQuestion, stop_labels: Collection[str] = ("STOP",)
) -> DecisionView:
    """The view of a live choice question (the state's ``query``, the instructions' path and start)."""
    query = state.get("query", "") if isinstance(state, dict) else str(state)
    instr = question.instructions if isinstance(question.instructions, dict) else {}
    start = [str(s) for s in instr.get(pk.START) or []]
    here = instr.get(pk.CURRENT)
    current = here.get(pk.NODE) if isinstance(here, dict) else None
    options = tuple(
        None if label in stop_labels else option_move(label, description)
        for label, description in question.options.items()
    )
    path = _path_moves(instr.get(pk.PATH), str(current) if current is not None else None)
    return DecisionView(mask_mentions(str(query), start), path, options)


def words(relation: str) -> str:
    return relation.replace("_", " ").strip()


def relation_phrase(relation: str, direction: str, previous: tuple[str, str] | None) -> str:
    """A relation move as words; one that walks the previous hop back reads "other ones with the same
    <relation>" (it reaches the previous set's siblings, not the relation's value)."""
    if previous is not None and previous[0] == relation and previous[1] != direction:
        return f"other ones with the same {words(relation)}"
    return words(relation)


def move_text(move: Move | None, previous: Move | None) -> str:
    """A move in words (:func:`relation_phrase`, "(reverse)" against the stored direction)."""
    if move is None:
        return "stop: the current set is the answer"
    phrase = relation_phrase(move[0], move[1], previous)
    walks_back = phrase.startswith("other ones")
    return phrase + (" (reverse)" if move[1] == "in" and not walks_back else "")


def path_text(path: Sequence[Move]) -> str:
    """The path so far in words (``start`` when empty)."""
    if not path:
        return "start"
    return "; ".join(move_text(move, path[i - 1] if i else None) for i, move in enumerate(path))
