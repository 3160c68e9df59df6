"""The engine on tiny graphs: exact scores, forced steps, beams, sampling, batching and answers."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from rich.console import Console

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.model import Edge, edge_id
from graphwalk_core.stores.base import first_adjacent, upsert_many
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.traversal.config import Budget, TraversalConfig
from graphwalk_core.traversal.engine import Traverser
from graphwalk_core.traversal.trace import Trace, render_trace

from .conftest import by_node, gold_path_script, graph

FLOOR = math.log(1e-3)
# A -> B -> C and A -> D: a two-hop chain with a side branch
CHAIN = [("A", "r", "B"), ("B", "r", "C"), ("A", "r", "D")]
CHAIN_SCRIPT = {"A": {"B": 0.6, "D": 0.3, "STOP": 0.1}, "B": {"C": 0.7, "STOP": 0.3}}


async def walk(store: MemoryGraphStore, script, start: list[str], **config):  # type: ignore[no-untyped-def]
    decider = FakeDecisionBackend(script=script)
    result = await Traverser(store, decider, config=TraversalConfig(**config)).walk("q?", start)
    return result, decider


@pytest.mark.parametrize("alpha", [0.0, 1.0, 0.5])
async def test_greedy_scores_every_decision_including_forced_stop(alpha: float) -> None:
    result, decider = await walk(graph(CHAIN), by_node(CHAIN_SCRIPT), ["A"], length_alpha=alpha)
    # A -> B (0.6), B -> C (0.7), C is a dead end: forced STOP with p = 1, three decisions
    expected = (math.log(0.6) + math.log(0.7)) / 3**alpha
    top = result.answers[0]
    assert (result.status, top.node_ids, top.terminated_by) == ("ok", ["C"], "dead_end")
    assert top.score == pytest.approx(expected, abs=1e-12)
    assert (top.n_choices, decider.calls, len(result.trace.steps)) == (2, 2, 3)
    assert result.trace.steps[-1].forced and result.trace.steps[-1].call_id is None
    assert [(h.source, h.target, h.edge_id) for h in top.witness] == [
        ("A", "B", edge_id("A", "r", "B")),
        ("B", "C", edge_id("B", "r", "C")),
    ]
    assert top.witness[0].source_ids == ["test"]


async def test_beam_keeps_finished_walks_in_the_pool() -> None:
    result, decider = await walk(graph(CHAIN), by_node(CHAIN_SCRIPT), ["A"], strategy="beam", beam_width=2)
    # depth 0 keeps B (log .6) and D (log .3); D is a dead end (forced STOP, score log(.3)/2) and
    # beats STOP at B ((log .6 + log .3)/2) for the second slot; C finishes at (log .6 + log .7)/3
    assert [a.node_ids for a in result.answers] == [["C"], ["D"]]
    assert [a.score for a in result.answers] == pytest.approx(
        [(math.log(0.6) + math.log(0.7)) / 3, math.log(0.3) / 2], abs=1e-12
    )
    assert decider.calls == 2
    assert result.trace.steps[0].kept == {"o1": 1, "o2": 2}


async def test_beam_floors_zero_probabilities() -> None:
    store = graph([("A", "r", "B"), ("A", "r", "C")])
    script = by_node({"A": {"B": 1.0, "C": 0.0, "STOP": 0.0}})
    result, _ = await walk(store, script, ["A"], strategy="beam", beam_width=3)
    assert [a.node_ids for a in result.answers] == [["B"], ["C"], ["A"]]
    assert [a.score for a in result.answers] == pytest.approx([0.0, FLOOR / 2, FLOOR], abs=1e-12)
    assert [a.terminated_by for a in result.answers] == ["dead_end", "dead_end", "stop"]


async def test_forced_move_is_not_a_call_nor_a_decision() -> None:
    store = graph([("S", "r", "A"), ("A", "r", "X"), ("A", "r", "Y")])
    script = by_node({"A": {"X": 0.9, "Y": 0.1, "STOP": 0.0}})
    result, decider = await walk(store, script, ["S"], allow_stop_at_start=False)
    first = result.trace.steps[0]
    assert (first.forced, first.call_id, first.chosen) == (True, None, "o1")
    assert decider.calls == 1
    top = result.answers[0]
    assert (top.node_ids, top.n_choices) == (["X"], 1)
    assert top.score == pytest.approx(math.log(0.9) / 2, abs=1e-12)  # choice at A + forced STOP


async def test_a_forced_move_that_loses_its_slot_keeps_no_child_in_the_trace() -> None:
    # S1's forced move scores the floor and loses greedy's one slot to S2's choice; its step still said
    # kept {"o1": 2}, a walk that never went on
    store = graph([("S1", "r", "X"), ("S2", "r", "Y"), ("S2", "r", "Z")])
    script = by_node({"S2": {"Y": 0.3, "Z": 0.7}})
    result, _ = await walk(store, script, ["S1", "S2"], allow_stop_at_start=False)
    steps = [(s.depth, s.beam_id, s.current, s.forced, s.kept) for s in result.trace.steps]
    assert steps == [
        (0, 0, ["S1"], True, {}),
        (0, 1, ["S2"], False, {"o2": 3}),
        (1, 3, ["Z"], True, {}),
    ]
    # kept when it wins a slot
    result, _ = await walk(store, script, ["S1", "S2"], allow_stop_at_start=False, strategy="beam")
    assert [s.kept for s in result.trace.steps if s.depth == 0] == [{"o1": 2}, {"o2": 3, "o1": 4}]


async def test_walk_without_a_real_choice_scores_the_floor() -> None:
    result, decider = await walk(graph([("S", "r", "A")]), None, ["S"], allow_stop_at_start=False)
    assert decider.calls == 0
    top = result.answers[0]
    assert (top.node_ids, top.n_choices, top.score, top.terminated_by) == (["A"], 0, FLOOR, "dead_end")


async def test_sampling_applies_temperature_and_top_p_per_walk() -> None:
    store = graph([("A", "r", "B"), ("A", "r", "C"), ("A", "r", "D")])
    script = by_node({"A": {"B": 0.5, "C": 0.3, "D": 0.2, "STOP": 0.0}})
    result, _ = await walk(store, script, ["A"], strategy="sample", n_samples=4, top_p=0.5)
    assert [(a.node_ids, a.votes) for a in result.answers] == [(["B"], 4)]
    result, _ = await walk(store, script, ["A"], strategy="sample", n_samples=6, top_p=0.8, seed=3)
    used = result.trace.steps[0].distribution_used
    assert used == pytest.approx({"o1": 0.625, "o2": 0.375, "o3": 0.0, "STOP": 0.0}, abs=1e-12)
    assert sum(a.votes for a in result.answers) == 6
    assert {a.node_ids[0] for a in result.answers} <= {"B", "C"}
    again, _ = await walk(store, script, ["A"], strategy="sample", n_samples=6, top_p=0.8, seed=3)
    assert [(a.node_ids, a.votes) for a in again.answers] == [(a.node_ids, a.votes) for a in result.answers]
    cold, _ = await walk(store, script, ["A"], strategy="sample", n_samples=3, temperature=0.0)
    assert [(a.node_ids, a.votes) for a in cold.answers] == [(["B"], 3)]


async def test_relation_mode_moves_the_whole_frontier(movies: MemoryGraphStore) -> None:
    script = gold_path_script([("directed_by", "in"), ("release_year", "out")])
    decider = FakeDecisionBackend(script=script)
    config = TraversalConfig(hop_mode="relation", allow_stop_at_start=False)
    result = await Traverser(movies, decider, config=config).walk(
        "years of Nolan films", ["Christopher Nolan"]
    )
    top = result.answers[0]
    assert (top.node_ids, top.score, top.terminated_by) == (["2000", "2010"], 0.0, "stop")
    assert top.relation_path == ["directed_by:in", "release_year:out"]
    assert [(h.source, h.relation, h.target) for h in top.witnesses["2010"]] == [
        ("Christopher Nolan", "directed_by", "Inception"),
        ("Inception", "release_year", "2010"),
    ]
    assert top.witnesses["2010"][0].edge_id == edge_id("Inception", "directed_by", "Christopher Nolan")
    first = result.trace.steps[0]
    assert first.options["o1"] == {
        "relation": "directed_by", "direction": "in", "leads_to": ["Inception", "Memento"], "count": 2,
    }  # fmt: skip
    assert decider.calls == 3
    assert Trace.model_validate_json(result.trace.model_dump_json()) == result.trace


async def test_relation_frontier_cap_truncates_without_embedder(movies: MemoryGraphStore) -> None:
    script = gold_path_script([("starred_actors", "in")])
    decider = FakeDecisionBackend(script=script)
    config = TraversalConfig(hop_mode="relation", max_frontier=2)
    result = await Traverser(movies, decider, config=config).walk("films with Leo", ["Leonardo DiCaprio"])
    assert result.answers[0].node_ids == ["Inception", "The Revenant"]
    assert result.trace.steps[0].note == "frontier truncated from 3 to 2"


HUB = [("H", "r", f"n{i:02d}") for i in range(60)] + [("H", "r", "golden retriever")]


async def test_prefilter_keeps_top_n_by_similarity_and_records_pruned() -> None:
    decider = FakeDecisionBackend(
        script=lambda q, s: {"STOP": 1.0, **{k: 0.0 for k in q.options if k != "STOP"}}
    )
    config = TraversalConfig(prefilter_threshold=50, prefilter_top_n=5)
    traverser = Traverser(graph(HUB), decider, embedder=HashingEmbedder(), config=config)
    result = await traverser.walk("which golden retriever", ["H"])
    step = result.trace.steps[0]
    assert len(step.options) == 6 and len(step.pruned) == 56
    assert "golden retriever" in [o["node"] for o in step.options.values() if isinstance(o, dict)]
    assert step.pruned_reason == "prefilter"
    assert step.pruned_similarity == sorted(step.pruned_similarity, reverse=True)


async def test_oversized_options_truncate_without_embedder() -> None:
    decider = FakeDecisionBackend(max_options=10)
    config = TraversalConfig(prefilter_top_n=5)
    result = await Traverser(graph(HUB), decider, config=config).walk("q", ["H"])
    step = result.trace.steps[0]
    assert [o["node"] for o in step.options.values() if isinstance(o, dict)] == [
        "golden retriever",
        *(f"n{i:02d}" for i in range(8)),
    ]
    assert (len(step.pruned), step.pruned_reason, step.pruned[0]) == (52, "truncated", "r n08")


@pytest.mark.parametrize(("batching", "questions"), [("per_depth", [1, 2]), ("per_beam", [1, 1, 1])])
async def test_beam_batching(batching: str, questions: list[int]) -> None:
    script = by_node({**CHAIN_SCRIPT, "D": {"E": 0.5, "STOP": 0.5}})
    decider = FakeDecisionBackend(script=script)
    config = TraversalConfig(strategy="beam", beam_width=2, beam_batching=batching)  # type: ignore[arg-type]
    # depth 0 keeps B and D; depth 1 asks both (one call per depth, or one per beam); then C is a
    # dead end (forced STOP, no call)
    result = await Traverser(graph([*CHAIN, ("D", "r", "E")]), decider, config=config).walk("q", ["A"])
    assert [c.n_questions for c in result.trace.calls] == questions
    assert [len(r.questions) for r in decider.requests] == questions
    assert [c.call_id for c in result.trace.calls] == [f"c{i}" for i in range(len(questions))]
    assert result.answers[0].node_ids == ["C"]


async def test_answer_type_hint_rides_the_first_call(movies: MemoryGraphStore) -> None:
    def script(question, state):  # type: ignore[no-untyped-def]
        if question.key == "answer_type":
            return {k: 1.0 if v == "year" else 0.0 for k, v in question.options.items()}
        return gold_path_script([("directed_by", "in"), ("release_year", "out")])(question, state)

    decider = FakeDecisionBackend(script=script)
    config = TraversalConfig(hop_mode="relation", answer_type="hint")
    result = await Traverser(movies, decider, config=config).walk("q", ["Christopher Nolan"])
    first, second = decider.requests[0], decider.requests[1]
    assert [q.key for q in first.questions] == ["b0", "answer_type"]
    assert first.questions[1].options == {"t1": "film", "t2": "genre", "t3": "person", "t4": "year"}
    assert "expected_answer_type" not in first.questions[0].instructions  # type: ignore[operator]
    assert second.questions[0].instructions["expected_answer_type"] == "year"  # type: ignore[index]
    assert result.trace.answer_type == "year"
    # one node type: no answer-type question
    decider = FakeDecisionBackend(script=by_node(CHAIN_SCRIPT))
    await Traverser(graph(CHAIN), decider, config=TraversalConfig(answer_type="hint")).walk("q", ["A"])
    assert [q.key for q in decider.requests[0].questions] == ["b0"]


async def test_no_answer_type_question_when_the_graph_has_more_types_than_the_decider_takes() -> None:
    # 300 node types made a 300-option question for a decider of 255 options: every walk ended in error
    triples = [("A", f"r{i:03d}", f"x{i:03d}") for i in range(300)]
    store = MemoryGraphStore.from_triples(triples, source_id="test", node_type_for=lambda rel, role: rel)
    decider = FakeDecisionBackend()
    result = await Traverser(store, decider, config=TraversalConfig(answer_type="hint")).walk("q", ["A"])
    assert (result.status, result.error, result.trace.answer_type) == ("ok", None, None)
    assert [q.key for q in decider.requests[0].questions] == ["b0"]


async def test_prompt_knobs_show_types_literal_stop_and_glosses(movies: MemoryGraphStore) -> None:
    decider = FakeDecisionBackend(script=lambda q, s: {k: 1.0 if k == "STOP" else 0.0 for k in q.options})
    config = TraversalConfig(show_types=True, stop_style="literal", relation_glosses={"release_year": "year"})
    await Traverser(movies, decider, config=config).walk("q", ["Avatar"])
    q = decider.requests[0].questions[0]
    assert q.options["o1"] == {
        "edge": "Avatar --directed_by--> James Cameron", "relation": "directed_by", "direction": "out",
        "node": "James Cameron", "type": "person",
    }  # fmt: skip
    assert q.options["o3"]["meaning"] == "year"  # type: ignore[index]
    assert q.options["STOP"] == "STOP: Avatar is itself the answer to the query; take no further hop"
    assert q.instructions["current"] == {"node": "Avatar", "type": "film"}  # type: ignore[index]


async def test_literal_stop_counts_the_whole_relation_frontier(movies: MemoryGraphStore) -> None:
    # the engine passes the names of 3 frontier nodes: "and N more" never appeared, so STOP said the
    # first 3 of 4 nodes were the answer
    decider = FakeDecisionBackend(script=lambda q, s: {k: 1.0 if k == "STOP" else 0.0 for k in q.options})
    config = TraversalConfig(hop_mode="relation", stop_style="literal")
    start = ["Avatar", "Inception", "Memento", "Titanic"]
    await Traverser(movies, decider, config=config).walk("q", start)
    stop = decider.requests[0].questions[0].options["STOP"]
    shown = "Avatar, Inception, Memento and 1 more"
    assert stop == f"STOP: {shown} is itself the answer to the query; take no further hop"


async def test_rendered_trace_says_when_a_frontier_has_more_nodes_than_it_names(
    movies: MemoryGraphStore,
) -> None:
    # it compared the frontier size with the 10 ids kept, not the 3 names shown: a 4-node set read as 3
    decider = FakeDecisionBackend(script=lambda q, s: {k: 1.0 if k == "STOP" else 0.0 for k in q.options})
    config = TraversalConfig(hop_mode="relation")
    result = await Traverser(movies, decider, config=config).walk(
        "q", ["Avatar", "Inception", "Memento", "Titanic"]
    )
    console = Console(file=io.StringIO(), width=200)
    render_trace(result.trace, console)
    assert "beam 0 at Avatar, Inception, Memento ... (4 nodes) -> STOP (call c0)" in console.file.getvalue()  # type: ignore[attr-defined]


async def test_bad_input_raises_clear_errors(movies: MemoryGraphStore) -> None:
    traverser = Traverser(movies, FakeDecisionBackend())
    with pytest.raises(InputError, match="question is empty"):
        await traverser.walk("  ", ["Avatar"])
    with pytest.raises(InputError, match=r"not in the graph: \['Avatr'\]"):
        await traverser.walk("q", ["Avatr"])
    with pytest.raises(InputError, match="no start node"):
        await traverser.walk("q", [])
    with pytest.raises(InputError, match=r"^the question is too long: ~32000 tokens, over the 32000-token "):
        await traverser.walk("x" * 79_988, ["Avatar"])  # rather than a walk that fails at its first call
    with pytest.raises(ConfigError, match="prefilter_top_n=30 exceeds the decider's max_options - 1 \\(9\\)"):
        Traverser(movies, FakeDecisionBackend(max_options=10))


async def test_relation_mode_prefilters_relations_and_caps_frontier_by_similarity(
    movies: MemoryGraphStore,
) -> None:
    store = graph([("H", f"rel{i:02d}", f"x{i}") for i in range(12)] + [("H", "golden_retriever", "dog")])
    decider = FakeDecisionBackend(script=lambda q, s: {k: 1.0 if k == "STOP" else 0.0 for k in q.options})
    config = TraversalConfig(hop_mode="relation", prefilter_threshold=10, prefilter_top_n=3)
    traverser = Traverser(store, decider, embedder=HashingEmbedder(), config=config)
    step = (await traverser.walk("which golden retriever", ["H"])).trace.steps[0]
    assert len(step.options) == 4 and (len(step.pruned), step.pruned_reason) == (10, "prefilter")
    # kept options stay in the walk's order (by relation): the golden_retriever relation comes first
    assert step.options["o1"]["relation"] == "golden_retriever"  # type: ignore[index]

    script = gold_path_script([("starred_actors", "in")])
    config = TraversalConfig(hop_mode="relation", max_frontier=1)
    traverser = Traverser(
        movies, FakeDecisionBackend(script=script), embedder=HashingEmbedder(), config=config
    )
    result = await traverser.walk("the titanic", ["Leonardo DiCaprio"])
    assert result.answers[0].node_ids == ["Titanic"]
    assert result.trace.steps[0].note == "frontier capped from 3 to 1 by query similarity"


class ProtocolOnly:
    """A memory store seen through the GraphStore protocol alone (none of its optional capabilities)."""

    def __init__(self, store: MemoryGraphStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> object:
        if name in ("neighbor_groups", "edge_between", "node_names"):
            raise AttributeError(name)
        return getattr(self._store, name)


def stop_only() -> FakeDecisionBackend:
    return FakeDecisionBackend(script=lambda q, s: {k: 1.0 if k == "STOP" else 0.0 for k in q.options})


async def test_grouped_store_adjacency_follows_writes() -> None:
    store = graph([("A", "r", "B")])
    traverser = Traverser(store, stop_only())
    assert len((await traverser.walk("q", ["A"])).trace.steps[0].options) == 2  # o1 + STOP
    await store.upsert_edge(Edge(source="A", target="B", type="s"))
    assert len((await traverser.walk("q", ["A"])).trace.steps[0].options) == 3


async def test_adjacency_cache_is_cleared_on_request() -> None:
    store = graph([("A", "r", "B")])
    traverser = Traverser(ProtocolOnly(store), stop_only())  # type: ignore[arg-type]
    await traverser.walk("q", ["A"])
    await store.upsert_edge(Edge(source="A", target="B", type="s"))
    assert len((await traverser.walk("q", ["A"])).trace.steps[0].options) == 2  # cached: o1 + STOP
    traverser.clear_cache()
    assert len((await traverser.walk("q", ["A"])).trace.steps[0].options) == 3


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
async def test_relation_walks_agree_with_and_without_grouped_adjacency(
    movies: MemoryGraphStore, strategy: str
) -> None:
    config = TraversalConfig(hop_mode="relation", strategy=strategy, allow_stop_at_start=False)
    starts = [["James Cameron"], ["Christopher Nolan", "Leonardo DiCaprio"], ["Science Fiction"]]
    for start in starts:
        walks = [
            await Traverser(store, FakeDecisionBackend(seed=3), config=config).walk("which films?", start)
            for store in (movies, ProtocolOnly(movies))
        ]
        fast, generic = (w.model_dump(exclude={"trace": {"totals": {"wall_s"}}}) for w in walks)
        assert fast == generic
        assert fast["trace"]["steps"] and fast["answers"]


@pytest.mark.parametrize(
    "config",
    [
        TraversalConfig(hop_mode="relation", strategy="beam", allow_stop_at_start=False),
        TraversalConfig(strategy="sample", n_samples=4, allow_stop_at_start=False),
        TraversalConfig(strategy="beam", max_frontier=1),
    ],
)
async def test_walks_agree_on_the_memory_and_sql_stores(
    movies: MemoryGraphStore, tmp_path: Path, config: TraversalConfig
) -> None:
    """Options, frontiers and witnesses come in one order whatever the store reads adjacency in (the
    memory store keeps insertion order, the SQL store key order), so one graph walks alike on both."""
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'movies.sqlite'}")
    await upsert_many(sql, [n async for n in movies.iter_nodes()], [e async for e in movies.iter_edges()])
    starts = [["James Cameron"], ["Christopher Nolan", "Leonardo DiCaprio"], ["Titanic"]]
    for start in starts:
        walks = [
            await Traverser(store, FakeDecisionBackend(seed=3), config=config).walk("which films?", start)
            for store in (movies, sql, ProtocolOnly(movies))
        ]
        memory, *others = (w.model_dump(exclude={"trace": {"totals": {"wall_s"}}}) for w in walks)
        assert others == [memory, memory]
        assert memory["trace"]["steps"] and memory["answers"]
    await sql.close()


async def test_cards_show_a_node_s_adjacency_in_the_order_walks_read_it(tmp_path: Path) -> None:
    """Cards (routing, entry, node documents) listed incoming entries by neighbor, then relation, and the
    engine by relation, then neighbor: two canonical orders. Both now follow ``adjacency_order``."""
    triples = [("Z", "wrote", "Hub"), ("B", "starred", "Hub"), ("Hub", "by", "Y"), ("A", "wrote", "Hub")]
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    memory = graph(triples)
    await upsert_many(sql, [n async for n in memory.iter_nodes()], [e async for e in memory.iter_edges()])
    for store in (memory, sql):
        groups = await Traverser(store, FakeDecisionBackend()).neighbor_groups(["Hub"])
        walked = [(relation, n, side) for (relation, side), members in groups.items() for n in members]
        assert walked == [
            ("by", "Y", "out"),
            ("starred", "B", "in"),
            ("wrote", "A", "in"),
            ("wrote", "Z", "in"),
        ]
        assert [tuple(a) for a in await first_adjacent(store, "Hub", 9)] == walked
    await sql.close()


async def test_a_walk_reads_one_state_of_a_graph_another_process_writes(tmp_path: Path) -> None:
    """An edge the walk took, deleted by another writer before the answer was built, left its answer with
    no way back to the start: ``RuntimeError: coroutine raised StopIteration``. The walk now reads one
    committed state of a SQL graph from its start to its answers."""
    url = f"sqlite:///{tmp_path / 'g.sqlite'}"
    sql, writer = SQLGraphStore(url), SQLGraphStore(url)
    memory = graph([("S", "r", "A"), ("A", "t", "B"), ("S", "u", "C")])
    await upsert_many(sql, [n async for n in memory.iter_nodes()], [e async for e in memory.iter_edges()])

    class DeletesAfterTheSecondHop(FakeDecisionBackend):
        async def decide(self, request):  # type: ignore[no-untyped-def]
            response = await super().decide(request)
            if len(self.requests) == 2:
                await writer.delete_edge(edge_id("A", "t", "B"))
            return response

    decider = DeletesAfterTheSecondHop(script=gold_path_script([("r", "out"), ("t", "out")]))
    config = TraversalConfig(hop_mode="relation", allow_stop_at_start=False, budget=Budget(max_depth=2))
    result = await Traverser(sql, decider, config=config).walk("q", ["S"])
    top = result.answers[0]
    assert (result.status, top.node_ids, top.terminated_by, top.witness_paths) == (
        "ok",
        ["B"],
        "max_depth",
        [1],
    )
    assert [(h.source, h.target, h.source_ids) for h in top.witness] == [
        ("S", "A", ["test"]),
        ("A", "B", ["test"]),
    ]
    assert await sql.get_edge(edge_id("A", "t", "B")) is None  # the next walk sees the write
    await sql.close()
    await writer.close()
