"""Structured replies: the JSON instruction for a schema, the JSON object in a reply, one retry."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from graphwalk_core.llm.base import LLMReplyError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class ReplyFormatError(ValueError):
    """A reply held no JSON object, or the object did not validate against the schema."""


def schema_instruction(schema: type[BaseModel]) -> str:
    """A system-message instruction asking for one JSON object matching ``schema``."""
    spec = json.dumps(schema.model_json_schema(), separators=(",", ":"), sort_keys=True)
    return f"Reply with only a JSON object (no prose) that matches this JSON Schema: {spec}"


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: inside a code fence if there is one, else the first ``{...}``."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    snippet = text if len(text) <= 200 else text[:200] + "..."
    raise ReplyFormatError(f"no JSON object in the reply: {snippet!r}")


def parse_json_reply(text: str, schema: type[T]) -> T:
    """The reply's JSON object validated into ``schema``; ReplyFormatError naming the problem otherwise."""
    obj = extract_json_object(text)
    try:
        return schema.model_validate(obj)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in err.errors()
        )
        raise ReplyFormatError(f"reply does not match {schema.__name__}: {problems}") from err


async def ask_for_json(
    send: Callable[[list[dict[str, str]]], Awaitable[str]],
    chat: list[dict[str, str]],
    schema: type[T],
    model: str,
) -> tuple[str, T]:
    """Ask ``send`` for a ``schema`` object; if the reply is invalid, ask once more with the error appended.

    Returns the last reply text and the validated object; LLMReplyError naming the model after 2 invalid
    replies (a failed request raises the LLMError of ``send``).
    """
    chat = [{"role": "system", "content": schema_instruction(schema)}, *chat]
    text = await send(chat)
    try:
        return text, parse_json_reply(text, schema)
    except ReplyFormatError as first:
        fix = f"That reply was invalid: {first}. Reply with the corrected JSON object."
        chat += [{"role": "assistant", "content": text}, {"role": "user", "content": fix}]
    text = await send(chat)
    try:
        return text, parse_json_reply(text, schema)
    except ReplyFormatError as second:
        name = schema.__name__
        message = f"LLM {model}: reply never validated against {name} in 2 tries: {second}"
        raise LLMReplyError(message) from None
