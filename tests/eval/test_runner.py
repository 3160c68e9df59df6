"""The runner: scoring records, resume after a SIGKILL or a crash, rate-limit backoff, metadata."""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import forked_jobs
import pyarrow.parquet as pq
import pytest

from graphwalk_core.eval.checkpoint import read_checkpoint
from graphwalk_core.eval.datasets.base import Question
from graphwalk_core.eval.report import report_from_runs
from graphwalk_core.eval.runner import (
    CHECKPOINT,
    EvalRun,
    run_eval,
    run_eval_async,
    run_folder,
    run_id_for,
)
from graphwalk_core.eval.systems.base import SkippedSystem, SystemAnswer

from .fakes import Crash, DictSystem, toy_dataset

HERE = Path(__file__).resolve().parent


def _checkpoint_ids(out: Path) -> list[str]:
    (folder,) = (out / "runs").iterdir()
    return [r.question_id for r in read_checkpoint(folder / CHECKPOINT)]


def test_run_records_scores_usage_and_metadata(tmp_path: Path) -> None:
    ds = toy_dataset(4)
    run = run_eval(ds, DictSystem(), out_dir=tmp_path, concurrency=2)
    assert [r.question_id for r in run.results] == ["q000", "q001", "q002", "q003"]
    assert [(r.em, r.f1, r.hits_at_1) for r in run.results] == [(1.0, 1.0, 1.0), (0.0, 0.0, 0.0)] * 2
    r1 = run.results[1]
    assert (r1.decision_calls, r1.input_tokens, r1.cost_usd, r1.latency_s, r1.linking_correct) == (
        1,
        10,
        0.0001,
        0.2,
        True,
    )
    assert run.results[0].cost_usd is None
    assert run.results[0].decider == "fake:dict"
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["run_id"] == run_id_for(ds, DictSystem()) == run.metadata.run_id
    assert meta["system_identity"] == {"decider": "fake:dict", "system": "dict"}
    assert meta["n_questions"] == 4 and meta["finished_at"] is not None
    assert set(meta["package_versions"]) >= {"graphwalk", "litellm", "typesafe-sdk"}
    assert meta["git_sha"] is None or len(meta["git_sha"].split("+")[0]) == 40


def test_sigkilled_run_resumes_with_every_question_exactly_once(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(HERE / "run_killable.py"), str(tmp_path)])
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            runs = tmp_path / "runs"
            files = list(runs.glob("*/" + CHECKPOINT)) if runs.exists() else []
            if files and files[0].read_bytes().count(b"\n") >= 6:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the subprocess never wrote 6 results")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = _checkpoint_ids(tmp_path)
    assert 6 <= len(before) < 20
    system = DictSystem()
    run = run_eval(toy_dataset(), system, out_dir=tmp_path, concurrency=3)
    assert sorted(system.calls) == sorted(set(f"q{i:03d}" for i in range(20)) - set(before))
    after = _checkpoint_ids(tmp_path)
    assert sorted(after) == [f"q{i:03d}" for i in range(20)]  # each exactly once
    assert run.metadata.resumed_from == len(before)
    assert [r.question_id for r in run.results] == [f"q{i:03d}" for i in range(20)]


def test_crash_after_k_questions_then_rerun(tmp_path: Path) -> None:
    with pytest.raises(Crash):
        run_eval(toy_dataset(), DictSystem(crash_after=7), out_dir=tmp_path, concurrency=1)
    assert _checkpoint_ids(tmp_path) == [f"q{i:03d}" for i in range(7)]
    system = DictSystem()
    run_eval(toy_dataset(), system, out_dir=tmp_path, concurrency=4)
    assert sorted(system.calls) == [f"q{i:03d}" for i in range(7, 20)]
    assert sorted(_checkpoint_ids(tmp_path)) == [f"q{i:03d}" for i in range(20)]


def test_torn_last_line_is_dropped_and_rerun(tmp_path: Path) -> None:
    run_eval(toy_dataset(3), DictSystem(), out_dir=tmp_path)
    (folder,) = (tmp_path / "runs").iterdir()
    path = folder / CHECKPOINT
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:25])  # the process died mid-write
    system = DictSystem()
    run_eval(toy_dataset(3), system, out_dir=tmp_path)
    assert len(system.calls) == 1
    assert sorted(_checkpoint_ids(tmp_path)) == ["q000", "q001", "q002"]


def test_a_report_while_a_run_writes_leaves_its_checkpoint_whole(tmp_path: Path) -> None:
    """``graphwalk eval report`` while an eval ran took the line the run was writing for one a killed run
    left, and cut it off the run's checkpoint: the rest of the line then followed the cut (a record lost,
    and a line that is no record, an error at every later read; 73 of 3,000 records lost in a loop). Only
    the run's own process cuts a torn line now; a report leaves it out."""
    run_eval(toy_dataset(3), DictSystem(), out_dir=tmp_path)
    (folder,) = (tmp_path / "runs").iterdir()
    path = folder / CHECKPOINT
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:25])  # the run is writing its third record
    results = pq.read_table(report_from_runs(tmp_path, plots=False)["results"])
    assert results.column("question_id").to_pylist() == ["q000", "q001"]
    with path.open("ab") as f:
        f.write(lines[2][25:])  # the run's write goes on
    assert _checkpoint_ids(tmp_path) == ["q000", "q001", "q002"]


def test_rate_limits_back_off_and_other_errors_are_recorded(tmp_path: Path) -> None:
    system = DictSystem(rate_limits=2)
    run = asyncio.run(
        run_eval_async(toy_dataset(1), system, out_dir=tmp_path, concurrency=1, rate_limit_base_delay_s=0.001)
    )
    assert system.calls == ["q000"] * 3
    assert run.results[0].status == "ok" and run.results[0].em == 1.0
    exhausted = DictSystem(rate_limits=10)
    run = asyncio.run(
        run_eval_async(
            toy_dataset(1),
            exhausted,
            out_dir=tmp_path / "b",
            max_rate_limit_retries=2,
            rate_limit_base_delay_s=0.001,
        )
    )
    assert len(exhausted.calls) == 3
    assert (run.results[0].status, run.results[0].error, run.results[0].f1) == (
        "error",
        "RateLimited: 429 Too Many Requests",
        None,
    )


def test_skipped_system_records_every_question_with_the_reason(tmp_path: Path) -> None:
    run = run_eval(toy_dataset(3), SkippedSystem("vector-rag", "no LLM configured"), out_dir=tmp_path)
    assert [(r.status, r.error, r.f1, r.linking_correct) for r in run.results] == [
        ("skipped", "no LLM configured", None, None)
    ] * 3


def test_an_edited_question_is_answered_again_and_unchanged_ones_reused(tmp_path: Path) -> None:
    """Reuse is keyed by each question's content: new gold, text or start is answered and scored anew."""
    run_eval(toy_dataset(4), DictSystem(), out_dir=tmp_path)
    questions = toy_dataset(4).questions
    questions[0] = questions[0].model_copy(update={"gold": ["new gold"]})
    questions[1] = questions[1].model_copy(update={"text": "question one, reworded"})
    questions[3] = questions[3].model_copy(update={"extra": {"start": "s9"}})
    edited = toy_dataset(4).model_copy(update={"questions": questions})
    system = DictSystem()
    run = run_eval(edited, system, out_dir=tmp_path)
    assert system.calls == ["q000", "q001", "q003"]
    assert (run.metadata.resumed_from, run.metadata.edited) == (1, 3)
    assert [(r.question, r.gold, r.gold_start, r.f1, r.reused) for r in run.results] == [
        ("question 0", ["new gold"], "s0", 0.0, False),
        ("question one, reworded", ["ans1"], "s1", 0.0, False),
        ("question 2", ["ans2"], "s2", 1.0, True),
        ("question 3", ["ans3"], "s9", 0.0, False),
    ]
    assert sorted(_checkpoint_ids(tmp_path)) == ["q000", "q001", "q002", "q003"]  # stale ones dropped
    again = DictSystem()
    assert run_eval(edited, again, out_dir=tmp_path).metadata.resumed_from == 4 and again.calls == []


def test_a_run_folder_stays_under_out_whatever_the_split_and_dataset_names(tmp_path: Path) -> None:
    """A split is a free label (the custom partition's run config) and a hub dataset is ``hf:owner/name``:
    '../' in a split wrote the run outside the out folder, and a hub run's folder was nested in an
    ``hf:owner`` one, where ``report_from_runs`` did not find it."""
    out = tmp_path / "out"
    folders = []
    for name, split in (("custom", "../../../../escaped"), ("hf:owner/name", "validation")):
        dataset = toy_dataset(2).model_copy(update={"name": name, "split": split})
        run = run_eval(dataset, DictSystem(), out_dir=out)
        assert run.metadata.run_id == f"{name}-{split}-dict-{run_id_for(dataset, DictSystem())[-10:]}"
        folders.append(run.path.relative_to(out / "runs").as_posix())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [f.rsplit("-", 1)[0] for f in folders] == [
        "custom-..%2F..%2F..%2F..%2Fescaped-dict",
        "hf%3Aowner%2Fname-validation-dict",
    ]
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(folders)
    results = pq.read_table(report_from_runs(out, plots=False)["results"]).to_pylist()
    assert sorted({r["dataset"] for r in results}) == ["custom", "hf:owner/name"]


def test_a_run_folder_of_the_earlier_unencoded_layout_is_moved_and_resumed(tmp_path: Path) -> None:
    """Run folders were ``runs/<run_id>`` unencoded: a hub run nested in ``hf:owner``, a split with a
    space named as is. A rerun did not find them, answered every question again, and a report then held
    those questions twice (the old folder beside the new)."""
    out = tmp_path / "out"
    folders = []
    for name, split in (("hf:owner/name", "validation"), ("custom", "my split")):
        dataset = toy_dataset(3).model_copy(update={"name": name, "split": split})
        run = run_eval(dataset, DictSystem(), out_dir=out)
        legacy = out / "runs" / run.metadata.run_id
        legacy.parent.mkdir(parents=True, exist_ok=True)
        run.path.rename(legacy)
        again = DictSystem()
        rerun = run_eval(dataset, again, out_dir=out)
        assert (again.calls, rerun.metadata.resumed_from, rerun.path) == ([], 3, run.path)
        folders.append(run.path.name.rsplit("-", 1)[0])
    assert folders == ["hf%3Aowner%2Fname-validation-dict", "custom-my%20split-dict"]
    assert sorted(p.name.rsplit("-", 1)[0] for p in (out / "runs").iterdir()) == sorted(folders)
    results = pq.read_table(report_from_runs(out, plots=False)["results"]).to_pylist()
    assert sorted((r["dataset"], r["question_id"]) for r in results) == [
        ("custom", "q000"),
        ("custom", "q001"),
        ("custom", "q002"),
        ("hf:owner/name", "q000"),
        ("hf:owner/name", "q001"),
        ("hf:owner/name", "q002"),
    ]


def test_two_processes_running_one_eval_at_once_answer_each_question_once(tmp_path: Path) -> None:
    """One eval started twice at once (a Dagster partition launched again, the same ``graphwalk eval`` in
    two terminals): both answered every question (twice the LLM cost) and appended to one checkpoint,
    which then held each question twice (``graphwalk eval report`` counted 40 questions of 20). A run now
    holds its folder while it runs: the second waits and reuses the first's answers."""

    def one_eval(i: int) -> None:
        logging.getLogger("graphwalk_core.files").addHandler(logging.FileHandler(tmp_path / f"child{i}.log"))
        system = DictSystem(delay_s=0.02)
        run = run_eval(toy_dataset(), system, out_dir=tmp_path, concurrency=2)
        summary = [len(system.calls), sum(r.reused for r in run.results), len(run.results)]
        (tmp_path / f"child{i}.json").write_text(json.dumps(summary))

    assert forked_jobs.at_once(one_eval, 2) == [0, 0]
    children = sorted(json.loads((tmp_path / f"child{i}.json").read_text()) for i in range(2))
    assert children == [[0, 20, 20], [20, 0, 20]]
    assert _checkpoint_ids(tmp_path) == [f"q{i:03d}" for i in range(20)]
    (folder,) = (tmp_path / "runs").iterdir()
    said = sorted((tmp_path / f"child{i}.log").read_text() for i in range(2))
    assert said == ["", f"{folder}: another process is using it; waiting for it to finish\n"]


def test_a_question_that_fails_the_run_cancels_the_others_in_flight(tmp_path: Path) -> None:
    """A question failing the run (the system crashing, a progress callback or a checkpoint write raising)
    left the others running: they went on asking the system once the run had failed and its folder was
    released, and wrote into its closed checkpoint. They are cancelled with it now."""

    class CrashesOnce(DictSystem):
        async def answer(self, question: Question) -> SystemAnswer:
            if question.id == "q001":
                self.calls.append(question.id)
                raise Crash("injected crash at q001")
            return await super().answer(question)

    system = CrashesOnce(delay_s=0.05)

    async def main() -> None:
        with pytest.raises(Crash):
            await run_eval_async(toy_dataset(6), system, out_dir=tmp_path, concurrency=2)
        await asyncio.sleep(0.3)  # what was left running would answer the rest meanwhile

    asyncio.run(main())
    assert system.calls == ["q000", "q001", "q002"]  # q002 took the slot q001 freed as it failed
    assert _checkpoint_ids(tmp_path) == []


def test_a_question_that_never_gets_an_answer_is_an_error_and_the_run_goes_on(tmp_path: Path) -> None:
    """A system stuck on one question (a call that never returns) held the run forever, and every
    question after it with one question in flight. The attempt is cut at ``question_timeout_s`` now and
    recorded as an error, which a rerun asks again."""

    class Stuck(DictSystem):
        async def answer(self, question: Question) -> SystemAnswer:
            if question.id == "q001":
                self.calls.append(question.id)
                await asyncio.Event().wait()
            return await super().answer(question)

    async def main() -> EvalRun:
        return await asyncio.wait_for(
            run_eval_async(toy_dataset(3), Stuck(), out_dir=tmp_path, concurrency=1, question_timeout_s=0.2),
            timeout=10,
        )

    run = asyncio.run(main())
    assert [(r.question_id, r.status, r.error) for r in run.results] == [
        ("q000", "ok", None),
        ("q001", "error", "TimeoutError: no answer within 0.2s"),
        ("q002", "ok", None),
    ]
    again = DictSystem()
    run_eval(toy_dataset(3), again, out_dir=tmp_path)
    assert again.calls == ["q001"]


def test_ctrl_c_ends_a_run_waiting_for_its_folder(tmp_path: Path) -> None:
    """A run waiting for another process to let its folder go blocked the event loop in ``flock``, so
    Ctrl-C went unheard until that process finished. The wait polls now: Ctrl-C ends it at once, nothing
    answered."""
    folder = run_folder(tmp_path, run_id_for(toy_dataset(), DictSystem()))
    folder.mkdir(parents=True)
    held = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process runs it
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "run_killable.py"), str(tmp_path)],
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not ignored when in background
        )
        try:
            assert proc.stderr is not None
            assert proc.stderr.readline().decode().endswith("waiting for it to finish\n")
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=5)
        finally:
            proc.kill()
            proc.communicate()
    finally:
        os.close(held)
    assert proc.returncode == -signal.SIGINT
    assert not (folder / CHECKPOINT).exists()
