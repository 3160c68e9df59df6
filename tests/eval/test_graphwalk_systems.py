"""graphwalk presets and graph-reader on a toy graph with a scripted fake decider (and the LLM server)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr
from servers.openai_server import OpenAIServer, Reply

from graphwalk_core.decisions.base import ChoiceQuestion, JSONContent
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
from graphwalk_core.eval.report import results_table
from graphwalk_core.eval.runner import run_eval, run_id_for
from graphwalk_core.eval.systems.base import QASystem
from graphwalk_core.eval.systems.graphwalk import GraphwalkSystem, preset_config
from graphwalk_core.eval.systems.registry import build_system
from graphwalk_core.llm.litellm_backend import LiteLLMBackend

TRIPLES = (
    ("Film Alpha", "directed_by", "Dir X"),
    ("Film Alpha", "written_by", "Wri Y"),
    ("Film Alpha", "release_year", "2001"),
    ("Film Beta", "directed_by", "Dir X"),
    ("Film Beta", "release_year", "1999"),
)


def follow_directed_by(question: ChoiceQuestion, state: JSONContent) -> Mapping[str, float]:
    """Take directed_by (out) when offered, else STOP."""
    for label, desc in question.options.items():
        if (
            isinstance(desc, dict)
            and desc.get("relation") == "directed_by"
            and desc.get("direction") == "out"
        ):
            return {k: (0.9 if k == label else 0.1 / (len(question.options) - 1)) for k in question.options}
    return {k: (1.0 if k == "STOP" else 0.0) for k in question.options}


def _dataset(with_start: bool = True) -> Dataset:
    questions = [
        Question(
            id="a", text="who directed Film Alpha", gold=["Dir X"], hops=1, extra={"start": "Film Alpha"}
        ),
        Question(id="b", text="who directed Film Beta", gold=["Dir X"], hops=1, extra={"start": "Film Beta"}),
    ]
    if not with_start:
        questions = [q.model_copy(update={"extra": {}}) for q in questions]
    return Dataset(
        name="toy", split="dev", questions=questions, knowledge=Knowledge(graph="triples", triples=TRIPLES)
    )


def test_relation_greedy_answers_and_records_calls(tmp_path: Path) -> None:
    decider = FakeDecisionBackend(script=follow_directed_by)
    system = build_system("relation-greedy", _dataset(), decider=decider, embedder=None, llm=None)
    assert isinstance(system, GraphwalkSystem)
    assert (system.config.hop_mode, system.config.strategy, system.config.stop_style) == (
        "relation",
        "greedy",
        "literal",
    )
    run = run_eval(_dataset(), system, out_dir=tmp_path, concurrency=1)
    a, b = run.results
    assert (a.predicted, a.em, a.f1, a.hits_at_1, a.status) == (["Dir X"], 1.0, 1.0, 1.0, "ok")
    assert (a.decision_calls, a.input_tokens, a.cost_usd, a.linked_start, a.linking_correct) == (
        2,
        200,
        None,
        None,
        None,
    )
    assert a.passages == ["kb"]  # the edge's provenance source: <source>/<doc id> = corpus/kb
    assert [s["chosen"] for s in a.trace["steps"]] == ["o1", "STOP"]
    assert a.trace["answers"][0]["path"] == ["directed_by:out"]
    assert b.predicted == ["Dir X"]
    assert run.metadata.system_identity["decider"] == "fake:seed=0"
    assert run.metadata.system_identity["config"]["allow_stop_at_start"] is False


def test_presets_and_overrides() -> None:
    assert preset_config("entity-beam").strategy == "beam"
    assert preset_config("relation-greedy", show_types=False).show_types is False
    decider = FakeDecisionBackend(script=follow_directed_by)
    system = build_system(
        "entity-greedy",
        _dataset(),
        decider=decider,
        embedder=None,
        llm=None,
        overrides={"answer_type": "off"},
    )
    assert isinstance(system, GraphwalkSystem)
    assert (system.config.hop_mode, system.config.answer_type) == ("entity", "off")


def test_resolved_linking_scores_linking_accuracy(tmp_path: Path) -> None:
    decider = FakeDecisionBackend(script=follow_directed_by)
    dataset = _dataset()
    system = build_system(
        "relation-greedy", dataset, decider=decider, embedder=None, llm=None, overrides={"linking": "resolve"}
    )
    run = run_eval(dataset, system, out_dir=tmp_path)
    assert [(r.linked_start, r.linking_correct, r.predicted) for r in run.results] == [
        (["Film Alpha"], True, ["Dir X"]),
        (["Film Beta"], True, ["Dir X"]),
    ]


def _relation_greedy(dataset: Dataset) -> QASystem:
    decider = FakeDecisionBackend(script=follow_directed_by)
    return build_system("relation-greedy", dataset, decider=decider, embedder=None, llm=None)


def test_no_gold_start_defaults_to_resolution(tmp_path: Path) -> None:
    dataset = _dataset(with_start=False)
    system = _relation_greedy(dataset)
    assert isinstance(system, GraphwalkSystem) and system.linking == "resolve"
    run = run_eval(dataset, system, out_dir=tmp_path)
    assert [(r.linked_start, r.linking_correct) for r in run.results] == [
        (["Film Alpha"], None),
        (["Film Beta"], None),
    ]


def test_a_question_with_a_start_walks_from_it_one_without_is_linked(tmp_path: Path) -> None:
    """Linking is per question: one question lacking ``start`` does not make the others' starts ignored."""
    with_start, without = _dataset().questions[0], _dataset(with_start=False).questions[1]
    dataset = _dataset().model_copy(update={"questions": [with_start, without]})
    system = _relation_greedy(dataset)
    assert isinstance(system, GraphwalkSystem) and system.linking == "gold"
    run = run_eval(dataset, system, out_dir=tmp_path)
    assert [(r.gold_start, r.linked_start, r.linking_correct, r.predicted) for r in run.results] == [
        ("Film Alpha", None, None, ["Dir X"]),  # walked from its given start: nothing linked
        (None, ["Film Beta"], None, ["Dir X"]),  # linked from its text
    ]


def test_graph_reader_reads_the_walked_facts(openai_server: OpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(Reply("Dir X", cost=0.0003))
    llm = LiteLLMBackend("openai/test-model", api_base=openai_server.base_url, api_key=SecretStr("sk-test"))
    dataset = _dataset()
    dataset = dataset.model_copy(update={"questions": dataset.questions[:1]})
    system = build_system(
        "graph-reader",
        dataset,
        decider=FakeDecisionBackend(script=follow_directed_by),
        embedder=None,
        llm=llm,
    )
    (result,) = run_eval(dataset, system, out_dir=tmp_path).results
    assert (result.predicted, result.em, result.decision_calls, result.llm_calls) == (["Dir X"], 1.0, 2, 1)
    assert result.cost_usd == 0.0003  # the decider reports none; the LLM's reported cost only
    assert (result.decider, result.llm_model) == ("fake:seed=0", "openai/test-model")
    prompt = openai_server.chat_requests[0].body["messages"][1]["content"]
    assert "[1] Film Alpha --directed_by--> Dir X" in prompt
    assert "[2] walk answer (directed_by:out): Dir X" in prompt


def test_hotpotqa_graph_is_ingested_and_walks_report_passages(tmp_path: Path) -> None:
    from conftest import shared_path

    from graphwalk_core.eval.datasets import load_dataset

    dataset = load_dataset("hotpotqa", n=2, data_dir=shared_path("data"))
    system = build_system(
        "entity-greedy", dataset, decider=FakeDecisionBackend(seed=0), embedder=None, llm=None
    )
    assert isinstance(system, GraphwalkSystem) and system.linking == "resolve"
    assert system.identity()["extractor"] == "nlp:2"
    run = run_eval(dataset, system, out_dir=tmp_path)
    ids = {p.id for p in dataset.knowledge.passages}
    assert [r.status for r in run.results] == ["ok", "ok"]
    for r in run.results:
        assert r.linked_start and r.linking_correct is None  # HotpotQA has no gold start
        assert r.passages and set(r.passages) <= ids  # provenance names the ingested passages
        assert r.extractor == "nlp:2" and r.f1 is not None


def _kb_run(kb: Path, out: Path) -> tuple[list[list[str]], object]:
    dataset = _dataset().model_copy(update={"knowledge": Knowledge(graph="triples", kb_path=kb)})
    run = run_eval(dataset, _relation_greedy(dataset), out_dir=out, concurrency=1)
    return [r.predicted for r in run.results], run


def test_a_changed_graph_is_answered_again_not_resumed(tmp_path: Path) -> None:
    """The run id covers the graph's content: change a fact and the new answer appears."""
    kb, out = tmp_path / "kb.txt", tmp_path / "out"
    kb.write_text("".join(f"{s}|{r}|{o}\n" for s, r, o in TRIPLES), encoding="utf-8")
    answers, first = _kb_run(kb, out)
    assert answers == [["Dir X"], ["Dir X"]]
    assert (first.metadata.resumed_from, [r.reused for r in first.results]) == (0, [False, False])

    kb.write_text(
        kb.read_text(encoding="utf-8").replace("Film Alpha|directed_by|Dir X", "Film Alpha|directed_by|Dir Z")
    )
    answers, changed = _kb_run(kb, out)
    assert answers == [["Dir Z"], ["Dir X"]]
    assert changed.metadata.run_id != first.metadata.run_id
    assert changed.metadata.graph_fingerprint != first.metadata.graph_fingerprint
    assert (changed.metadata.resumed_from, [r.reused for r in changed.results]) == (0, [False, False])

    # the same graph again: every answer is reused from the checkpoint, and labelled so
    answers, again = _kb_run(kb, out)
    assert answers == [["Dir Z"], ["Dir X"]]
    assert again.metadata.run_id == changed.metadata.run_id
    assert (again.metadata.resumed_from, [r.reused for r in again.results]) == (2, [True, True])
    assert results_table(again.results).column("reused").to_pylist() == [True, True]


def test_a_decider_model_fingerprint_is_part_of_the_run_id() -> None:
    """The hook for trained deciders: a backend exposing ``model_fingerprint`` keys the run by it."""

    class TrainedDecider(FakeDecisionBackend):
        def __init__(self, fingerprint: str) -> None:
            super().__init__(script=follow_directed_by)
            self.model_fingerprint = fingerprint

    ids = []
    for fingerprint in ("sha256:aaa", "sha256:bbb"):
        system = build_system(
            "relation-greedy", _dataset(), decider=TrainedDecider(fingerprint), embedder=None, llm=None
        )
        assert system.identity()["decider_model"] == fingerprint
        ids.append(run_id_for(_dataset(), system))
    assert ids[0] != ids[1]


def test_answers_that_failed_on_the_decider_are_asked_again_on_rerun(tmp_path: Path) -> None:
    """Jev down (503) for a whole run: every answer is an error. Rerunning once it is back reused those
    errors from the checkpoint (the run id is the same), so the run could never recover."""
    from servers.jev_server import JevServer
    from servers.jev_server import Reply as JevReply

    from graphwalk_core.decisions.jev import JevBackend

    def answer(name: str, question: dict, state: object) -> dict[str, float]:
        return dict(follow_directed_by(ChoiceQuestion(key=name, options=question["criteria"]), state))

    with JevServer() as server:
        server.answer_fn = answer
        decider = JevBackend(SecretStr("sk-test-0123456789"), base_url=server.base_url, max_retries=0)
        system = build_system("relation-greedy", _dataset(), decider=decider, embedder=None, llm=None)
        server.enqueue(JevReply(503, {"error": "overloaded"}), JevReply(503, {"error": "overloaded"}))
        down = run_eval(_dataset(), system, out_dir=tmp_path, concurrency=1)
        assert [r.status for r in down.results] == ["error", "error"]
        assert "HTTP 503: " in (down.results[0].error or "")
        back = run_eval(_dataset(), system, out_dir=tmp_path, concurrency=1)
        assert back.metadata.run_id == down.metadata.run_id
        assert back.metadata.resumed_from == 0
        assert [(r.status, r.predicted, r.reused) for r in back.results] == [("ok", ["Dir X"], False)] * 2
        again = run_eval(_dataset(), system, out_dir=tmp_path, concurrency=1)
        assert (again.metadata.resumed_from, len(server.calls())) == (2, 6)


def test_a_billed_reply_that_broke_the_contract_still_counts_its_tokens(tmp_path: Path) -> None:
    """Jev answered (and billed) but with a label that was not offered: the walk failed and the call's
    tokens were dropped, so an errored question reported 0 input tokens and no decision call."""
    from servers.jev_server import TOKENS_IN_PER_QUESTION, TOKENS_OUT_PER_QUESTION, JevServer
    from servers.jev_server import Reply as JevReply

    from graphwalk_core.decisions.jev import JevBackend

    def unknown_label(body: dict) -> dict:
        next(iter(body["answers"].values()))["probabilities"]["o99"] = 0.1
        return body

    with JevServer() as server:
        decider = JevBackend(SecretStr("sk-test-0123456789"), base_url=server.base_url, max_retries=0)
        system = build_system("relation-greedy", _dataset(), decider=decider, embedder=None, llm=None)
        server.enqueue(JevReply(edit=unknown_label))
        run = run_eval(_dataset().model_copy(update={"questions": _dataset().questions[:1]}), system,
                       out_dir=tmp_path, concurrency=1)  # fmt: skip
        (result,) = run.results
        n = len(server.calls()[0].json["questions"])
    assert result.status == "error" and "not offered: ['o99']" in (result.error or "")
    assert (result.decision_calls, result.input_tokens, result.output_tokens) == (
        1,
        TOKENS_IN_PER_QUESTION * n,
        TOKENS_OUT_PER_QUESTION * n,
    )


def test_graph_reader_does_not_read_after_a_failed_walk(openai_server: OpenAIServer, tmp_path: Path) -> None:
    """Jev down (503) under graph-reader: the failed walk's nothing was read anyway and the reader's
    guess recorded with status ok, so an outage lowered the scores and a rerun reused the guesses."""
    from servers.jev_server import JevServer
    from servers.jev_server import Reply as JevReply

    from graphwalk_core.decisions.jev import JevBackend

    dataset = _dataset()
    dataset = dataset.model_copy(update={"questions": dataset.questions[:1]})
    llm = LiteLLMBackend("openai/test-model", openai_server.base_url, SecretStr("sk-test"), backoff_s=0.01)
    with JevServer() as server:
        server.enqueue(JevReply(503, {"error": "overloaded"}))
        decider = JevBackend(SecretStr("sk-test-0123456789"), base_url=server.base_url, max_retries=0)
        system = build_system("graph-reader", dataset, decider=decider, embedder=None, llm=llm)
        (result,) = run_eval(dataset, system, out_dir=tmp_path).results
    assert result.status == "error"
    assert (result.error or "").startswith("DecisionError: Jev (typesafe, jev-1.13.0) decision failed")
    assert "HTTP 503: " in (result.error or "")
    assert (result.llm_calls, openai_server.chat_requests) == (0, [])
