"""A stopwatch for benchmark stages: each ``lap(name)`` records the seconds since the previous lap."""

from __future__ import annotations

import time


class Stopwatch:
    """Named laps and the total since the stopwatch was made."""

    def __init__(self) -> None:
        self.start = self._clock = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._clock
        self._clock = now

    def total(self) -> float:
        return time.perf_counter() - self.start
