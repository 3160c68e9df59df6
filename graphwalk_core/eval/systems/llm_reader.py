"""The LLM reader shared by the RAG baselines and graph-reader: prompt, call, parse ' | ' answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphwalk_core.eval.systems.base import UsageTally
from graphwalk_core.eval.systems.documents import DocumentIndex
from graphwalk_core.llm.base import LLMBackend, Message

READER_SYSTEM = (
    "You answer questions using only the given context. Reply with the answer and nothing else: "
    "an entity name, a date, a number, or yes/no. When the question asks for several things, list "
    "every one, separated by ' | '. If the context does not contain the answer, give your best guess."
)

_REFUSALS = {"unknown", "none", "n/a", "no answer", "not found"}


def parse_answers(text: str) -> list[str]:
    """Answers from a reader reply: split on '|', trimmed of spaces, quotes and a trailing period."""
    text = text.strip()
    if text.lower().startswith("answer:"):
        text = text[len("answer:") :]
    out = []
    for part in text.split("|"):
        answer = part.strip().rstrip(".").strip().strip("\"'").strip()
        if answer and answer.lower() not in _REFUSALS:
            out.append(answer)
    return out


def context_block(blocks: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {block}" for i, block in enumerate(blocks, start=1))


async def read(llm: LLMBackend, question: str, blocks: Sequence[str], tally: UsageTally) -> list[str]:
    """One reader call over numbered context blocks; usage goes into ``tally``."""
    messages = [
        Message(role="system", content=READER_SYSTEM),
        Message(role="user", content=f"Context:\n{context_block(blocks)}\n\nQuestion: {question}\nAnswer:"),
    ]
    result = await llm.complete(messages)
    tally.add(result.usage, llm=True)
    return parse_answers(result.text)


def rag_identity(name: str, llm: LLMBackend, index: DocumentIndex, **settings: Any) -> dict[str, Any]:
    """What defines a RAG baseline's results: name, reader LLM, retrieval embedder, its own settings."""
    return {"system": name, "llm": llm.model_id, "embedder": index.embedder.model_id, **settings}
