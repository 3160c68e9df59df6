"""Small test doubles: a dataset built in memory and a system that answers from a dict."""

from __future__ import annotations

import asyncio
from typing import Any

from graphwalk_core.decisions.base import Usage
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
from graphwalk_core.eval.systems.base import SystemAnswer, UsageTally


def toy_dataset(n: int = 20) -> Dataset:
    questions = [
        Question(
            id=f"q{i:03d}", text=f"question {i}", gold=[f"ans{i}"], hops=1 + i % 3, extra={"start": f"s{i}"}
        )
        for i in range(n)
    ]
    return Dataset(
        name="toy",
        split="dev",
        questions=questions,
        knowledge=Knowledge(graph="triples", triples=(("s0", "r", "ans0"),)),
    )


class DictSystem:
    """Answers ``ans<i>`` for even questions and ``wrong`` for odd ones; records every call."""

    def __init__(self, *, delay_s: float = 0.0, crash_after: int | None = None, rate_limits: int = 0) -> None:
        self.delay_s = delay_s
        self.crash_after = crash_after
        self.rate_limits = rate_limits
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return "dict"

    def identity(self) -> dict[str, Any]:
        return {"system": "dict", "decider": "fake:dict"}

    async def answer(self, question: Question) -> SystemAnswer:
        self.calls.append(question.id)
        if self.crash_after is not None and len(self.calls) > self.crash_after:
            raise Crash(f"injected crash at {question.id}")
        if self.rate_limits:
            self.rate_limits -= 1
            raise RateLimited("429 Too Many Requests")
        await asyncio.sleep(self.delay_s)
        i = int(question.id[1:])
        tally = UsageTally()
        tally.add(Usage(input_tokens=10, output_tokens=2, cost_usd=0.0001 if i % 2 else None), llm=False)
        answers = [f"ans{i}"] if i % 2 == 0 else ["wrong"]
        return SystemAnswer(
            answers=answers, latency_s=0.1 * (i + 1), linked_start=[f"s{i}"], **tally.fields()
        )


class Crash(BaseException):
    """Simulates the process dying (not an Exception, so the runner does not record it)."""


class RateLimited(Exception):
    status_code = 429
