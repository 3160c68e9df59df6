"""Multi-step RAG: the reader answers, or names entities to look up (exact title, else dense top 2)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from graphwalk_core.eval.datasets.base import Question
from graphwalk_core.eval.systems.base import SystemAnswer, UsageTally
from graphwalk_core.eval.systems.documents import Document, DocumentIndex
from graphwalk_core.eval.systems.llm_reader import context_block, parse_answers, rag_identity, read
from graphwalk_core.llm.base import LLMBackend, LLMReplyError, Message

STEP_SYSTEM = (
    "You answer multi-hop questions from the given context, looking things up when it is not enough. "
    'Reply with a JSON object: {"answer": "..."} when the context answers the question (several '
    'answers separated by \' | \'), or {"lookup": ["name", ...]} naming entities whose documents '
    "you need next."
)


class IterStep(BaseModel):
    """One reader step: an answer, or entities to look up."""

    answer: str | None = None
    lookup: list[str] = Field(default_factory=list)


class IterRAGSystem:
    """Top-k retrieval, then up to ``max_calls`` reader calls that answer or look entities up.

    A lookup takes the documents titled exactly like the name, else the dense top ``lookup_k``; at
    most ``max_lookups`` names per step and ``max_docs`` documents in context. A step that adds no
    new document, or the last allowed call, forces a plain answer.
    """

    def __init__(
        self,
        index: DocumentIndex,
        llm: LLMBackend,
        *,
        k: int = 5,
        max_calls: int = 5,
        max_lookups: int = 8,
        lookup_k: int = 2,
        max_docs: int = 40,
        name: str = "iter-rag",
    ) -> None:
        self.name = name
        self.index = index
        self.llm = llm
        self.k, self.max_calls, self.max_lookups = k, max_calls, max_lookups
        self.lookup_k, self.max_docs = lookup_k, max_docs

    def identity(self) -> dict[str, Any]:
        return rag_identity(
            self.name,
            self.llm,
            self.index,
            k=self.k,
            max_calls=self.max_calls,
            max_lookups=self.max_lookups,
            lookup_k=self.lookup_k,
            max_docs=self.max_docs,
        )

    def _lookup(self, name: str) -> list[Document]:
        exact = self.index.by_title(name)
        return exact if exact else [d for d, _ in self.index.search(name, self.lookup_k)]

    async def answer(self, question: Question) -> SystemAnswer:
        start = time.perf_counter()
        tally = UsageTally()
        docs: dict[str, Document] = {d.id: d for d, _ in self.index.search(question.text, self.k)}
        steps: list[dict[str, Any]] = []
        answers: list[str] | None = None
        while tally.llm_calls < self.max_calls - 1:
            messages = [
                Message(role="system", content=STEP_SYSTEM),
                Message(
                    role="user",
                    content=f"Context:\n{context_block([d.text for d in docs.values()])}\n\n"
                    f"Question: {question.text}",
                ),
            ]
            try:
                result = await self.llm.complete(messages, schema=IterStep)
            except LLMReplyError as exc:  # the step reply never validated: fall back to a plain answer
                tally.add(exc.usage, llm=True)
                steps.append({"invalid_step": str(exc)[:200]})
                break
            tally.add(result.usage, llm=True)
            step = result.parsed or IterStep()
            if step.answer and step.answer.strip():
                answers = parse_answers(step.answer)
                steps.append({"answer": step.answer})
                break
            added = 0
            for name in step.lookup[: self.max_lookups]:
                for doc in self._lookup(name):
                    if doc.id not in docs and len(docs) < self.max_docs:
                        docs[doc.id] = doc
                        added += 1
            steps.append({"lookup": step.lookup[: self.max_lookups], "added": added})
            if added == 0:
                break
        if answers is None:
            answers = await read(self.llm, question.text, [d.text for d in docs.values()], tally)
            steps.append({"forced_answer": True})
        return SystemAnswer(
            answers=answers,
            latency_s=time.perf_counter() - start,
            passages=list(docs),
            trace={"steps": steps},
            **tally.fields(),
        )
