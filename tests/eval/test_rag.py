"""vector-rag and iter-rag through litellm against the local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pydantic import SecretStr
from servers.openai_server import Fail, OpenAIServer, Reply

from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Passage, Question
from graphwalk_core.eval.runner import run_eval, run_eval_async
from graphwalk_core.eval.systems.base import QASystem, SkippedSystem
from graphwalk_core.eval.systems.registry import build_system
from graphwalk_core.llm.litellm_backend import LiteLLMBackend

PASSAGES = (
    Passage(id="Alpha", title="Alpha", text="Alpha is a river in Freedonia. Its source is Lake Beta."),
    Passage(id="Beta", title="Beta", text="Lake Beta lies 42 metres above sea level."),
    Passage(id="Gamma", title="Gamma", text="Gamma is a town of bakers and painters."),
)


def _dataset() -> Dataset:
    q = Question(
        id="q1", text="How high above sea level is the source of the river Alpha?", gold=["42 metres"]
    )
    return Dataset(
        name="toytext",
        split="dev",
        questions=[q],
        knowledge=Knowledge(graph="passages", passages=PASSAGES, source="toytext"),
        match="token",
    )


def _llm(server: OpenAIServer) -> LiteLLMBackend:
    return LiteLLMBackend(
        "openai/test-model", api_base=server.base_url, api_key=SecretStr("sk-test"), backoff_s=0.01
    )


def _rag(name: str, server: OpenAIServer, *, k: int) -> QASystem:
    """A RAG system over the test dataset, reading through the local OpenAI-compatible server."""
    return build_system(
        name, _dataset(), decider=None, embedder=HashingEmbedder(), llm=_llm(server), overrides={"k": k}
    )


def _words(messages: list[dict]) -> int:
    return sum(len(str(m["content"]).split()) for m in messages)


def test_vector_rag_retrieves_top_k_and_reads(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(Fail(429, retry_after=0.01), Reply("42 metres | 42", cost=0.00025))
    system = _rag("vector-rag", openai_server, k=2)
    run = run_eval(_dataset(), system, out_dir=tmp_path)
    (result,) = run.results
    assert (result.status, result.predicted, result.em, result.llm_calls, result.cost_usd) == (
        "ok",
        ["42 metres", "42"],
        0.0,
        1,
        0.00025,
    )
    assert result.f1 == pytest.approx(10 / 11)  # P = (1 + 2/3) / 2 = 5/6, R = 1
    assert result.llm_model == "openai/test-model" and result.embedder == HashingEmbedder().model_id
    requests = openai_server.chat_requests
    assert len(requests) == 2  # the 429, then the retry
    messages = requests[-1].body["messages"]
    assert result.input_tokens == _words(messages)
    assert result.output_tokens == 4  # the server counts words: "42 metres | 42"
    assert result.passages == ["Alpha", "Beta"]
    assert "[1] Alpha: Alpha is a river" in messages[1]["content"]
    assert messages[1]["content"].endswith(
        "Question: How high above sea level is the source of the river Alpha?\nAnswer:"
    )


def test_iter_rag_looks_up_then_answers(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(
        Reply(json.dumps({"lookup": ["Beta", "Nowhere Else"]}), cost=0.0001),
        Reply(json.dumps({"answer": "42 metres"}), cost=0.0002),
    )
    system = _rag("iter-rag", openai_server, k=1)
    run = run_eval(_dataset(), system, out_dir=tmp_path)
    (result,) = run.results
    assert (result.predicted, result.em, result.f1, result.llm_calls) == (["42 metres"], 1.0, 1.0, 2)
    assert result.cost_usd == pytest.approx(0.0003)
    assert result.passages[0] == "Alpha" and "Beta" in result.passages
    second = openai_server.chat_requests[1].body["messages"][-1]["content"]
    assert "Lake Beta lies 42 metres above sea level." in second


def test_iter_rag_forces_an_answer_when_a_lookup_adds_nothing(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue(Reply(json.dumps({"lookup": ["Alpha"]})), Reply("forty-two"))
    system = _rag("iter-rag", openai_server, k=3)
    (result,) = run_eval(_dataset(), system, out_dir=tmp_path).results
    assert (result.predicted, result.llm_calls, result.cost_usd) == (["forty-two"], 2, None)
    assert (
        openai_server.chat_requests[1]
        .body["messages"][0]["content"]
        .startswith("You answer questions using only")
    )


def test_iter_rag_counts_the_cost_of_a_step_that_never_validated(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue(
        Reply("no json", completion_tokens=2, cost=0.001),
        Reply("still none", completion_tokens=2, cost=0.002),
        Reply("42 metres", completion_tokens=2, cost=0.004),
    )
    system = _rag("iter-rag", openai_server, k=1)
    (result,) = run_eval(_dataset(), system, out_dir=tmp_path).results
    assert (result.predicted, result.llm_calls, result.output_tokens) == (["42 metres"], 2, 6)
    assert result.cost_usd == pytest.approx(0.007)
    assert result.input_tokens == sum(_words(r.body["messages"]) for r in openai_server.chat_requests)


def test_iter_rag_step_that_failed_on_the_transport_is_not_taken_for_an_invalid_reply(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """429s outlasting the LLM's retries on a step were caught as 'the step reply never validated': the
    walk fell back to a plain read and recorded that as iter-rag's answer. The failure now reaches the
    runner, which backs off from the rate limit and asks the question again."""
    openai_server.enqueue(*[Fail(429, retry_after=0.01)] * 3, Reply(json.dumps({"answer": "42 metres"})))
    llm = LiteLLMBackend("openai/test-model", openai_server.base_url, SecretStr("sk-test"), max_retries=2)
    system = build_system("iter-rag", _dataset(), decider=None, embedder=HashingEmbedder(), llm=llm)
    run = asyncio.run(run_eval_async(_dataset(), system, out_dir=tmp_path, rate_limit_base_delay_s=0.01))
    (result,) = run.results
    assert (result.status, result.predicted, result.llm_calls) == ("ok", ["42 metres"], 1)
    assert result.trace["steps"] == [{"answer": "42 metres"}]
    assert len(openai_server.chat_requests) == 4
    assert openai_server.chat_requests[3].body["response_format"] == {"type": "json_object"}


def test_systems_without_an_llm_are_skipped_with_the_reason() -> None:
    for name in ("vector-rag", "iter-rag", "graph-reader"):
        system = build_system(name, _dataset(), decider=None, embedder=HashingEmbedder(), llm=None)
        assert isinstance(system, SkippedSystem)
        assert system.reason == "no LLM configured (set GRAPHWALK_LLM_MODEL)"
    walk = build_system(
        "relation-greedy",
        _dataset(),
        decider=None,
        embedder=None,
        llm=None,
        skip_reason={"decider": "no Jev key"},
    )
    assert isinstance(walk, SkippedSystem) and walk.reason == "no Jev key"


def test_reader_reply_parsing() -> None:
    from graphwalk_core.eval.systems.llm_reader import parse_answers

    assert parse_answers("Answer: Paris | 'Lyon'. | unknown |  ") == ["Paris", "Lyon"]
    assert parse_answers("None") == []
    assert parse_answers("20 March 851.") == ["20 March 851"]


def test_document_index_search_breaks_ties_at_the_cut_by_document_order() -> None:
    """vector-rag's top k is the dense ranker's top k: a tie at the cut keeps the earlier document."""
    import numpy as np

    from graphwalk_core.eval.systems.documents import Document, DocumentIndex

    class OneAxis:
        dim, model_id = 1, "one-axis"

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 1), dtype=np.float32)

    vectors = np.ones((8, 1), dtype=np.float32)
    vectors[4] = 2.0
    docs = [Document(id=f"d{i}", title=f"d{i}", text=f"d{i}") for i in range(8)]
    index = DocumentIndex(docs, vectors, OneAxis())  # type: ignore[arg-type]
    assert [d.id for d, _ in index.search("q", 3)] == ["d4", "d0", "d1"]


async def test_node_documents_are_the_same_from_every_store(tmp_path: Path) -> None:
    """A node's document shows its first ``max_triples`` triples by key (outgoing by relation and
    neighbor, then incoming), not the store's adjacency order: the memory store's insertion order gave a
    triples file other vector-rag documents than the same graph in SQLite."""
    from graphwalk_core.eval.systems.documents import node_documents
    from graphwalk_core.model import Edge, Node, Provenance
    from graphwalk_core.stores.base import upsert_many
    from graphwalk_core.stores.memory import MemoryGraphStore
    from graphwalk_core.stores.sql import SQLGraphStore

    prov = (Provenance(source_id="s", document_id="d"),)
    nodes = [Node(id=n, type="film", name=n, provenance=prov) for n in ("Hub", "Zed", "Amy", "Bo")]
    edges = [
        Edge(source="Zed", type="starred", target="Hub", provenance=prov),
        Edge(source="Hub", type="starred", target="Zed", provenance=prov),
        Edge(source="Hub", type="directed_by", target="Bo", provenance=prov),
        Edge(source="Hub", type="directed_by", target="Amy", provenance=prov),
    ]
    memory, sql = MemoryGraphStore(), SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    for store in (memory, sql):
        await upsert_many(store, nodes, edges)
    docs = [{d.id: d.text for d in await node_documents(store, max_triples=2)} for store in (memory, sql)]
    await sql.close()
    assert docs[0]["Hub"] == "Hub (film). Hub directed_by Amy. Hub directed_by Bo."
    assert docs[0] == docs[1]


async def test_a_cancelled_document_index_build_stops_after_the_batch_in_flight() -> None:
    """The passage index was embedded on one worker thread from start to end: Ctrl-C (a cancellation)
    left it running every remaining batch (minutes of a corpus, paid calls of a remote embedder) and the
    process waited for it at exit. Each batch is its own thread call now: the build stops after the one
    in flight."""
    from graphwalk_core.eval.systems.documents import document_index

    class Slow:
        model_id, dim = "slow", 2

        def __init__(self) -> None:
            self.calls = 0
            self.started = threading.Event()

        def embed(self, texts: list[str]) -> np.ndarray:
            self.calls += 1
            self.started.set()
            time.sleep(0.1)
            return np.ones((len(texts), 2), dtype=np.float32)

    embedder = Slow()
    passages = tuple(Passage(id=f"p{i}", title=f"t{i}", text=f"passage {i}") for i in range(5 * 256))
    knowledge = Knowledge(graph="passages", passages=passages, source="cancelled-build")
    task = asyncio.create_task(document_index(knowledge, embedder, kind="passages"))  # type: ignore[arg-type]
    while not embedder.started.is_set():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.6)  # what was left running would embed the other four batches meanwhile
    assert embedder.calls == 1
