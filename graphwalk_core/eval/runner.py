"""Run one system over one dataset: bounded concurrency, rate-limit backoff, resumable checkpoint."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from graphwalk_core.aio import gather_or_cancel
from graphwalk_core.decisions.base import DecisionBackend, close_decider
from graphwalk_core.eval.checkpoint import CheckpointWriter, read_checkpoint, rewrite_checkpoint
from graphwalk_core.eval.datasets.base import Dataset, Question
from graphwalk_core.eval.records import QuestionResult, RunMetadata, score_answer
from graphwalk_core.eval.runinfo import git_sha, package_versions, python_version
from graphwalk_core.eval.systems.base import QASystem, SystemAnswer, answers_questions
from graphwalk_core.files import folder_locked_async, write_text_atomic
from graphwalk_core.model import canonical_json, content_hash

log = logging.getLogger(__name__)

CHECKPOINT = "results.jsonl"
METADATA = "run.json"
#: Seconds one attempt at a question may take before it is recorded as an error (and asked again by a
#: rerun): a system stuck on a call that never ends holds one slot of the run, not the run.
QUESTION_TIMEOUT_S = 600.0


class EvalRun(BaseModel):
    """A finished (or resumed-and-finished) run: its metadata, results in dataset order, and folder."""

    metadata: RunMetadata
    results: list[QuestionResult]
    path: Path

    def __repr__(self) -> str:
        # short: asyncio.run reprs its finished task, result included, when it restores SIGINT handling
        return (
            f"EvalRun(run_id={self.metadata.run_id!r}, results={len(self.results)}, path={str(self.path)!r})"
        )


def is_rate_limited(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) is an HTTP 429 / rate-limit error from any backend."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "status_code", None) == 429 or "ratelimit" in type(current).__name__.lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def run_id_for(dataset: Dataset, system: QASystem, graph: str | None = None) -> str:
    """Deterministic run id over the question ids, the knowledge and the system.

    Same question ids, same knowledge content (the graph's fingerprint) and same system identity
    (which carries a trained decider's model fingerprint) → same id; change any of them → a new run.
    Within a run, a checkpointed answer is reused only for an unchanged question (see ``_reusable``).
    """
    ids = [q.id for q in dataset.questions]
    graph = graph or dataset.knowledge.fingerprint()
    digest = content_hash([dataset.name, dataset.split, ids, graph, system.name, system.identity()])
    return f"{dataset.name}-{dataset.split}-{system.name}-{digest[:10]}"


def run_folder(out_dir: Path, run_id: str) -> Path:
    """``out_dir/runs/<run_id>``, the id percent-encoded as one folder name (letters, digits and ``_.-~``
    kept): a split label or a hub dataset's ``hf:owner/name`` put a '/' in it, so ``../`` in a split
    wrote the run outside ``out_dir`` and a hub run's folder was nested where reports did not look."""
    return Path(out_dir) / "runs" / quote(run_id, safe="")


def adopt_legacy_folder(out_dir: Path, run_id: str) -> None:
    """Move the run's folder of the earlier layout, ``runs/<run_id>`` unencoded (a hub run nested in an
    ``hf:owner`` folder, a split with a space or ':'), to :func:`run_folder`, so a rerun resumes it rather
    than answering every question again and a report does not count its questions twice. One that lies
    outside ``runs`` (a split with '../') is left where it is, with a warning saying so."""
    runs = Path(out_dir) / "runs"
    folder, legacy = run_folder(out_dir, run_id), Path(os.path.normpath(runs / run_id))
    if legacy == folder or folder.exists() or not (legacy / CHECKPOINT).is_file():
        return
    if not legacy.resolve().is_relative_to(runs.resolve()):
        log.warning(
            "%s: a run of the earlier layout outside %s is not resumed; %s starts anew", legacy, runs, folder
        )
        return
    os.replace(legacy, folder)
    log.info("moved the run folder %s to %s (the run id percent-encoded)", legacy, folder)
    for parent in legacy.parents:  # the hf:owner folder a hub run was nested in, once empty
        if parent == runs or any(parent.iterdir()):
            break
        parent.rmdir()


def _reusable(dataset: Dataset, checkpoint: Path) -> tuple[dict[str, QuestionResult], int]:
    """The checkpointed results still valid for ``dataset``'s questions, by question id, labelled
    ``reused``, and how many were dropped as edited: a question edited since it was answered (text, gold,
    start, hops, …) is answered again, and so is one whose answer was an error (a backend down, a key
    refused), which a rerun is there to recover from.

    The checkpoint is rewritten to match: dropped records cut (it holds each question once), kept ones
    labelled, so it says how this run obtained each answer, as its results do, and a report rebuilt from
    it (``report_from_runs``) says the same.
    """
    keys = {q.id: q.content_key() for q in dataset.questions}
    records = read_checkpoint(checkpoint, cut_torn=True)  # the run holds its folder
    current = [r for r in records if r.question_key is not None and r.question_key == keys.get(r.question_id)]
    if len(current) < len(records):
        log.info("%s: %d answers to since-edited questions dropped", checkpoint, len(records) - len(current))
    kept = [r for r in current if r.status != "error"]
    if len(kept) < len(current):
        log.info(
            "%s: %d answers that failed with an error are asked again", checkpoint, len(current) - len(kept)
        )
    if len(kept) < len(records) or not all(r.reused for r in kept):
        kept = [r.model_copy(update={"reused": True}) for r in kept]
        rewrite_checkpoint(checkpoint, kept)
    return {r.question_id: r for r in kept}, len(records) - len(current)


async def _answer_with_backoff(
    system: QASystem, question: Question, *, max_retries: int, base_delay_s: float, timeout_s: float | None
) -> SystemAnswer:
    """Ask the system (each attempt cut at ``timeout_s``); back off and retry on rate limits; any other
    exception becomes status=error."""
    for attempt in range(max_retries + 1):
        start, deadline = time.perf_counter(), asyncio.timeout(timeout_s)
        try:
            async with deadline:
                answer = await system.answer(question)
        except Exception as exc:
            # asyncio's TimeoutError says nothing
            failure = TimeoutError(f"no answer within {timeout_s:g}s") if deadline.expired() else exc
            if is_rate_limited(failure) and attempt < max_retries:
                delay = base_delay_s * 2**attempt
                log.warning("rate limited on %s; retrying in %.1fs", question.id, delay)
                await asyncio.sleep(delay)
                continue
            return SystemAnswer(
                status="error",
                error=f"{type(failure).__name__}: {failure}",
                latency_s=time.perf_counter() - start,
                answers_question=answers_questions(system),
            )
        if answer.latency_s == 0.0 and answer.status != "skipped":
            answer = answer.model_copy(update={"latency_s": time.perf_counter() - start})
        return answer
    raise AssertionError("unreachable")


async def run_eval_async(
    dataset: Dataset,
    system: QASystem,
    *,
    out_dir: Path,
    concurrency: int = 4,
    progress: Callable[[QuestionResult], Any] | None = None,
    max_rate_limit_retries: int = 5,
    rate_limit_base_delay_s: float = 2.0,
    question_timeout_s: float | None = QUESTION_TIMEOUT_S,
) -> EvalRun:
    """Async ``run_eval``: the run folder is ``out_dir/runs/<run_id>`` (see :func:`run_folder`). While
    another process runs it, this one waits, then reuses that run's answers. An attempt at a
    question taking over ``question_timeout_s`` (None: no limit) is recorded as an error."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    graph = dataset.knowledge.fingerprint()
    run_id = run_id_for(dataset, system, graph)
    adopt_legacy_folder(out_dir, run_id)
    folder = run_folder(out_dir, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    # one process at a time runs it: another waits, then reuses its answers
    async with folder_locked_async(folder):
        checkpoint = folder / CHECKPOINT
        done, edited = _reusable(dataset, checkpoint)  # answered by an earlier run with this id: not redone
        identity = system.identity()
        meta = RunMetadata(
            run_id=run_id,
            dataset=dataset.name,
            split=dataset.split,
            system=system.name,
            n_questions=len(dataset.questions),
            question_ids_hash=content_hash([q.id for q in dataset.questions]),
            system_identity=json.loads(canonical_json(identity)),
            dataset_info=json.loads(canonical_json(dataset.info)),
            git_sha=git_sha(),
            package_versions=package_versions(),
            python=python_version(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            concurrency=concurrency,
            resumed_from=len(done),
            edited=edited,
            graph_fingerprint=graph,
            decider_model=identity.get("decider_model"),
        )
        write_text_atomic(meta.model_dump_json(indent=2), folder / METADATA)
        for record in done.values():
            if progress is not None:
                progress(record)
        pending = [q for q in dataset.questions if q.id not in done]
        semaphore = asyncio.Semaphore(concurrency)

        async def one(question: Question, writer: CheckpointWriter) -> None:
            async with semaphore:
                answer = await _answer_with_backoff(
                    system,
                    question,
                    max_retries=max_rate_limit_retries,
                    base_delay_s=rate_limit_base_delay_s,
                    timeout_s=question_timeout_s,
                )
            record = score_answer(dataset, question, answer, run_id=run_id, system=system.name, ids=identity)
            writer.append(record)
            done[question.id] = record
            if progress is not None:
                progress(record)

        with CheckpointWriter(checkpoint) as writer:
            await gather_or_cancel(*(one(q, writer) for q in pending))
        meta = meta.model_copy(update={"finished_at": datetime.now(UTC).isoformat(timespec="seconds")})
        write_text_atomic(meta.model_dump_json(indent=2), folder / METADATA)
        results = [done[q.id] for q in dataset.questions]
        if list(done) != [r.question_id for r in results]:  # ``done`` is in file order: as answers came
            rewrite_checkpoint(checkpoint, results)  # in question order: a rebuilt report has this run's rows
        return EvalRun(metadata=meta, results=results, path=folder)


def run_eval(
    dataset: Dataset,
    system: QASystem,
    *,
    out_dir: Path,
    concurrency: int = 4,
    progress: Callable[[QuestionResult], Any] | None = None,
    decider: DecisionBackend | None = None,
) -> EvalRun:
    """Run ``system`` over every question of ``dataset``; questions already checkpointed are not rerun.
    The run has an event loop of its own: what ``decider`` (the system's) opened in it is closed with
    it."""

    async def run() -> EvalRun:
        try:
            return await run_eval_async(
                dataset, system, out_dir=out_dir, concurrency=concurrency, progress=progress
            )
        finally:
            await close_decider(decider)

    return asyncio.run(run())
