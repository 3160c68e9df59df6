"""LLM extraction through litellm against the local OpenAI-compatible server (real HTTP, real wire format)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from servers.openai_server import Fail, Malformed, OpenAIServer, Reply

from graphwalk_core.ingest.extraction.cache import ExtractionCache
from graphwalk_core.ingest.extraction.llm import LLMExtractor
from graphwalk_core.ingest.ledger import read_ledger
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.llm.litellm_backend import LiteLLMBackend
from graphwalk_core.stores.memory import MemoryGraphStore

GOOD = json.dumps(
    {
        "entities": [
            {
                "name": "Christopher Nolan",
                "type": "Person",
                "description": "A director.",
                "attributes": {"born": 1970},
            },
            {"name": "Inception", "type": "film"},
        ],
        "relations": [
            {"source": "Inception", "type": "directed by", "target": "Christopher Nolan"},
            {"source": "Inception", "type": "scored_by", "target": "Hans Zimmer"},
        ],
    }
)
NEVER_VALID = '{"entities": "not a list"}'


def extractor(server: OpenAIServer) -> LLMExtractor:
    backend = LiteLLMBackend(
        "openai/test-model", server.base_url, SecretStr("sk-test"), max_retries=3, backoff_s=0.01
    )
    return LLMExtractor(backend)


def corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text("Inception was directed by Christopher Nolan.", encoding="utf-8")
    return root


async def test_good_reply_is_cleaned_and_cached(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(Reply(GOOD, prompt_tokens=50, completion_tokens=40))
    cache = ExtractionCache(tmp_path / "cache.sqlite")
    store = MemoryGraphStore()
    llm = extractor(openai_server)
    report = await ingest(
        FileSource(corpus(tmp_path / "docs")), store, extractor=llm, routing="exact", cache=cache
    )
    assert (report.extraction_cost.calls, report.extraction_cost.input_tokens) == (1, 50)
    [request] = openai_server.chat_requests
    assert request.body["messages"][-1]["content"].endswith("Inception was directed by Christopher Nolan.")
    nodes = {n.name: n async for n in store.iter_nodes()}
    assert {name: n.type for name, n in nodes.items()} == {
        "Christopher Nolan": "person",
        "Inception": "film",
        "Hans Zimmer": "entity",
    }
    assert nodes["Christopher Nolan"].provenance[0].extractor == "llm:1:openai/test-model"
    assert nodes["Christopher Nolan"].summary == "A director."
    assert sorted([e.type async for e in store.iter_edges()]) == ["directed_by", "scored_by"]
    # a fresh graph from the same text: the cache answers, no HTTP request
    again = await ingest(
        FileSource(corpus(tmp_path / "docs")), MemoryGraphStore(), extractor=llm, routing="exact", cache=cache
    )
    assert (again.extraction_cost.calls, again.cache_hits, len(openai_server.chat_requests)) == (0, 1, 1)
    assert len(cache) == 1


async def test_transient_failures_are_retried(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(Malformed(), Fail(429, retry_after=0.01), Fail(500), GOOD)
    report = await ingest(
        FileSource(corpus(tmp_path)), MemoryGraphStore(), extractor=extractor(openai_server), routing="exact"
    )
    assert report.failed == [] and report.extraction_cost.calls == 4
    assert len(openai_server.chat_requests) == 4


async def test_invalid_json_is_retried_once_with_the_error(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue("this is not json at all", GOOD)
    store = MemoryGraphStore()
    report = await ingest(
        FileSource(corpus(tmp_path)), store, extractor=extractor(openai_server), routing="exact"
    )
    assert report.failed == [] and report.extraction_cost.calls == 2
    second = openai_server.chat_requests[1].body["messages"]
    assert "this is not json at all" in json.dumps(second)
    assert await store.counts() == (3, 2)


async def test_never_validating_reply_fails_the_chunk_then_retries(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    (tmp_path / "b.txt").write_text("Dune is a film.", encoding="utf-8")

    def by_text(messages: list[dict[str, Any]]) -> str:
        if "Dune" in messages[-1]["content"]:
            return '{"entities": [{"name": "Dune", "type": "film"}]}'
        return NEVER_VALID

    openai_server.script = by_text
    store = MemoryGraphStore()
    source = FileSource(corpus(tmp_path))
    report = await ingest(source, store, extractor=extractor(openai_server), routing="exact")
    assert report.failed == ["a.txt"]
    ledger = await read_ledger(store, source.source_id)
    assert ledger["a.txt"].status == "incomplete" and ledger["b.txt"].status == "complete"
    assert "a.txt" in ledger and "validat" in ledger["a.txt"].errors[0].lower()
    assert [n.name async for n in store.iter_nodes()] == ["Dune"]
    openai_server.script = lambda messages: GOOD
    retry = await ingest(source, store, extractor=extractor(openai_server), routing="exact")
    assert (retry.incomplete, retry.unchanged, retry.failed) == (1, 1, [])
    assert sorted([n.name async for n in store.iter_nodes()]) == [
        "Christopher Nolan",
        "Dune",
        "Hans Zimmer",
        "Inception",
    ]


async def test_an_attribute_json_has_no_number_for_is_dropped(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """Python's JSON reads NaN and Infinity: the memory store kept a NaN attribute, the SQL store null."""
    from graphwalk_core.stores.sql import SQLGraphStore

    entities = [
        {
            "name": "Christopher Nolan",
            "type": "person",
            "attributes": {"born": 1970, "height": float("nan"), "oscars": float("inf")},
        }
    ]
    reply = json.dumps({"entities": entities, "relations": []})
    assert "NaN" in reply and "Infinity" in reply
    found = []
    for store in (MemoryGraphStore(), SQLGraphStore(f"sqlite:///{tmp_path / 'g.db'}")):
        openai_server.enqueue(Reply(reply))
        await ingest(
            FileSource(corpus(tmp_path / "docs")), store, extractor=extractor(openai_server), routing="exact"
        )
        found.append([(n.name, n.attributes) async for n in store.iter_nodes()])
    assert found == [[("Christopher Nolan", {"born": 1970})]] * 2


async def test_failed_chunk_still_counts_its_calls_and_tokens(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue(
        Reply(NEVER_VALID, prompt_tokens=50, completion_tokens=5),
        Reply(NEVER_VALID, prompt_tokens=70, completion_tokens=5),
    )
    report = await ingest(
        FileSource(corpus(tmp_path)), MemoryGraphStore(), extractor=extractor(openai_server), routing="exact"
    )
    assert report.failed == ["a.txt"]
    cost = report.extraction_cost
    assert (cost.calls, cost.input_tokens, cost.output_tokens) == (2, 120, 10)


async def test_an_empty_object_is_a_chunk_with_nothing_to_extract(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """``{}``, a model's way of saying a chunk names nothing, is an empty extraction: the refusal of
    objects without 'entities' or 'relations' (a reply cut short) took it as invalid, so such a document
    failed on every run."""
    openai_server.enqueue(Reply("{}"))
    store = MemoryGraphStore()
    report = await ingest(
        FileSource(corpus(tmp_path / "docs")), store, extractor=extractor(openai_server), routing="exact"
    )
    assert (report.failed, report.extraction_cost.calls, report.new) == ([], 1, 1)
    assert await store.counts() == (0, 0)


async def test_a_reply_cut_short_is_asked_again_not_cached_as_empty(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """A reply cut at the token limit leaves its outer object unclosed: the first whole object in it was
    an entity, which validated as an extraction with no entities and no relations (all fields default),
    so the chunk was stored empty, cached, and its document marked complete."""
    cut = GOOD[: GOOD.index('{"name": "Inception"') + 10]
    openai_server.enqueue(Reply(cut, finish_reason="length"), GOOD)
    cache = ExtractionCache(tmp_path / "cache.sqlite")
    store = MemoryGraphStore()
    report = await ingest(
        FileSource(corpus(tmp_path / "docs")), store, extractor=extractor(openai_server), routing="exact",
        cache=cache,
    )  # fmt: skip
    assert (report.failed, report.extraction_cost.calls) == ([], 2)
    fix = openai_server.chat_requests[1].body["messages"][-1]["content"]
    assert fix.startswith("That reply was invalid: reply does not match LLMExtraction: <root>: Value error, ")
    assert await store.counts() == (3, 2)
    [cached] = cache._conn.execute("SELECT extraction FROM extractions").fetchall()
    assert json.loads(cached[0])["relations"][0]["target"] == "Christopher Nolan"
