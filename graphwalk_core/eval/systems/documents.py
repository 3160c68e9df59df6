"""Documents a RAG system retrieves from: the corpus passages, or one document per graph node."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.eval.datasets.base import Knowledge
from graphwalk_core.eval.metrics import normalize_answer
from graphwalk_core.stores.base import GraphStore, first_adjacent
from graphwalk_core.traversal.name_vectors import top_k

log = logging.getLogger(__name__)

#: Incident triples written into a node's document.
MAX_TRIPLES_PER_DOC = 40


class Document(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    text: str


async def node_documents(store: GraphStore, *, max_triples: int = MAX_TRIPLES_PER_DOC) -> list[Document]:
    """One document per node: its name, type and up to ``max_triples`` incident triples as sentences (the
    same ones from every store: :func:`~graphwalk_core.stores.base.first_adjacent`)."""
    docs = []
    async for node in store.iter_nodes():
        lines = [f"{node.name} ({node.type})."]
        if node.summary:
            lines.append(node.summary)
        adjacent = await first_adjacent(store, node.id, max_triples)
        neighbor_ids = sorted({a.neighbor for a in adjacent})
        names = {k: v.name for k, v in (await store.get_nodes(neighbor_ids)).items()}
        for a in adjacent:
            other = names.get(a.neighbor, a.neighbor)
            lines.append(
                f"{node.name} {a.relation} {other}."
                if a.direction == "out"
                else f"{other} {a.relation} {node.name}."
            )
        docs.append(Document(id=node.id, title=node.name, text=" ".join(lines)))
    return docs


def passage_documents(knowledge: Knowledge) -> list[Document]:
    return [Document(id=p.id, title=p.title, text=f"{p.title}: {p.text}") for p in knowledge.passages]


class DocumentIndex:
    """Dense top-k cosine retrieval over documents, plus exact title lookup."""

    def __init__(self, docs: Sequence[Document], vectors: np.ndarray, embedder: Embedder) -> None:
        if len(docs) != len(vectors):
            raise ValueError(f"{len(docs)} documents but {len(vectors)} vectors")
        self.docs = list(docs)
        self.vectors = vectors
        self.embedder = embedder
        self._by_title: dict[str, list[int]] = {}
        for i, doc in enumerate(self.docs):
            self._by_title.setdefault(normalize_answer(doc.title), []).append(i)

    @classmethod
    async def build(
        cls, docs: Sequence[Document], embedder: Embedder, *, batch_size: int = 256
    ) -> DocumentIndex:
        """Embed every document (in length order, which batches faster) once, a batch at a time on a
        worker thread: a cancellation (Ctrl-C) stops it after the batch in flight. One thread for the
        whole build ran on to its end (minutes of a corpus, paid calls of a remote embedder) before the
        process could exit."""
        start = time.perf_counter()
        order = sorted(range(len(docs)), key=lambda i: len(docs[i].text))
        vectors = np.zeros((len(docs), embedder.dim), dtype=np.float32)
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            vectors[idx] = await asyncio.to_thread(embedder.embed, [docs[i].text for i in idx])
        log.info("embedded %d documents in %.1fs", len(docs), time.perf_counter() - start)
        return cls(docs, vectors, embedder)

    def similarities(self, query: str) -> np.ndarray:
        """Cosine of ``query`` to every document, in document order."""
        return self.vectors @ self.embedder.embed([query])[0]

    def search(self, query: str, k: int) -> list[tuple[Document, float]]:
        """The ``k`` most similar documents (cosine), best first; ties by document order (also at the cut)."""
        if not self.docs or k < 1:
            return []
        scores = self.similarities(query)
        return [(self.docs[i], float(scores[i])) for i in top_k(scores, k).tolist()]

    def by_title(self, title: str) -> list[Document]:
        """Documents whose title equals ``title`` after answer normalization."""
        return [self.docs[i] for i in self._by_title.get(normalize_answer(title), [])]


_INDEXES: dict[tuple[str, str, str], DocumentIndex] = {}


async def document_index(
    knowledge: Knowledge, embedder: Embedder, *, store: GraphStore | None = None, kind: str = "auto"
) -> DocumentIndex:
    """The cached index for ``knowledge``: passages when it has them (``kind="auto"``), else node docs."""
    use = kind if kind != "auto" else ("passages" if knowledge.passages else "nodes")
    key = (knowledge.key(), embedder.model_id, use)
    if key not in _INDEXES:
        if use == "passages":
            docs = passage_documents(knowledge)
        else:
            if store is None:
                raise ValueError("node documents need the graph store")
            docs = await node_documents(store)
        _INDEXES[key] = await DocumentIndex.build(docs, embedder)
    return _INDEXES[key]
