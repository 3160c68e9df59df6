"""One-shot vector RAG: embed the question, take the top-k documents by cosine, ask the LLM reader."""

from __future__ import annotations

import time
from typing import Any

from graphwalk_core.eval.datasets.base import Question
from graphwalk_core.eval.systems.base import SystemAnswer, UsageTally
from graphwalk_core.eval.systems.documents import DocumentIndex
from graphwalk_core.eval.systems.llm_reader import rag_identity, read
from graphwalk_core.llm.base import LLMBackend


class VectorRAGSystem:
    """Retrieve ``k`` documents (per-node documents from the graph, or passages), then read."""

    def __init__(
        self, index: DocumentIndex, llm: LLMBackend, *, k: int = 5, name: str = "vector-rag"
    ) -> None:
        self.name = name
        self.index = index
        self.llm = llm
        self.k = k

    def identity(self) -> dict[str, Any]:
        return rag_identity(self.name, self.llm, self.index, k=self.k, documents=len(self.index.docs))

    async def answer(self, question: Question) -> SystemAnswer:
        start = time.perf_counter()
        hits = self.index.search(question.text, self.k)
        tally = UsageTally()
        answers = await read(self.llm, question.text, [d.text for d, _ in hits], tally)
        return SystemAnswer(
            answers=answers,
            latency_s=time.perf_counter() - start,
            passages=[d.id for d, _ in hits],
            trace={"retrieved": [[d.id, round(s, 4)] for d, s in hits]},
            **tally.fields(),
        )
