"""Fixtures for the ingestion tests: a scripted extractor, a scripted decider and graph snapshots."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from servers.openai_server import openai_server  # noqa: F401

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import BackendError
from graphwalk_core.eval.datasets.base import default_data_dir
from graphwalk_core.ingest.extraction.base import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractorResult,
)
from graphwalk_core.ingest.extraction.cleanup import clean_extraction
from graphwalk_core.ingest.ledger import read_ledger
from graphwalk_core.ingest.text import name_words, normalize_name
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.sql import SQLGraphStore


class ScriptedExtractor:
    """Reads a tiny line language: ``E name|type|k=v,k=v|description`` and ``R source|type|target``.

    A chunk containing ``FAIL`` raises BackendError while ``fail`` is true. Counts its calls.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.fail = True

    @property
    def version(self) -> str:
        return "scripted:1"

    @property
    def model_id(self) -> str:
        return ""

    @property
    def cacheable(self) -> bool:
        return False

    async def extract(self, text: str) -> ExtractorResult:
        self.calls += 1
        if "FAIL" in text and self.fail:
            raise BackendError("scripted extractor failure")
        entities, relations = [], []
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            parts = rest.split("|")
            if kind == "E":
                name, type_, attrs, desc = [*parts, "", "", ""][:4]
                attributes: dict[str, Any] = {}
                for pair in filter(None, attrs.split(",")):
                    k, _, v = pair.partition("=")
                    attributes[k] = int(v) if v.isdigit() else v
                entities.append(
                    ExtractedEntity(
                        name=name, type=type_ or "entity", attributes=attributes, description=desc or None
                    )
                )
            elif kind == "R":
                relations.append(ExtractedRelation(source=parts[0], type=parts[1], target=parts[2]))
        return ExtractorResult(
            extraction=clean_extraction(Extraction(entities=entities, relations=relations))
        )


class RecordingEmbedder:
    """A hashing embedder that records the texts of every call."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.calls: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def same_name_script(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
    """Pick the candidate whose card name equals the mention's (normalized), else NEW."""
    assert isinstance(question.instructions, dict)
    mention = normalize_name(question.instructions["mention"]["name"])
    for label, card in question.options.items():
        if isinstance(card, dict) and normalize_name(str(card["name"])) == mention:
            return {label: 1.0}
    return {"NEW": 1.0}


@pytest.fixture
def scripted_decider() -> FakeDecisionBackend:
    return FakeDecisionBackend(seed=0, script=same_name_script)


async def graph_tables(store: GraphStore, source_id: str | None = None) -> dict[str, Any]:
    """Nodes, edges (full JSON, sorted) and the ledger (without times): equal graphs give equal tables."""
    nodes = sorted([n.model_dump(mode="json") async for n in store.iter_nodes()], key=lambda n: n["id"])
    edges = sorted([e.model_dump(mode="json") async for e in store.iter_edges()], key=lambda e: e["id"])
    tables: dict[str, Any] = {"nodes": nodes, "edges": edges}
    if source_id is not None:
        ledger = await read_ledger(store, source_id)
        tables["ledger"] = sorted(
            (e.document_id, e.content_hash, e.extractor, e.status) for e in ledger.values()
        )
    return tables


HOTPOTQA = default_data_dir() / "hotpotqa" / "hotpotqa_dev_ircotfmt_300.jsonl"


def write_hotpotqa_paragraphs(root: Path, n: int = 200) -> list[Path]:
    """The first ``n`` distinct HotpotQA dev paragraphs (by title), one ``.txt`` file each."""
    if not HOTPOTQA.is_file():
        pytest.skip(f"HotpotQA dev data not found at {HOTPOTQA} (see ../shared/README.md)")
    root.mkdir(parents=True, exist_ok=True)
    titles: dict[str, None] = {}
    with HOTPOTQA.open(encoding="utf-8") as lines:
        for line in lines:
            for context in json.loads(line)["contexts"]:
                if len(titles) < n and context["title"] not in titles:
                    titles[context["title"]] = None
                    path = root / f"p{len(titles):03d}.txt"
                    path.write_text(f"{context['title']}\n\n{context['paragraph_text']}\n", encoding="utf-8")
            if len(titles) == n:
                break
    return sorted(root.glob("*.txt"))


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_graph_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """Makes URLs of fresh, empty SQL graphs of one kind, by name: a SQLite file or a PostgreSQL database."""

    def make(name: str) -> str:
        if request.param == "sqlite":
            return f"sqlite:///{tmp_path / name}.sqlite"
        server = request.getfixturevalue("postgres_server")
        return server.url(server.create_database(name))

    return make


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def new_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[], GraphStore]]:
    """Makes fresh, empty stores of one kind: memory, a SQLite file, a PostgreSQL database."""
    made: list[GraphStore] = []

    def make() -> GraphStore:
        if request.param == "memory":
            store: GraphStore = MemoryGraphStore()
        elif request.param == "sqlite":
            store = SQLGraphStore(f"sqlite:///{tmp_path / f'graph{len(made)}.sqlite'}")
        else:
            server = request.getfixturevalue("postgres_server")
            store = SQLGraphStore(server.url(server.create_database()))
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


def same_entity_script(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
    """Merge into a candidate of the same type whose name's words contain the mention's (or the reverse)."""
    assert isinstance(question.instructions, dict)
    mention = question.instructions["mention"]
    words = name_words(mention["name"])
    for label, card in question.options.items():
        if isinstance(card, dict) and card.get("type") == mention["type"]:
            other = name_words(str(card["name"]))
            if words <= other or other <= words:
                return {label: 1.0}
    return {"NEW": 1.0}
