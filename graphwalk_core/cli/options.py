"""Checks the commands share on option values."""

from __future__ import annotations

from collections.abc import Sequence

from graphwalk_core.errors import InputError


def choice(value: str, allowed: Sequence[str], option: str) -> str:
    """``value`` when it is one of ``allowed``, else an InputError naming ``option`` and its choices."""
    if value not in allowed:
        raise InputError(f"{option} must be one of {', '.join(allowed)} (got {value!r})")
    return value
