"""The 2wiki-retrieval benchmark: scoring, corpus subsets, and a run over a tiny corpus."""

from __future__ import annotations

import asyncio
from pathlib import Path

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Passage, Question
from graphwalk_core.eval.retrieval import (
    corpus_subset,
    run_retrieval,
    score_retrieval,
    write_retrieval_report,
)

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


def test_score_retrieval_exact() -> None:
    q = _dataset().questions[0]
    row = score_retrieval(
        q, "x", ["Meek Mill", "Detroit", "Meek Mill", "Big Sean", "Lake Tahoe", "B Boy (song)"], latency_s=0
    )
    assert row.retrieved == ["Meek Mill", "Detroit", "Big Sean", "Lake Tahoe", "B Boy (song)"]
    assert (row.solved, row.solved_at_10, row.recall_at_2, row.recall_at_5) == (True, True, 0.5, 1.0)
    row = score_retrieval(q, "x", ["B Boy (song)"], latency_s=0)
    assert (row.solved, row.solved_at_10, row.recall_at_2, row.recall_at_5) == (False, False, 0.5, 0.5)
    late = ["B Boy (song)", *(f"distractor {i}" for i in range(9)), "Meek Mill"]
    row = score_retrieval(q, "x", late, latency_s=0)  # all found, but the 2nd only at rank 11
    assert (row.solved, row.solved_at_10, row.recall_at_2, row.recall_at_5) == (True, False, 0.5, 0.5)


def test_corpus_subset_keeps_every_supporting_passage() -> None:
    ds = corpus_subset(_dataset(), 3, seed=0)
    ids = [p.id for p in ds.knowledge.passages]
    assert len(ids) == 3 and {"B Boy (song)", "Meek Mill"} <= set(ids)
    assert ids == sorted(ids, key=[p.id for p in PASSAGES].index)  # corpus order kept
    assert corpus_subset(_dataset(), 3, seed=0).knowledge.passages == ds.knowledge.passages
    assert corpus_subset(_dataset(), None) == _dataset()


def test_run_retrieval_on_a_tiny_corpus(tmp_path: Path) -> None:
    report = asyncio.run(
        run_retrieval(
            _dataset(), decider=FakeDecisionBackend(seed=0), embedder=HashingEmbedder(), dense_k=(2, 6)
        )
    )
    assert (report.n_questions, report.n_passages, report.extractor) == (1, 6, "nlp:1")
    assert report.graph_nodes > 0 and report.graph_edges > 0
    systems = [s["system"] for s in report.summary()]
    assert systems == ["graphwalk entity-beam", "dense top-2", "dense top-6"]
    graph_row = report.rows[0]
    assert graph_row.error is None and graph_row.supporting == ["B Boy (song)", "Meek Mill"]
    assert set(graph_row.retrieved) <= {p.id for p in PASSAGES}
    assert "B Boy (song)" in graph_row.retrieved  # the start node "B Boy" comes from that passage
    dense_all = report.rows[2]
    assert (dense_all.solved, dense_all.recall_at_5, len(dense_all.retrieved)) == (True, 1.0, 6)
    md = write_retrieval_report(report, tmp_path).read_text()
    assert "| dense top-6 | 1.000 | 1.000 | 1.000 | 1.000 | 6.0 |" in md
    assert (tmp_path / "retrieval.json").exists()


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
    assert result.output.startswith("2wiki-retrieval: 1 questions over 6 passages; graph ")
    assert "| dense top-10 | 1.000 | 1.000 | 1.000 | 1.000 | 6.0 |" in result.output
    report = json.loads((out / "retrieval.json").read_text(encoding="utf-8"))
    assert [r["system"] for r in report["rows"]] == [
        "graphwalk entity-greedy",
        "dense top-2",
        "dense top-5",
        "dense top-10",
    ]
    bad = CliRunner().invoke(app, [*args[:4], "--questions", str(corpus), "--out", str(out)])
    assert (bad.exit_code, bad.output) == (
        2,
        f"error: {corpus}: record 0 needs 'question' and 'supporting_titles'\n",
    )
