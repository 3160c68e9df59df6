"""Ingest many source partitions at once: one run of ``ingest_parallel`` per partition, in parallel.

Each run executes on the multiprocess executor (every step in its own process), so N sources extract,
route and write their graph at once, as a backfill over N partitions does when the run queue allows N
runs. The instance must be persistent (``DAGSTER_HOME``); the graph store, warehouse and sources come
from the environment (``GRAPHWALK_GRAPH_URL``, ``GRAPHWALK_WAREHOUSE``, ``GRAPHWALK_SOURCES``), which
every step process inherits.

Run: ``python -m graphwalk_dagster.scale_out SOURCE_ID... [--max-runs N]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import dagster as dg
from dagster._core.instance.ref import InstanceRef
from dagster._utils.error import SerializableErrorInfo

from graphwalk_core.errors import GraphwalkError, InputError
from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION
from graphwalk_dagster.defs.shared.resources import SourcesResource
from graphwalk_dagster.demo import QUIET_LOGS
from graphwalk_dagster.instance import home_instance
from graphwalk_dagster.pools import count_of, set_pool_limits


def ingest_parallel_job() -> dg.JobDefinition:
    """The code location's ``ingest_parallel`` job (rebuilt in every step process)."""
    from graphwalk_dagster.definitions import defs

    return defs().resolve_job_def("ingest_parallel")


class RunsFailed(RuntimeError):
    """Some ingest runs did not succeed (each one's error was logged)."""


def step_error(error: SerializableErrorInfo | None) -> str:
    """The first line of the innermost cause of a step's error: the graphwalk or driver error itself,
    not Dagster's "Error occurred while executing op" wrapper around it (module path dropped)."""
    if error is None:
        return "?"
    while error.cause is not None:
        error = error.cause
    line = (error.message.strip() or error.cls_name or "?").splitlines()[0]
    name, sep, rest = line.partition(": ")
    return f"{name.rsplit('.', 1)[-1]}{sep}{rest}" if sep and " " not in name else line


def _run_partition(ref: InstanceRef, source_id: str) -> tuple[str, str, list[str]]:
    """One ``ingest_parallel`` run of ``source_id`` in this (run) process: its run id, status and the
    errors of the steps that failed."""
    job = dg.build_reconstructable_job(__name__, ingest_parallel_job.__name__)
    with dg.DagsterInstance.from_ref(ref) as instance:
        tags = {"dagster/partition": source_id}
        with dg.execute_job(job, instance, run_config=QUIET_LOGS, tags=tags, raise_on_error=False) as result:
            failures = [(e.step_key, e.step_failure_data.error) for e in result.get_step_failure_events()]
            if not failures:  # a run that failed outside its steps (e.g. claiming a pool)
                ended = [e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE]
                failures = [("run", e.job_failure_data.error) for e in ended]
            errors = [f"{step}: {step_error(error)}" for step, error in failures]
            return result.run_id, result.dagster_run.status.value, errors


def check_declared(source_ids: Sequence[str], sources: SourcesResource) -> None:
    """Refuse ids that ``sources`` does not declare (a typo would stay registered as a partition) and an
    id given twice (two runs of one source at once, outside the run queue, overtake each other)."""
    declared = [spec.id for spec in sources.specs()]
    unknown = [sid for sid in source_ids if sid not in declared]
    if unknown:
        raise InputError(
            f"sources {unknown} are not declared in {sources.file()} (it declares {declared}): nothing was "
            "registered or run"
        )
    repeated = next((sid for n, sid in enumerate(source_ids) if sid in source_ids[:n]), None)
    if repeated is not None:
        raise InputError(
            f"source {repeated!r} is named twice: one run per source (two at once would overtake each "
            "other); nothing was registered or run"
        )


def ingest_partitions(
    source_ids: Sequence[str],
    instance: dg.DagsterInstance,
    *,
    max_runs: int,
    log: Callable[[str], None] = print,
) -> dict[str, str]:
    """Register ``source_ids`` as partitions and ingest them, ``max_runs`` runs at a time, each run in a
    process of its own; the run ids by partition (raises when a run did not succeed).

    One process per run, as Dagster's run launchers do: runs in threads of one process deadlock, since
    each run's log setup (``logging.config.dictConfig``) shuts down every handler of the process while
    another run's handler is writing an event. The run processes are forked from this one before it
    starts any thread, so they start with the code location already imported.
    """
    if not instance.is_persistent:
        raise ValueError("the multiprocess executor needs a persistent instance: set DAGSTER_HOME")
    check_declared(source_ids, SourcesResource())
    if instance.global_op_concurrency_default_limit is None:
        set_pool_limits(instance)  # before the runs race to create the pools (graphwalk_dagster/pools.py)
    instance.add_dynamic_partitions(SOURCES_PARTITION, list(source_ids))
    ref = instance.get_ref()
    ingest_parallel_job()  # imported here once, so every run process starts with it
    forked = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=max_runs, mp_context=forked) as pool:
        done = dict(
            zip(source_ids, pool.map(_run_partition, [ref] * len(source_ids), source_ids), strict=True)
        )
    for source_id, (run_id, status, errors) in done.items():
        log(f"ingest {source_id}: {status} (run {run_id})" + "".join(f"\n  {e}" for e in errors))
    failed = sorted(s for s, (_, status, _) in done.items() if status != dg.DagsterRunStatus.SUCCESS.value)
    if failed:
        raise RunsFailed(f"ingest runs failed for {failed}; see their events in the instance")
    return {source_id: run_id for source_id, (run_id, _, _) in done.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("source_ids", nargs="+", help="declared sources (sources.yaml ids)")
    # 0 failed with ProcessPoolExecutor's traceback after the partitions were registered
    parser.add_argument("--max-runs", type=count_of("runs"), default=4, help="runs at once (default 4)")
    args = parser.parse_args(argv)
    try:
        with home_instance() as instance:
            ingest_partitions(args.source_ids, instance, max_runs=args.max_runs)
    except (GraphwalkError, RunsFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, RunsFailed) else 2  # runs that failed; else nothing ran (a bad id)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
