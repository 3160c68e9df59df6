"""Incremental ingestion: differential equality, free reruns, retries, retraction and routing behaviour."""

from __future__ import annotations

import asyncio
import gc
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import BackendError, ConfigError, InputError
from graphwalk_core.ingest import pipeline
from graphwalk_core.ingest.ledger import read_ledger, write_entry
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.resolution import base_node_id
from graphwalk_core.ingest.sources import FileSource, SourceDocument
from graphwalk_core.ingest.sources.mapping import load_mappings
from graphwalk_core.ingest.text import name_words, normalize_name
from graphwalk_core.llm.fake import FakeLLM
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.sql import SQLGraphStore

from .conftest import ScriptedExtractor, graph_tables, same_name_script

CORPUS_A = {
    "a.txt": "E Christopher Nolan|person|born=1970|British director\nE Inception|film|year=2010\n"
    "R Inception|directed_by|Christopher Nolan",
    "b.txt": "E Inception|film|year=2011\nE Tom Hardy|person\nR Inception|starred|Tom Hardy\nE London|city",
    "c.txt": "E Tom Hardy|person|born=1977\nE London|place\nR Tom Hardy|born_in|London",
}


def write(root: Path, files: dict[str, str | None]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        if text is None:
            (root / name).unlink()
        else:
            (root / name).write_text(text, encoding="utf-8")


async def run(
    root: Path, store: GraphStore, extractor: ScriptedExtractor, decider: FakeDecisionBackend, **kw
):
    return await ingest(
        FileSource(root, source_id="docs"),
        store,
        extractor=extractor,
        decider=decider,
        embedder=HashingEmbedder(),
        routing="jev",
        **kw,
    )


async def test_differential_incremental_equals_fresh(
    tmp_path: Path, new_store: Callable[[], GraphStore]
) -> None:
    corpus = tmp_path / "corpus"
    write(corpus, CORPUS_A)
    store, extractor, decider = (
        new_store(),
        ScriptedExtractor(),
        FakeDecisionBackend(script=same_name_script),
    )
    first = await run(corpus, store, extractor, decider)
    assert (first.new, first.update.conflicts) == (3, 2)  # Inception.year, London's type
    write(
        corpus,
        {
            "b.txt": "E Inception|film|year=2010\nE Tom Hardy|person\nR Inception|starred|Tom Hardy\n"
            "E Emma Thomas|person\nR Emma Thomas|produced|Inception",
            "c.txt": None,
            "d.txt": "E London|city|country=UK\nE Christopher Nolan|person\n"
            "R Christopher Nolan|born_in|London",
        },
    )
    second = await run(corpus, store, extractor, decider)
    assert (second.new, second.changed, second.unchanged, second.deleted) == (1, 1, 1, 1)
    assert extractor.calls == 5
    fresh_store = new_store()
    await run(corpus, fresh_store, ScriptedExtractor(), FakeDecisionBackend(script=same_name_script))
    incremental, fresh = await graph_tables(store, "docs"), await graph_tables(fresh_store, "docs")
    assert incremental == fresh
    names = {n["name"]: n for n in fresh["nodes"]}
    assert sorted(names) == ["Christopher Nolan", "Emma Thomas", "Inception", "London", "Tom Hardy"]
    assert names["Inception"]["attributes"] == {"year": 2010} and names["Inception"]["conflicts"] == {}
    assert names["Tom Hardy"]["attributes"] == {}  # born=1977 came from the deleted c.txt
    assert names["London"]["type"] == "city" and names["London"]["attributes"] == {"country": "UK"}
    assert names["London"]["id"] == base_node_id("London")
    assert len(fresh["edges"]) == 4
    assert [row[0] for row in fresh["ledger"]] == ["a.txt", "b.txt", "d.txt"]


async def test_rerun_unchanged_costs_nothing(tmp_path: Path) -> None:
    write(tmp_path, CORPUS_A)
    store, extractor, decider = (
        MemoryGraphStore(),
        ScriptedExtractor(),
        FakeDecisionBackend(script=same_name_script),
    )
    await run(tmp_path, store, extractor, decider)
    before = await graph_tables(store, "docs")
    ledger_before = await read_ledger(store, "docs")
    calls = (extractor.calls, decider.calls)
    assert calls == (3, 1)  # only London (city vs place) is asked: Inception and Tom Hardy match uniquely
    again = await run(tmp_path, store, extractor, decider)
    assert (extractor.calls, decider.calls) == calls
    assert (again.unchanged, again.chunks, again.mentions, again.routing_cost.calls) == (3, 0, 0, 0)
    assert await graph_tables(store, "docs") == before
    assert await read_ledger(store, "docs") == ledger_before  # not even rewritten


async def test_failed_chunk_marks_document_incomplete_and_retries(
    tmp_path: Path, new_store: Callable[[], GraphStore]
) -> None:
    write(
        tmp_path,
        {"a.txt": "E Alpha|thing|note=" + "x" * 25 + "\n\nE Beta|thing\nFAIL", "b.txt": "E Gamma|thing"},
    )
    store, extractor, decider = (
        new_store(),
        ScriptedExtractor(),
        FakeDecisionBackend(script=same_name_script),
    )
    report = await run(tmp_path, store, extractor, decider, max_chars=50)
    assert report.failed == ["a.txt"]
    ledger = await read_ledger(store, "docs")
    assert (ledger["a.txt"].status, ledger["b.txt"].status) == ("incomplete", "complete")
    assert ledger["a.txt"].errors == ["chunk 1 (46-63): scripted extractor failure"]
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Alpha", "Gamma"]
    extractor.fail = False
    retry = await run(tmp_path, store, extractor, decider, max_chars=50)
    assert (retry.incomplete, retry.unchanged, retry.failed) == (1, 1, [])
    fresh, working = new_store(), ScriptedExtractor()
    working.fail = False
    await run(tmp_path, fresh, working, FakeDecisionBackend(script=same_name_script), max_chars=50)
    assert await graph_tables(store, "docs") == await graph_tables(fresh, "docs")


async def test_a_changed_document_whose_extraction_fails_keeps_what_it_gave(
    tmp_path: Path, new_store: Callable[[], GraphStore], caplog: pytest.LogCaptureFixture
) -> None:
    """An extraction that fails (a model outage) is no deletion: the edited document's old facts were
    retracted and only the chunks that extracted written (here none), so a failed run emptied the graph
    of it. Now it keeps its elements and ledger entry until it extracts in full; a later window routes
    to its nodes (read back, not a reload), and the retry gives a fresh ingest's graph."""
    write(tmp_path, {"a.txt": "E Alice|person|born=1\nE Bob|person\nR Alice|knows|Bob"})
    store, extractor, decider = new_store(), ScriptedExtractor(), FakeDecisionBackend(script=same_name_script)
    await run(tmp_path, store, extractor, decider)
    before, ledger = await graph_tables(store, "docs"), await read_ledger(store, "docs")
    write(
        tmp_path,
        {
            "a.txt": "E Alice|person|born=2\nE Bob|person\nR Alice|knows|Bob\nFAIL",
            "b.txt": "E Alice|person\nE Carol|person\nR Carol|knows|Alice",
        },
    )
    report = await run(tmp_path, store, extractor, decider, window=1)
    assert (report.changed, report.new, report.failed, report.update.ledger_written) == (1, 1, ["a.txt"], 1)
    assert (await read_ledger(store, "docs"))["a.txt"] == ledger["a.txt"]
    after = await graph_tables(store, "docs")
    alice = next(n for n in after["nodes"] if n["name"] == "Alice")
    assert (alice["attributes"], sorted({p["source_id"] for p in alice["provenance"]})) == (
        {"born": 1},
        ["docs/a.txt", "docs/b.txt"],
    )
    assert sorted(n["name"] for n in after["nodes"]) == ["Alice", "Bob", "Carol"]
    assert [e for e in after["edges"] if e in before["edges"]] == before["edges"]
    assert "out of step" not in caplog.text
    extractor.fail = False
    retry = await run(tmp_path, store, extractor, decider)
    assert (retry.changed, retry.unchanged, retry.failed) == (1, 1, [])
    fresh, working = new_store(), ScriptedExtractor()
    working.fail = False
    await run(tmp_path, fresh, working, FakeDecisionBackend(script=same_name_script))
    assert await graph_tables(store, "docs") == await graph_tables(fresh, "docs")


def alias_script(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
    """Same name, else a candidate whose name words contain the mention's (``Nolan`` -> ``Chris Nolan``)."""
    answer = same_name_script(question, state)
    if "NEW" not in answer:
        return answer
    assert isinstance(question.instructions, dict)
    words = name_words(question.instructions["mention"]["name"])
    for label, card in question.options.items():
        if isinstance(card, dict) and words <= name_words(str(card["name"])):
            return {label: 1.0}
    return answer


async def test_retraction_rederives_name_summary_and_conflicts(
    tmp_path: Path, new_store: Callable[[], GraphStore]
) -> None:
    write(
        tmp_path,
        {
            "a.txt": "E Nolan|person|born=1970|Director A",
            "b.txt": "E Chris Nolan|person|born=1971|Director B, longer",
            "c.txt": "E Chris Nolan|person",
        },
    )
    store = new_store()
    decider = FakeDecisionBackend(script=lambda q, s: {"c1": 1.0})
    await run(tmp_path, store, ScriptedExtractor(), decider)
    [node] = [n async for n in store.iter_nodes()]
    assert node.id == base_node_id("Nolan")
    assert (node.name, node.aliases, node.summary) == ("Chris Nolan", ("Nolan",), "Director B, longer")
    assert node.attributes == {"born": 1970} and list(node.conflicts) == ["born"]
    write(tmp_path, {"b.txt": None, "c.txt": None})
    report = await run(tmp_path, store, ScriptedExtractor(), decider)
    assert (report.deleted, report.update.nodes_retracted, report.update.nodes_deleted) == (2, 2, 0)
    [node] = [n async for n in store.iter_nodes()]
    assert (node.name, node.aliases, node.summary) == ("Nolan", (), "Director A")
    assert (node.attributes, node.conflicts) == ({"born": 1970}, {})
    assert {p.source_id for p in node.provenance} == {"docs/a.txt"}


async def test_mentions_in_one_chunk_with_different_names_can_merge(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"a.txt": "E Christopher Nolan|person\nE Nolan|person\nE Inception|film\nR Inception|by|Nolan"},
    )
    store, decider = MemoryGraphStore(), FakeDecisionBackend(script=alias_script)
    report = await run(tmp_path, store, ScriptedExtractor(), decider)
    assert decider.calls == 1 and report.routing_cost.calls == 1
    [question] = decider.questions
    assert question.options["c1"] == {
        "name": "Christopher Nolan",
        "type": "person",
        "summary": None,
        "note": "named earlier in this passage",
    }
    nodes = {n.name: n async for n in store.iter_nodes()}
    assert sorted(nodes) == ["Christopher Nolan", "Inception"]
    assert nodes["Christopher Nolan"].aliases == ("Nolan",)
    [edge] = [e async for e in store.iter_edges()]
    assert (edge.source, edge.type, edge.target) == (
        nodes["Inception"].id,
        "by",
        nodes["Christopher Nolan"].id,
    )


async def test_later_mentions_route_to_nodes_planned_earlier_in_the_run(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "E Christopher Nolan|person", "b.txt": "E Nolan|person"})
    store, decider = MemoryGraphStore(), FakeDecisionBackend(script=alias_script)
    await run(tmp_path, store, ScriptedExtractor(), decider)
    assert [n.aliases async for n in store.iter_nodes()] == [("Nolan",)]


async def test_decider_failure_merges_only_on_exact_names(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"a.txt": "E Christopher Nolan|person", "b.txt": "E Christopher Nolan|person\nE Nolan|person"},
    )
    store, decider = MemoryGraphStore(), FakeDecisionBackend(fail_after=0)
    report = await run(tmp_path, store, ScriptedExtractor(), decider)
    assert (decider.calls, report.fallbacks) == (1, 1)  # the unique exact match needs no call
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Christopher Nolan", "Nolan"]
    # the document routed without its decider is left incomplete: the next run routes it again (before,
    # it was ledgered complete and its duplicate "Nolan" stayed for good once the decider was back)
    assert report.failed == ["b.txt"]
    assert [(e.document_id, e.status) for e in (await read_ledger(store, "docs")).values()] == [
        ("a.txt", "complete"),
        ("b.txt", "incomplete"),
    ]
    again = await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(script=alias_script))
    assert (again.incomplete, again.unchanged, again.failed) == (1, 1, [])
    assert [(n.name, n.aliases) async for n in store.iter_nodes()] == [("Christopher Nolan", ("Nolan",))]


async def test_an_edit_routed_without_its_decider_is_written_and_routed_again(tmp_path: Path) -> None:
    """A changed document whose routing decision failed (an outage) holds every fact it states: unlike a
    failed extraction, which keeps the document's earlier facts, its new ones are written (merged on exact
    names) and it is left incomplete, so the next run routes it again."""
    write(tmp_path, {"a.txt": "E Christopher Nolan|person", "b.txt": "E Memento|film"})
    store = MemoryGraphStore()
    await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(script=alias_script))
    write(tmp_path, {"b.txt": "E Christopher Nolan|person\nE Nolan|person"})
    down = await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(fail_after=0))
    assert (down.changed, down.fallbacks, down.failed) == (1, 1, ["b.txt"])
    assert sorted([n.name async for n in store.iter_nodes()]) == ["Christopher Nolan", "Nolan"]
    back = await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(script=alias_script))
    assert (back.incomplete, back.failed) == (1, [])
    assert [(n.name, n.aliases) async for n in store.iter_nodes()] == [("Christopher Nolan", ("Nolan",))]


async def test_a_billed_routing_reply_that_broke_the_contract_counts_its_tokens(tmp_path: Path) -> None:
    """Jev answered a routing question with a label not offered: the call fell back to exact names, and
    its billed tokens were dropped from the routing cost."""
    from pydantic import SecretStr
    from servers.jev_server import TOKENS_IN_PER_QUESTION, JevServer, Reply

    from graphwalk_core.decisions.jev import JevBackend

    def unknown_label(body: dict) -> dict:
        next(iter(body["answers"].values()))["probabilities"]["c99"] = 0.1
        return body

    write(tmp_path, {"a.txt": "E Christopher Nolan|person", "b.txt": "E Nolan|person"})
    with JevServer() as server:
        server.enqueue(Reply(edit=unknown_label))
        jev = JevBackend(SecretStr("sk-test-0123456789"), base_url=server.base_url, max_retries=0)
        report = await run(tmp_path, MemoryGraphStore(), ScriptedExtractor(), jev)  # type: ignore[arg-type]
        [call] = server.calls()
    assert (report.fallbacks, report.routing_cost.calls) == (1, 1)
    assert report.routing_cost.input_tokens == TOKENS_IN_PER_QUESTION * len(call.json["questions"])


@pytest.mark.parametrize("status", [401, 402, 403])
async def test_a_refused_key_stops_routing_instead_of_merging_on_exact_names(
    tmp_path: Path, status: int
) -> None:
    """A wrong or expired Jev key (or no credits left) fell back like an outage: every mention merged on
    exact names only, the documents were ledgered complete, and a rerun with the right key left them so.
    The ingest now stops with the error, before anything is written."""
    from pydantic import SecretStr
    from servers.jev_server import JevServer, Reply

    from graphwalk_core.decisions.base import DecisionError
    from graphwalk_core.decisions.jev import JevBackend
    from graphwalk_core.ingest.ledger import read_ledger

    write(tmp_path, {"a.txt": "E Christopher Nolan|person", "b.txt": "E Nolan|person"})
    store = MemoryGraphStore()
    with JevServer() as server:
        server.enqueue(Reply(status, {"error": "invalid API key"}))
        jev = JevBackend(SecretStr("sk-test-0123456789"), base_url=server.base_url, max_retries=0)
        with pytest.raises(DecisionError, match=rf"HTTP {status}: .*invalid API key"):
            await run(tmp_path, store, ScriptedExtractor(), jev)  # type: ignore[arg-type]
    assert await store.counts() == (0, 0)
    assert await read_ledger(store, "docs") == {}


async def test_low_confidence_escalates_to_the_llm(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "E Chris Nolan|person", "b.txt": "E Nolan|person"})
    llm = FakeLLM('{"choice": "c1"}')
    decider = FakeDecisionBackend(script=lambda q, s: {"c1": 0.45, "NEW": 0.55})
    store = MemoryGraphStore()
    report = await run(tmp_path, store, ScriptedExtractor(), decider, llm=llm)
    assert (report.escalations, len(llm.calls), decider.calls) == (1, 1, 1)
    [node] = [n async for n in store.iter_nodes()]
    assert node.aliases == ("Nolan",)
    assert sorted(p.confidence for p in node.provenance) == [0.45, 1.0]


async def test_a_failed_escalation_still_counts_its_calls(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "E Chris Nolan|person", "b.txt": "E Nolan|person"})
    llm = FakeLLM('{"choice": 3}')  # never validates: two billed replies
    decider = FakeDecisionBackend(script=lambda q, s: {"c1": 0.45, "NEW": 0.55})
    report = await run(tmp_path, MemoryGraphStore(), ScriptedExtractor(), decider, llm=llm)
    assert (len(llm.calls), decider.calls, report.routing_cost.calls) == (2, 1, 3)
    assert report.routing_cost.output_tokens == 10 + 2 + 2  # the decision's, then 2 words per LLM reply


async def test_new_for_a_taken_id_is_disambiguated_deterministically(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "E Paris|city", "b.txt": "E Paris|person"})
    store = MemoryGraphStore()
    await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(script=lambda q, s: {"NEW": 1.0}))
    nodes = sorted([(n.type, n.id) async for n in store.iter_nodes()])
    assert [t for t, _ in nodes] == ["city", "person"]
    assert dict(nodes)["city"] == base_node_id("Paris")
    assert dict(nodes)["person"] != base_node_id("Paris")


async def test_exact_routing_makes_no_calls(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "E Nolan|person\nE Inception|film", "b.txt": "E nolan|person\nE Dune|film"})
    store = MemoryGraphStore()
    report = await ingest(FileSource(tmp_path), store, extractor=ScriptedExtractor(), routing="exact")
    assert report.routing_cost.calls == 0
    assert sorted([normalize_name(n.name) async for n in store.iter_nodes()]) == [
        "dune",
        "inception",
        "nolan",
    ]


async def test_exact_routing_merges_one_chunks_mentions_of_one_name(tmp_path: Path) -> None:
    # a director who also stars, and one name in two spellings, in one record: a fresh ingest gave each
    # second mention a node of its own (nd_...) that an incremental run, finding the first in the
    # graph, merged into it
    row = "Unforgiven,Clint Eastwood,Clint Eastwood|Gene Hackman|GENE HACKMAN"
    write(tmp_path, {"films.csv": f"title,director,stars\n{row}\n"})
    mapping = {
        "name": "title",
        "type": "film",
        "relations": [
            {"column": "director", "type": "directed_by", "target_type": "person"},
            {"column": "stars", "type": "starred", "target_type": "person", "split": "|"},
        ],
    }
    store = MemoryGraphStore()
    source = FileSource(tmp_path, mappings=load_mappings(mapping))
    await ingest(source, store, routing="exact")
    nodes = {n.name: n async for n in store.iter_nodes()}
    assert sorted((n.id, n.name, n.aliases) for n in nodes.values()) == sorted(
        [
            (base_node_id("Unforgiven"), "Unforgiven", ()),
            (base_node_id("Clint Eastwood"), "Clint Eastwood", ()),
            (base_node_id("Gene Hackman"), "GENE HACKMAN", ("Gene Hackman",)),
        ]
    )
    film, clint, gene = (nodes[name].id for name in ("Unforgiven", "Clint Eastwood", "GENE HACKMAN"))
    assert sorted([(e.source, e.type, e.target) async for e in store.iter_edges()]) == sorted(
        [(film, "directed_by", clint), (film, "starred", clint), (film, "starred", gene)]
    )


async def test_a_new_chunk_size_re_extracts_text_documents(tmp_path: Path) -> None:
    """The chunk size decides a text document's chunks, so its extraction: a run with another one re-extracted
    nothing (the ledger did not know it) and the graph was neither the old size's nor the new one's."""
    write(
        tmp_path,
        {"a.txt": "E Christopher Nolan|person|born=1970\n\nE Inception|film", "b.txt": "E Dune|film"},
    )
    (tmp_path / "films.csv").write_text("title\nDune\n", encoding="utf-8")
    mapped = load_mappings({"name": "title"})

    async def run_at(store: GraphStore, **kw: Any) -> Any:
        source = FileSource(tmp_path, source_id="docs", mappings=mapped)
        return await ingest(source, store, extractor=ScriptedExtractor(), routing="exact", **kw)

    store, fresh = MemoryGraphStore(), MemoryGraphStore()
    await run_at(store)
    small = await run_at(store, max_chars=50)
    assert (small.changed, small.unchanged, small.chunks) == (2, 1, 3)  # a mapped record is no chunked text
    await run_at(fresh, max_chars=50)
    assert await graph_tables(store, "docs") == await graph_tables(fresh, "docs")
    again = await run_at(store, max_chars=50)
    assert (again.changed, again.unchanged) == (0, 3)


async def test_reordered_columns_re_extract_records_read_as_text(tmp_path: Path) -> None:
    """A record without a mapping is extracted from its text, whose lines follow the columns: reordering
    them left the record unchanged (its hash is the record's, in any order), so its provenance named the
    old text's chunk, and the graph was not a fresh ingest's."""
    (tmp_path / "a.csv").write_text("name,city\nChristopher Nolan,London\n", encoding="utf-8")
    (tmp_path / "m.csv").write_text("name,city\nEmma Thomas,London\n", encoding="utf-8")
    mapped = load_mappings({"m.csv": {"name": "name"}})
    store, fresh = MemoryGraphStore(), MemoryGraphStore()
    await ingest(FileSource(tmp_path, source_id="docs", mappings=mapped), store, routing="exact")
    (tmp_path / "a.csv").write_text("city,name\nLondon,Christopher Nolan\n", encoding="utf-8")
    (tmp_path / "m.csv").write_text("city,name\nLondon,Emma Thomas\n", encoding="utf-8")
    again = await ingest(FileSource(tmp_path, source_id="docs", mappings=mapped), store, routing="exact")
    assert (again.changed, again.unchanged) == (1, 1)  # a mapped record is read from its fields
    await ingest(FileSource(tmp_path, source_id="docs", mappings=mapped), fresh, routing="exact")
    assert await graph_tables(store, "docs") == await graph_tables(fresh, "docs")


async def test_jev_routing_of_one_chunks_repeated_literal_is_versioned(tmp_path: Path) -> None:
    # the exact:2 change (a mention without candidates looks up the nodes the chunk's earlier mentions
    # made) routes jev too: a record's two columns of one year were two nodes, one of them bare (nd_...);
    # a document ledgered as jev:2 was routed that way, so it is re-routed once
    write(tmp_path, {"films.csv": "title,year,remake_year\nUnforgiven,1992,1992\n"})
    mapping = {
        "name": "title",
        "type": "film",
        "relations": [
            {"column": "year", "type": "released", "target_type": "year"},
            {"column": "remake_year", "type": "remade", "target_type": "year"},
        ],
    }
    store, decider = MemoryGraphStore(), FakeDecisionBackend(script=same_name_script)

    async def jev() -> Any:
        source = FileSource(tmp_path, source_id="films", mappings=load_mappings(mapping))
        return await ingest(source, store, decider=decider, embedder=HashingEmbedder(), routing="jev")

    await jev()
    assert sorted([(n.id, n.name) async for n in store.iter_nodes()]) == [
        (base_node_id("1992"), "1992"),
        (base_node_id("Unforgiven"), "Unforgiven"),
    ]
    [(doc_id, entry)] = (await read_ledger(store, "films")).items()
    await write_entry(store, "films", entry.model_copy(update={"routing": "jev:2"}))
    report = await jev()
    assert (report.changed, report.unchanged) == (1, 0)
    assert (await read_ledger(store, "films"))[doc_id].routing == "jev:4"


async def test_a_run_holds_one_window_of_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The documents to process wait in the spool, not in memory: while a window applies, the only
    documents alive are that window's and the next one's (read ahead to extract it early), never the
    corpus; and the graph is the one-window run's."""
    write(
        tmp_path,
        {
            f"spooled-{n}.txt": f"E Name {n}|person\nE Shared|city\nR Name {n}|lives_in|Shared"
            for n in range(6)
        },
    )
    alive: list[list[str]] = []
    apply_plan = pipeline.apply_plan

    async def counted(*args: Any, **kwargs: Any) -> Any:
        gc.collect()  # alive: reachable
        documents = (o for o in gc.get_objects() if isinstance(o, SourceDocument))
        alive.append(sorted(d.id for d in documents if d.id.startswith("spooled-")))  # not other tests'
        return await apply_plan(*args, **kwargs)

    monkeypatch.setattr(pipeline, "apply_plan", counted)
    store = MemoryGraphStore()
    await ingest(FileSource(tmp_path), store, extractor=ScriptedExtractor(), routing="exact", window=2)
    assert alive == [
        [f"spooled-{n}.txt" for n in range(4)],
        [f"spooled-{n}.txt" for n in range(2, 6)],
        ["spooled-4.txt", "spooled-5.txt"],
    ]
    whole = MemoryGraphStore()
    monkeypatch.setattr(pipeline, "apply_plan", apply_plan)
    await ingest(FileSource(tmp_path), whole, extractor=ScriptedExtractor(), routing="exact", window=6)
    assert await graph_tables(store) == await graph_tables(whole)


async def test_no_room_for_temporary_files_fails_the_run_before_the_graph_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "docs", {"a.txt": "E Nolan|person"})
    missing = tmp_path / "no-such-folder"
    monkeypatch.setattr(tempfile, "tempdir", str(missing))
    store = MemoryGraphStore()
    with pytest.raises(ConfigError) as error:
        await ingest(FileSource(tmp_path / "docs"), store, extractor=ScriptedExtractor(), routing="exact")
    assert str(error.value) == (
        f"cannot create a file for the documents to process in the temporary folder {missing}: "
        "No such file or directory (set TMPDIR to a folder with room)"
    )
    assert await store.counts() == (0, 0) and await store.metadata_keys() == []


async def test_a_tmpdir_python_would_pass_over_fails_the_run_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TMPDIR set to a folder that does not exist: Python's tempfile would silently use /tmp (maybe held in
    memory) instead, so the run stops naming TMPDIR before the graph changes."""
    write(tmp_path / "docs", {"a.txt": "E Nolan|person"})
    missing = tmp_path / "no-such-folder"
    monkeypatch.setenv("TMPDIR", str(missing))
    monkeypatch.setattr(tempfile, "tempdir", None)  # chosen again from the environment
    store = MemoryGraphStore()
    with pytest.raises(ConfigError) as error:
        await ingest(FileSource(tmp_path / "docs"), store, extractor=ScriptedExtractor(), routing="exact")
    assert str(error.value) == (
        f"cannot create a file for the documents to process: TMPDIR is {missing}, which does not exist or "
        f"cannot be written (Python would use {tempfile.gettempdir()} instead): create it, or unset TMPDIR"
    )
    assert await store.counts() == (0, 0) and await store.metadata_keys() == []


async def test_a_window_of_no_documents_is_refused_before_a_deleted_document_is_retracted(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"a.txt": "E Alpha|thing", "b.txt": "E Beta|thing"})
    store, source = MemoryGraphStore(), FileSource(tmp_path, source_id="docs")
    await ingest(source, store, extractor=ScriptedExtractor(), routing="exact")
    before = await graph_tables(store, "docs")
    write(tmp_path, {"b.txt": None})
    with pytest.raises(InputError) as error:
        await ingest(source, store, extractor=ScriptedExtractor(), routing="exact", window=0)
    assert str(error.value) == "the routing window must be >= 1 document, got 0"
    assert await graph_tables(store, "docs") == before  # b.txt's facts and ledger entry kept


async def test_unreadable_input_keeps_its_old_data(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "E Alpha|thing", "b.txt": "E Beta|thing"})
    store, decider = MemoryGraphStore(), FakeDecisionBackend(script=same_name_script)
    await run(tmp_path, store, ScriptedExtractor(), decider)
    before = await graph_tables(store, "docs")
    (tmp_path / "a.txt").write_bytes(b"\xff not utf-8")
    report = await run(tmp_path, store, ScriptedExtractor(), decider)
    assert (report.kept, report.deleted, report.unchanged) == (1, 0, 1)
    assert [s.describe() for s in report.skipped] == ["a.txt:1: not UTF-8: invalid byte 0xff at offset 0"]
    assert await graph_tables(store, "docs") == before


def symmetric_alias_script(question: ChoiceQuestion, state: JSONContent) -> dict[str, float]:
    """Merge when one name's words contain the other's (``Nolan`` <-> ``Chris Nolan``), else NEW."""
    assert isinstance(question.instructions, dict)
    words = name_words(question.instructions["mention"]["name"])
    for label, card in question.options.items():
        if isinstance(card, dict):
            other = name_words(str(card["name"]))
            if words <= other or other <= words:
                return {label: 1.0}
    return {"NEW": 1.0}


async def test_ids_follow_the_earliest_name_after_alias_merges(
    tmp_path: Path, new_store: Callable[[], GraphStore]
) -> None:
    write(
        tmp_path,
        {
            "b.txt": "E Chris Nolan|person",
            "c.txt": "E Chris Nolan|person\nE Inception|film\nR Inception|directed_by|Chris Nolan",
            "d.txt": "E Nolan|person",
        },
    )
    store = new_store()
    await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(script=symmetric_alias_script))
    assert [n.id for n in await store.find_nodes(name="Nolan")] == [base_node_id("Chris Nolan")]
    write(tmp_path, {"a.txt": "E Nolan|person|born=1970", "b.txt": None})
    await run(tmp_path, store, ScriptedExtractor(), FakeDecisionBackend(script=symmetric_alias_script))
    [node] = await store.find_nodes(name="Nolan")
    assert (node.id, node.name, node.aliases) == (base_node_id("Nolan"), "Nolan", ("Chris Nolan",))
    [edge] = [e async for e in store.iter_edges()]
    assert (edge.type, edge.target) == ("directed_by", base_node_id("Nolan"))
    fresh = new_store()
    await run(tmp_path, fresh, ScriptedExtractor(), FakeDecisionBackend(script=symmetric_alias_script))
    assert await graph_tables(store, "docs") == await graph_tables(fresh, "docs")


async def test_decider_routing_vetoes_candidates_whose_names_cannot_match(tmp_path: Path) -> None:
    """A decider that takes any candidate still cannot merge distinct names; short forms still merge."""
    write(
        tmp_path,
        {
            "a.txt": "E University of Kansas|org\nE Nolan|person\nE Wizards of the Lost Kingdom|work",
            "b.txt": "E University of Vermont|org\nE Chris Nolan|person\n"
            "E Wizards of the Lost Kingdom II|work",
        },
    )
    store, decider = MemoryGraphStore(), FakeDecisionBackend(script=lambda q, s: {"c1": 1.0})
    await run(tmp_path, store, ScriptedExtractor(), decider)
    nodes = sorted([(n.name, n.aliases) async for n in store.iter_nodes()])
    assert nodes == [
        ("Chris Nolan", ("Nolan",)),
        ("University of Kansas", ()),
        ("University of Vermont", ()),
        ("Wizards of the Lost Kingdom", ()),
        ("Wizards of the Lost Kingdom II", ()),
    ]
    assert [len(q.options) for q in decider.questions] == [2]  # only Chris Nolan was asked (c1, NEW)


async def test_the_ledger_records_the_routing_behaviour_and_reroutes_when_it_changes(tmp_path: Path) -> None:
    write(tmp_path, CORPUS_A)
    store, decider = MemoryGraphStore(), FakeDecisionBackend(script=same_name_script)
    await run(tmp_path, store, ScriptedExtractor(), decider)
    ledger = await read_ledger(store, "docs")
    assert {e.routing for e in ledger.values()} == {"jev:4"}
    assert (await run(tmp_path, store, ScriptedExtractor(), decider)).unchanged == 3
    old = ledger["a.txt"].model_copy(update={"routing": "jev:1"})
    await write_entry(store, "docs", old)
    report = await run(tmp_path, store, ScriptedExtractor(), decider)
    assert (report.changed, report.unchanged) == (1, 2)
    # an entry written before routing was versioned stands for name-only routing's first version
    unversioned = ledger["b.txt"].model_copy(update={"routing": ""})
    assert unversioned.matches(unversioned.content_hash, unversioned.extractor, "exact:1")
    await write_entry(store, "docs", unversioned)
    exact = await ingest(
        FileSource(tmp_path, source_id="docs"), store, extractor=ScriptedExtractor(), routing="exact"
    )
    assert (exact.changed, exact.unchanged) == (3, 0)  # decider-routed, and exact:1 (now exact:2)
    again = await ingest(
        FileSource(tmp_path, source_id="docs"), store, extractor=ScriptedExtractor(), routing="exact"
    )
    assert (again.changed, again.unchanged) == (0, 3)


async def test_routing_cards_and_graph_do_not_depend_on_the_store(tmp_path: Path) -> None:
    """A decider that reads a candidate's relations sees the same cards from a memory store (edges in
    insertion order) and a SQL store (edges by key), so both route alike and build the same graph."""
    first = {
        "a.txt": "E Christopher Nolan|person\nE Zoe Films|company\nE Alpha Pictures|company\n"
        "R Christopher Nolan|works_with|Zoe Films\nR Christopher Nolan|founded|Alpha Pictures",
    }
    seen: list[list[Any]] = []
    graphs = []
    for store in (MemoryGraphStore(), SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")):
        corpus = tmp_path / f"corpus-{len(graphs)}"
        write(corpus, first)
        decider = FakeDecisionBackend(seed=3)
        await run(corpus, store, ScriptedExtractor(), decider)
        write(corpus, {"b.txt": "E Nolan|person\nE Inception|film"})
        await run(corpus, store, ScriptedExtractor(), decider)
        seen.append([q.options for q in decider.questions])
        graphs.append(await graph_tables(store, "docs"))
        await store.close()
    cards = [card for options in seen[0] for card in options.values() if isinstance(card, dict)]
    assert ["founded -> Alpha Pictures", "works_with -> Zoe Films"] in [c.get("relations") for c in cards]
    assert seen[0] == seen[1]
    assert graphs[0] == graphs[1]


async def test_an_escalation_failing_the_run_cancels_the_others_in_flight(tmp_path: Path) -> None:
    """An escalation failing with an error that is not a backend's (an LLM not configured) failed the
    run but left the chunk's other escalations running: paid LLM calls nothing would read. They are
    cancelled with it now."""

    class Failing:
        model_id = "failing"

        def __init__(self) -> None:
            self.started = 0
            self.finished = 0

        async def complete(self, messages: Any, **_kw: Any) -> Any:
            self.started += 1
            if self.started == 2:
                raise ConfigError("no LLM key")
            await asyncio.sleep(0.05)
            self.finished += 1
            raise BackendError("unused")

    write(
        tmp_path,
        {"a.txt": "E Chris Nolan|person\nE Emma Thomas|person", "b.txt": "E Nolan|person\nE Thomas|person"},
    )
    llm = Failing()
    decider = FakeDecisionBackend(script=lambda q, s: {"c1": 0.45, "NEW": 0.55})
    with pytest.raises(ConfigError, match="no LLM key"):
        await run(tmp_path, MemoryGraphStore(), ScriptedExtractor(), decider, llm=llm)
    await asyncio.sleep(0.3)  # what was left running would finish meanwhile
    assert (llm.started, llm.finished) == (2, 0)
