"""Stable content hashing: sha256 over canonical JSON."""

from __future__ import annotations

import hashlib
import json
from json.encoder import encode_basestring as _json_string  # type: ignore[attr-defined]
from typing import Any

from pydantic import BaseModel


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no whitespace and UTF-8 text: equal values give equal strings."""
    if isinstance(value, str):  # what json.dumps does for a string, without building an encoder
        return _json_string(value)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(value: Any) -> str:
    """Hex sha256 of ``canonical_json(value)`` (strings are hashed as JSON strings too)."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def text_hash(text: str | bytes) -> str:
    """Hex sha256 of raw text or bytes (used for file contents)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()
