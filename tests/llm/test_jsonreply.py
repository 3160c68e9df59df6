"""JSON extraction from replies and schema validation messages."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from graphwalk_core.llm.jsonreply import (
    ReplyFormatError,
    extract_json_object,
    parse_json_reply,
    schema_instruction,
)


class Answer(BaseModel):
    answer: str
    confidence: float


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! Here it is: {"a": {"b": [1, 2]}} hope that helps', {"a": {"b": [1, 2]}}),
        ('```json\n{"a": "x}"}\n```', {"a": "x}"}),
        ('note {not json} then ```\n{"a": 2}\n``` and {"a": 3}', {"a": 2}),
        ('[1, 2] {"a": 4}', {"a": 4}),
    ],
)
def test_extract(text: str, expected: dict) -> None:
    assert extract_json_object(text) == expected


def test_extract_none() -> None:
    with pytest.raises(ReplyFormatError, match=r"^no JSON object in the reply: 'just prose \[1\]'$"):
        extract_json_object("just prose [1]")


def test_parse_and_validation_message() -> None:
    assert parse_json_reply('{"answer": "Paris", "confidence": 0.9}', Answer) == Answer(
        answer="Paris", confidence=0.9
    )
    with pytest.raises(ReplyFormatError) as err:
        parse_json_reply('{"answer": 3, "confidence": "high"}', Answer)
    assert str(err.value) == (
        "reply does not match Answer: answer: Input should be a valid string; "
        "confidence: Input should be a valid number, unable to parse string as a number"
    )


def test_schema_instruction() -> None:
    text = schema_instruction(Answer)
    assert text.startswith("Reply with only a JSON object (no prose) that matches this JSON Schema: {")
    assert '"required":["answer","confidence"]' in text
