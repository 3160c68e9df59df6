"""The graph a system walks or reads, built once per knowledge (and extractor) and cached in-process."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from graphwalk_core.eval.datasets.base import Knowledge
from graphwalk_core.eval.datasets.metaqa import metaqa_node_type
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.triples import read_triples

log = logging.getLogger(__name__)

_CACHE: dict[str, GraphStore] = {}
_LOCKS: dict[tuple[int, str], asyncio.Lock] = {}
#: Seconds spent building each cached graph (reported by the retrieval benchmark).
BUILD_SECONDS: dict[str, float] = {}


def passage_of(source_id: str) -> str:
    """The passage (document) id in a provenance ``source_id`` of the form ``<source>/<doc id>``."""
    return source_id.split("/", 1)[1] if "/" in source_id else source_id


def graph_from_triples(knowledge: Knowledge) -> MemoryGraphStore:
    """A memory store of the knowledge's triples (file or inline); MetaQA gets typed nodes."""
    triples = read_triples(knowledge.kb_path) if knowledge.kb_path is not None else knowledge.triples
    node_type_for = metaqa_node_type if knowledge.source == "metaqa" else None
    return MemoryGraphStore.from_triples(
        triples, source_id=f"{knowledge.source}/kb", node_type_for=node_type_for
    )


async def graph_from_passages(knowledge: Knowledge, *, ingest: Any) -> GraphStore:
    """Ingest the knowledge's passages with ``ingest(store, passages)`` into a new memory store."""
    store = MemoryGraphStore()
    await ingest(store, list(knowledge.passages))
    return store


async def open_graph(knowledge: Knowledge, *, ingest: Any | None = None, ingest_key: str = "") -> GraphStore:
    """The cached graph for ``knowledge``; passages need an ``ingest`` callable (see ``ingestion.py``)."""
    key = f"{knowledge.key()}:{ingest_key}" if knowledge.graph == "passages" else knowledge.key()
    lock = _LOCKS.setdefault((id(asyncio.get_running_loop()), key), asyncio.Lock())
    async with lock:
        if key not in _CACHE:
            start = time.perf_counter()
            if knowledge.graph == "triples":
                _CACHE[key] = await asyncio.to_thread(graph_from_triples, knowledge)
            else:
                if ingest is None:
                    raise ValueError("a passage corpus needs an ingest function to build its graph")
                _CACHE[key] = await graph_from_passages(knowledge, ingest=ingest)
            BUILD_SECONDS[key] = time.perf_counter() - start
            log.info("built the %s graph in %.1fs", knowledge.source, BUILD_SECONDS[key])
        return _CACHE[key]
