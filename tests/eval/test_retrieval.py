"""Retrieval measures, corpus subsets, the rankers and `graphwalk eval 2wiki-retrieval` on a tiny corpus."""

from __future__ import annotations

import asyncio
from pathlib import Path

from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Passage, Question
from graphwalk_core.eval.metrics import retrieval_scores
from graphwalk_core.eval.records import score_answer
from graphwalk_core.eval.retrieval import corpus_subset
from graphwalk_core.eval.systems.base import SystemAnswer
from graphwalk_core.eval.systems.rankers import RANKERS
from graphwalk_core.eval.systems.registry import build_system_async

PASSAGES = tuple(
    Passage(id=t, title=t, text=x)
    for t, x in [
        ("B Boy (song)", "B Boy is a song by Meek Mill featuring Big Sean."),
        ("Meek Mill", "Meek Mill is a rapper from Philadelphia. Meek Mill was detained in Philadelphia."),
        ("Big Sean", "Big Sean is a rapper from Detroit."),
        ("Detroit", "Detroit is a city in Michigan."),
        ("Lake Tahoe", "Lake Tahoe is a lake in the Sierra Nevada."),
        ("Sierra Nevada", "The Sierra Nevada is a mountain range."),
    ]
)


#: graph-ppr's ranking of the first question: the linked title passage, then the passage about the
#: entity it mentions.
PPR_RANKING = ["B Boy (song)", "Meek Mill", "Big Sean", "Detroit", "Sierra Nevada", "Lake Tahoe"]


def _dataset() -> Dataset:
    q = Question(
        id="2wr-000",
        text="Where was the performer of song B Boy (Song) detained?",
        gold=[],
        extra={"supporting": ["B Boy (song)", "Meek Mill"], "no_gold": True},
    )
    return Dataset(
        name="2wiki-retrieval",
        split="dev",
        questions=[q],
        knowledge=Knowledge(graph="passages", passages=PASSAGES, source="2wiki"),
    )


def test_retrieval_scores_exact() -> None:
    support = ["B Boy (song)", "Meek Mill"]
    got = ["Meek Mill", "Detroit", "Meek Mill", "Big Sean", "Lake Tahoe", "B Boy (song)"]
    assert retrieval_scores(got, support) == {
        "recall_at_2": 0.5,
        "recall_at_5": 1.0,  # duplicates count once: "B Boy (song)" is the 5th distinct passage
        "recall_at_10": 1.0,
        "all_supporting_at_10": True,
    }
    late = ["B Boy (song)", *(f"distractor {i}" for i in range(9)), "Meek Mill"]
    assert retrieval_scores(late, support) == {
        "recall_at_2": 0.5,
        "recall_at_5": 0.5,
        "recall_at_10": 0.5,
        "all_supporting_at_10": False,
    }
    assert retrieval_scores([], []) == {
        "recall_at_2": 1.0, "recall_at_5": 1.0, "recall_at_10": 1.0, "all_supporting_at_10": True,
    }  # fmt: skip


def test_corpus_subset_keeps_every_supporting_passage() -> None:
    ds = corpus_subset(_dataset(), 3, seed=0)
    ids = [p.id for p in ds.knowledge.passages]
    assert len(ids) == 3 and {"B Boy (song)", "Meek Mill"} <= set(ids)
    assert ids == sorted(ids, key=[p.id for p in PASSAGES].index)  # corpus order kept
    assert corpus_subset(_dataset(), 3, seed=0).knowledge.passages == ds.knowledge.passages
    assert corpus_subset(_dataset(), None) == _dataset()


def test_rankers_on_a_tiny_corpus() -> None:
    ds = _dataset()
    q = ds.questions[0]

    async def run() -> dict[str, list[str]]:
        out = {}
        for name in RANKERS:
            system = await build_system_async(name, ds, decider=None, embedder=HashingEmbedder(), llm=None)
            answer = await system.answer(q)
            out[name] = answer.passages
            # a ranker retrieves and answers nothing: no answer scores (null, not 0), recall scored
            scored = score_answer(ds, answered, answer, run_id="r", system=name, ids={})
            assert (scored.f1, scored.em, scored.hits_at_1, scored.recall_at_2) == (None, None, None, 1.0)
        return out

    answered = q.model_copy(update={"gold": ["Philadelphia"], "extra": {"supporting": q.extra["supporting"]}})
    got = asyncio.run(run())
    assert got["graph-ppr"] == PPR_RANKING
    assert got["typed-path"] == [
        "B Boy (song)", "Meek Mill", "Big Sean", "Sierra Nevada", "Detroit", "Lake Tahoe",
    ]  # fmt: skip
    assert len(got["dense"]) == 6 and set(got["dense"]) == {p.id for p in PASSAGES}


def test_cli_2wiki_retrieval_on_files(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from graphwalk_core.cli import app

    corpus, questions, out = tmp_path / "corpus.json", tmp_path / "questions.json", tmp_path / "out"
    corpus.write_text(json.dumps([{"title": p.title, "text": p.text} for p in PASSAGES]), encoding="utf-8")
    question = {"question": _dataset().questions[0].text, "supporting_titles": ["B Boy (song)", "Meek Mill"]}
    questions.write_text(json.dumps([question]), encoding="utf-8")
    args = ["eval", "2wiki-retrieval", "--corpus", str(corpus), "--questions", str(questions)]
    args += ["--decider", "fake", "--embed-model-path", "hashing", "--preset", "entity-greedy"]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    for name in ("entity-greedy", "graph-ppr", "typed-path", "dense"):  # every retrieval system by default
        assert f"| — | {name} | 1 | — |" in result.output
    assert "| — | graph-ppr | 1 | — | — | — |" in result.output
    assert "| 1.000 | 1.000 | 1.000 | 1.000 |" in result.output.split("graph-ppr")[1].splitlines()[0]
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "results.parquet").to_pylist()
    ppr = next(r for r in rows if r["system"] == "graph-ppr")
    assert ppr["passages"][:2] == ["B Boy (song)", "Meek Mill"]
    assert (ppr["recall_at_2"], ppr["recall_at_5"], ppr["recall_at_10"], ppr["all_supporting_at_10"]) == (
        1.0, 1.0, 1.0, True,
    )  # fmt: skip
    bad = CliRunner().invoke(app, [*args[:4], "--questions", str(corpus), "--out", str(out)])
    assert (bad.exit_code, bad.output) == (
        2,
        f"error: {corpus}: record 0 needs 'question' and 'supporting_titles'\n",
    )


def test_rankers_ingest_the_passages_of_a_triples_dataset() -> None:
    ds = _dataset()
    kb = Knowledge(graph="triples", triples=(("B Boy", "performer", "Meek Mill"),), passages=PASSAGES)
    ds = ds.model_copy(update={"knowledge": kb})

    async def run() -> tuple[list[str], dict]:
        system = await build_system_async("graph-ppr", ds, decider=None, embedder=HashingEmbedder(), llm=None)
        return (await system.answer(ds.questions[0])).passages, system.identity()

    passages, identity = asyncio.run(run())
    assert passages[:2] == ["B Boy (song)", "Meek Mill"]
    assert (identity["profile"], identity["extractor"]) == ("graph-ppr/v1", "nlp:2")


def test_graph_ppr_walk_seeds_graph_ppr_with_the_walk_and_needs_a_decider() -> None:
    from graphwalk_core.decisions.fake import FakeDecisionBackend

    ds = _dataset()

    async def run() -> tuple[SystemAnswer, dict, dict]:
        system = await build_system_async(
            "graph-ppr-walk", ds, decider=FakeDecisionBackend(seed=0), embedder=HashingEmbedder(), llm=None
        )
        skipped = await build_system_async("graph-ppr-walk", ds, decider=None, embedder=HashingEmbedder())
        return await system.answer(ds.questions[0]), system.identity(), skipped.identity()

    answer, identity, skipped = asyncio.run(run())
    assert answer.passages == PPR_RANKING  # the walk reached the two passages graph-ppr ranks first
    assert answer.trace is not None and answer.trace["seeds"]["walk"] == ["B Boy (song)", "Meek Mill"]
    assert (answer.status, answer.answers_question, answer.decision_calls) == ("ok", False, 2)
    assert (identity["system"], identity["profile"], identity["walker"]["system"]) == (
        "graph-ppr-walk", "graph-ppr-walk/v1", "entity-greedy",
    )  # fmt: skip
    assert identity["ppr"]["walk_weight"] == 0.05 and identity["ppr"]["walk_k"] == 10
    assert skipped == {"system": "graph-ppr-walk", "skipped": "no decider configured"}


def test_a_walk_over_triples_cites_no_passages_so_its_recall_is_not_scored() -> None:
    """2Wiki's walks read its evidence triples (provenance: the KB), not its passages: their recall is
    not measured (null), where it read 0. A ranker on the same dataset is scored, seeded by such a walk
    too."""
    from graphwalk_core.decisions.fake import FakeDecisionBackend

    question = Question(
        id="q",
        text="Where was the performer of song B Boy (Song) detained?",
        gold=["Philadelphia"],
        extra={"start": "B Boy (song)", "supporting": ["B Boy (song)", "Meek Mill"]},
    )
    triples = (("B Boy (song)", "performer", "Meek Mill"), ("Meek Mill", "detained in", "Philadelphia"))
    knowledge = Knowledge(graph="triples", triples=triples, passages=PASSAGES, source="2wiki")
    ds = Dataset(name="2wiki", split="dev", questions=[question], knowledge=knowledge)

    async def run(name: str) -> tuple[SystemAnswer, tuple[object, ...]]:
        system = await build_system_async(
            name, ds, decider=FakeDecisionBackend(seed=0), embedder=HashingEmbedder()
        )
        answer = await system.answer(question)
        scored = score_answer(ds, question, answer, run_id="r", system=name, ids={})
        return answer, (
            scored.recall_at_2,
            scored.recall_at_5,
            scored.recall_at_10,
            scored.all_supporting_at_10,
        )

    walk, walk_recall = asyncio.run(run("relation-greedy"))
    assert (walk.status, walk.passages, walk.cites_passages, walk_recall) == (
        "ok",
        ["kb"],
        False,
        (None,) * 4,
    )
    ranked, ranked_recall = asyncio.run(run("graph-ppr-walk"))
    assert (ranked.cites_passages, ranked_recall) == (True, (1.0, 1.0, 1.0, True))


def test_graph_ppr_walk_whose_walk_failed_is_an_error() -> None:
    """Jev down (503) under graph-ppr-walk: the walk failed, graph-ppr ranked without its seeds and the
    ranking was recorded with status ok, so an outage showed as lower recall and a rerun reused it."""
    from pydantic import SecretStr
    from servers.jev_server import JevServer, Reply

    from graphwalk_core.decisions.jev import JevBackend

    ds = _dataset()
    with JevServer() as server:
        server.enqueue(Reply(503, {"error": "overloaded"}))
        jev = JevBackend(SecretStr("sk-test-0123456789"), base_url=server.base_url, max_retries=0)

        async def run() -> SystemAnswer:
            system = await build_system_async("graph-ppr-walk", ds, decider=jev, embedder=HashingEmbedder())
            return await system.answer(ds.questions[0])

        answer = asyncio.run(run())
    assert answer.status == "error"
    assert (answer.error or "").startswith("DecisionError: Jev (typesafe, jev-1.13.0) decision failed")
    assert answer.trace is not None and answer.trace["walk_status"] == "error"


def test_a_graph_ppr_profile_changed_by_options_is_named_by_them() -> None:
    # "graph-ppr/v1" pins its parameters: with --set damping=0.7 the trace must not claim it
    ds = _dataset()

    async def run(overrides: dict[str, object]) -> tuple[str, str]:
        system = await build_system_async(
            "graph-ppr", ds, decider=None, embedder=HashingEmbedder(), llm=None, overrides=overrides
        )
        return system.identity()["profile"], (await system.answer(ds.questions[0])).trace["profile"]

    assert (
        asyncio.run(run({"title_weight": 2, "damping": 0.7}))
        == ("graph-ppr/v1+damping=0.7,title_weight=2.0",) * 2
    )
    assert asyncio.run(run({"damping": 0.5, "k": 5})) == ("graph-ppr/v1",) * 2  # the profile's own values
