"""graph-reader: a graphwalk walk, then the LLM reader over the facts or source passages it reached."""

from __future__ import annotations

import time
from typing import Any, Literal

from graphwalk_core.eval.datasets.base import Knowledge, Question
from graphwalk_core.eval.systems.base import SystemAnswer, UsageTally
from graphwalk_core.eval.systems.graphwalk import GraphwalkSystem, passages_of
from graphwalk_core.eval.systems.llm_reader import read
from graphwalk_core.llm.base import LLMBackend
from graphwalk_core.traversal.answers import WalkResult

ReadFrom = Literal["facts", "passages"]
#: Facts or passages handed to the reader at most.
MAX_BLOCKS = 30


def walk_facts(result: WalkResult, *, max_facts: int = MAX_BLOCKS) -> list[str]:
    """The reached facts as sentences: every witness hop, then each answer's node set."""
    facts: dict[str, None] = {}
    for answer in result.answers:
        for path in (answer.witness, *answer.witnesses.values()):
            for hop in path:
                s, t = (hop.source, hop.target) if hop.direction == "out" else (hop.target, hop.source)
                facts.setdefault(f"{s} --{hop.relation}--> {t}", None)
        facts.setdefault(
            f"walk answer ({' → '.join(answer.relation_path)}): {', '.join(answer.names[:20])}", None
        )
    return list(facts)[:max_facts]


class GraphReaderSystem:
    """Walks with ``walker``, then reads the facts (``facts``) or the source passages (``passages``)."""

    def __init__(
        self,
        walker: GraphwalkSystem,
        llm: LLMBackend,
        knowledge: Knowledge,
        *,
        read_from: ReadFrom = "facts",
        name: str = "graph-reader",
    ) -> None:
        self.name = name
        self.walker = walker
        self.llm = llm
        self.read_from = read_from
        self._passages = {p.id: p for p in knowledge.passages}

    def identity(self) -> dict[str, Any]:
        return {
            **self.walker.identity(),
            "system": self.name,
            "llm": self.llm.model_id,
            "read_from": self.read_from,
        }

    def blocks(self, result: WalkResult) -> list[str]:
        """What the reader sees: passages the walk reached (falling back to facts), or the facts."""
        if self.read_from == "passages":
            texts = [
                f"{self._passages[pid].title}: {self._passages[pid].text}"
                for pid in passages_of(result)
                if pid in self._passages
            ]
            if texts:
                return texts[:MAX_BLOCKS]
        return walk_facts(result)

    async def answer(self, question: Question) -> SystemAnswer:
        start = time.perf_counter()
        result, linked = await self.walker.walk(question)
        tally = UsageTally()
        walked: dict[str, Any] = {}
        blocks: list[str] = []
        if result is not None:
            totals = result.trace.totals
            tally.input_tokens, tally.output_tokens = totals.input_tokens, totals.output_tokens
            tally.cost_usd, tally.decision_calls = totals.cost_usd, totals.decision_calls
            blocks = self.blocks(result)
            walked = {"walk_answers": [a.names[:10] for a in result.answers[:3]], "status": result.status}
        # a walk whose decider failed (an outage, a refused key) is an error, not a context to guess from
        failed = result is not None and result.status == "error"
        context = blocks or ["(the walk reached nothing)"]
        answers = [] if failed else await read(self.llm, question.text, context, tally)
        return SystemAnswer(
            answers=answers,
            latency_s=time.perf_counter() - start,
            linked_start=linked,
            passages=passages_of(result) if result is not None else [],
            cites_passages=self.walker.cites_passages,
            trace={**walked, "blocks": blocks},
            status="error" if failed else "ok",
            error=result.error if result is not None and failed else None,
            **tally.fields(),
        )
