"""Split one depth's questions into calls that fit Jev's documented context budget.

Budget: 64k tokens per request, and 32k for ``state`` plus the longest single question. Tokens are
estimated at 3 characters per token of compact JSON, with a 20% safety margin.
"""

from __future__ import annotations

import json
import math
from typing import Any

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.errors import InputError

REQUEST_TOKEN_LIMIT = 64_000
STATE_AND_QUESTION_TOKEN_LIMIT = 32_000
CHARS_PER_TOKEN = 3.0
SAFETY_MARGIN = 1.2


def estimate_tokens(value: Any) -> int:
    """Estimated tokens of ``value`` as compact JSON (3 chars/token, +20%)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return math.ceil(len(text) / CHARS_PER_TOKEN * SAFETY_MARGIN)


def question_tokens(question: ChoiceQuestion) -> int:
    """Estimated tokens of one question in its wire shape."""
    return estimate_tokens(
        {
            question.key: {
                "type": "choice",
                "instructions": question.instructions,
                "criteria": question.options,
            }
        }
    )


def check_state(state: JSONContent, single_limit: int = STATE_AND_QUESTION_TOKEN_LIMIT) -> None:
    """InputError when ``state`` (the query) leaves no room for any question under ``single_limit``."""
    tokens = estimate_tokens(state)
    if tokens >= single_limit:
        raise InputError(
            f"the question is too long: ~{tokens} tokens, over the {single_limit}-token limit for the "
            "query and one question"
        )


def split_batches(
    state: JSONContent,
    questions: list[ChoiceQuestion],
    *,
    per_beam: bool = False,
    request_limit: int = REQUEST_TOKEN_LIMIT,
    single_limit: int = STATE_AND_QUESTION_TOKEN_LIMIT,
) -> list[list[ChoiceQuestion]]:
    """Pack questions, in order, into as few calls as the two-part budget allows.

    ``per_beam`` gives one call per question. A question that cannot fit even alone raises
    ``InputError`` naming it.
    """
    state_tokens = estimate_tokens(state)
    batches: list[list[ChoiceQuestion]] = []
    current: list[ChoiceQuestion] = []
    used = state_tokens
    for q in questions:
        cost = question_tokens(q)
        if state_tokens + cost > single_limit:
            raise InputError(
                f"question {q.key!r} needs ~{state_tokens + cost} tokens ({state_tokens} of them the query), "
                f"over the {single_limit}-token limit for the query and one question (lower prefilter_top_n)"
            )
        if current and (per_beam or used + cost > request_limit):
            batches.append(current)
            current, used = [], state_tokens
        current.append(q)
        used += cost
    if current:
        batches.append(current)
    return batches
