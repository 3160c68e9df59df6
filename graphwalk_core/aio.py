"""``gather_or_cancel``: ``asyncio.gather`` that takes its awaitables down with it when one fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def gather_or_cancel(*aws: Awaitable[T]) -> list[T]:
    """The results of ``aws`` in order, as ``asyncio.gather``; but when one raises, the others are
    cancelled and waited for before its exception (itself, not an ExceptionGroup) goes on. A bare gather
    left them running unobserved: paying for calls and writing into what the caller had already closed."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
