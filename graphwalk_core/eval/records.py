"""Per-question result records and run metadata (what the checkpoint and the Parquet tables hold)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from graphwalk_core.eval import metrics
from graphwalk_core.eval.datasets.base import Dataset, Question
from graphwalk_core.eval.systems.base import Status, SystemAnswer


class QuestionResult(BaseModel):
    """One question answered (or skipped, or failed) by one system, scored."""

    run_id: str
    dataset: str
    split: str
    system: str
    question_id: str
    #: ``Question.content_key`` of the question answered: a rerun reuses this record only while it matches.
    question_key: str | None = None
    question: str
    hops: int | None = None
    qtype: str | None = None
    gold: list[str]
    predicted: list[str]
    em: float | None
    f1: float | None
    hits_at_1: float | None
    linking_correct: bool | None = None
    linked_start: list[str] | None = None
    gold_start: str | None = None
    latency_s: float
    decision_calls: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    status: Status
    error: str | None = None
    passages: list[str] = Field(default_factory=list)
    recall_at_2: float | None = None
    recall_at_5: float | None = None
    recall_at_10: float | None = None
    all_supporting_at_10: bool | None = None
    decider: str | None = None
    llm_model: str | None = None
    embedder: str | None = None
    extractor: str | None = None
    trace: dict[str, Any] | None = None
    #: Whether the answer is scored as one (F1, EM, hits@1): not a system that only retrieves (a passage
    #: ranker), nor a question without gold answers, so a failure there scores nothing rather than 0.
    #: None in results written before this field existed.
    answer_scored: bool | None = None
    #: Taken from the checkpoint of an earlier run with the same run id (same question ids, knowledge
    #: fingerprint and system identity), for the same question content, instead of being answered again,
    #: by the latest run with this id; the checkpoint keeps the label, so a rebuilt report does too.
    reused: bool = False


def score_answer(
    dataset: Dataset,
    question: Question,
    answer: SystemAnswer,
    *,
    run_id: str,
    system: str,
    ids: dict[str, Any],
) -> QuestionResult:
    """Score ``answer`` against the question's gold; skipped and failed answers get no answer scores.

    A question with gold supporting passages (HotpotQA, 2Wiki, a custom corpus) also gets recall@2/5/10
    and all-supporting@10 of ``answer.passages`` (a failed answer retrieved nothing); skipped, or a
    system that cites no passages (a walk over a triples KB): none.
    """
    gradable = answer.answers_question and not question.extra.get("no_gold")
    scored = answer.status in ("ok", "aborted") and gradable
    gold, pred = question.gold, answer.answers
    aliases = bool(question.extra.get("aliases"))
    em, f1, hits = (
        metrics.answer_scores(pred, gold, match=dataset.match, aliases=aliases)
        if scored
        else (None, None, None)
    )
    supporting = question.extra.get("supporting")
    retrieval = (
        metrics.retrieval_scores(answer.passages, supporting)
        if supporting and answer.cites_passages and answer.status in ("ok", "aborted", "error")
        else {}
    )
    return QuestionResult(
        run_id=run_id,
        dataset=dataset.name,
        split=dataset.split,
        system=system,
        question_id=question.id,
        question_key=question.content_key(),
        question=question.text,
        hops=question.hops,
        qtype=question.qtype,
        gold=gold,
        predicted=pred,
        em=em,
        f1=f1,
        hits_at_1=hits,
        linking_correct=metrics.linking_correct(answer.linked_start, question.gold_start)
        if answer.status != "skipped"
        else None,
        linked_start=answer.linked_start,
        gold_start=question.gold_start,
        latency_s=answer.latency_s,
        decision_calls=answer.decision_calls,
        llm_calls=answer.llm_calls,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        cost_usd=answer.cost_usd,
        status=answer.status,
        error=answer.error,
        passages=answer.passages,
        **retrieval,
        decider=ids.get("decider"),
        llm_model=ids.get("llm"),
        embedder=ids.get("embedder"),
        extractor=ids.get("extractor"),
        trace=answer.trace,
        answer_scored=gradable,
    )


class RunMetadata(BaseModel):
    """What produced a run: enough to reproduce it and to tell two runs apart."""

    run_id: str
    dataset: str
    split: str
    system: str
    n_questions: int
    question_ids_hash: str
    system_identity: dict[str, Any]
    dataset_info: dict[str, Any]
    git_sha: str | None
    package_versions: dict[str, str | None]
    python: str
    started_at: str
    finished_at: str | None = None
    concurrency: int
    #: Results reused from the checkpoint of an earlier, interrupted or finished, run with this id.
    resumed_from: int = 0
    #: Checkpointed answers dropped because their question was edited since (answered again instead).
    edited: int = 0
    #: Content hash of the knowledge answered from (KB file, triples, passages): part of the run id.
    graph_fingerprint: str | None = None
    #: A trained decider's model fingerprint (``decisions.base.model_fingerprint``), when it has one.
    decider_model: str | None = None
