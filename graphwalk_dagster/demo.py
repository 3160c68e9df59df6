"""Materialize the whole asset graph in process on the embedded defaults (what ``graphwalk demo`` runs)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.errors import DagsterAssetCheckFailedError, DagsterExecutionInterruptedError

from graphwalk_core.errors import GraphwalkError
from graphwalk_dagster.defs.eval import assets as eval_assets
from graphwalk_dagster.defs.eval import checks as eval_checks
from graphwalk_dagster.defs.eval.partitions import eval_key
from graphwalk_dagster.defs.ingest import assets as ingest_assets
from graphwalk_dagster.defs.ingest import checks as ingest_checks
from graphwalk_dagster.defs.ingest.partitions import SOURCES_PARTITION
from graphwalk_dagster.defs.shared.paths import SOURCES_FILE
from graphwalk_dagster.defs.shared.resources import (
    DeciderResource,
    GraphStoreResource,
    JsonIOManager,
    LLMResource,
    SourcesResource,
    WarehouseResource,
    default_resources,
)
from graphwalk_dagster.defs.training import assets as training_assets
from graphwalk_dagster.defs.training import checks as training_checks
from graphwalk_dagster.demo_report import DemoPlan
from graphwalk_dagster.instance import open_instance
from graphwalk_dagster.instance_config import REPO, prepare

INGEST_CHAIN = [
    ingest_assets.source_profile,
    ingest_assets.source_documents,
    ingest_assets.chunks,
    ingest_assets.extractions,
    ingest_assets.routing_decisions,
    ingest_assets.graph_updates,
]
GRAPH = [
    ingest_assets.knowledge_graph,
    ingest_checks.edge_endpoints_exist,
    ingest_checks.elements_have_provenance,
    ingest_checks.ledger_has_documents,
    ingest_checks.ledger_sources_declared,
]
EVAL = [
    eval_assets.eval_questions,
    eval_assets.eval_results,
    eval_checks.eval_results_valid,
    eval_checks.eval_results_answered,
]
TRAINING = [
    training_assets.decision_examples,
    training_assets.trained_decider,
    training_checks.validation_floor,
]

Log = Callable[[str], None]

#: Dagster's console logger at WARNING: the demo prints its own progress lines.
QUIET_LOGS: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
#: What Ctrl-C raises during the demo: Dagster's own in a step, else Python's.
INTERRUPTS = (KeyboardInterrupt, DagsterExecutionInterruptedError)
#: The demo's runs' job (``dg.materialize``'s name for its own).
DEMO_JOB = "__ephemeral_asset_job__"


def _console_without_errors(context: dg.InitLoggerContext) -> logging.Logger:
    """Dagster's console logger, less its error records: a failed step's stack trace. The demo names
    what failed in one line and the run whose events hold the trace (:class:`RunFailed`)."""
    logger = dg.colored_console_logger.logger_fn(context)
    logger.addFilter(lambda record: record.levelno < logging.ERROR)
    return logger


DEMO_CONSOLE = dg.LoggerDefinition(
    _console_without_errors, config_schema=dg.colored_console_logger.config_schema
)
INSTANCE_CONFIG = REPO / "dagster.yaml"


def demo_instance(home: Path, log: Log = print) -> dg.DagsterInstance:
    """A persistent instance in ``home`` (the repository's dagster.yaml: telemetry off), so the demo's
    runs and materializations show in the UI started with the same ``DAGSTER_HOME``; an earlier copy of
    it is updated, an edited one lacking a setting logged (``instance_config.prepare``)."""
    if (note := prepare(home, INSTANCE_CONFIG)) is not None:
        log(note)
    return open_instance(home)


def offline_resources(warehouse: Path, *, sources_file: Path | None = None) -> dict[str, Any]:
    """The embedded defaults rooted at ``warehouse``: SQLite, local decider, offline extractor, no key;
    the sources of ``sources_file``, else the sample's ``data/sources.yaml`` (not GRAPHWALK_SOURCES)."""
    root = WarehouseResource(root=str(warehouse))
    return {
        **default_resources(),
        "warehouse": root,
        "sources": SourcesResource(path=str(sources_file or SOURCES_FILE)),
        "graph_store": GraphStoreResource(warehouse=root),
        "decider": DeciderResource(backend="local"),
        "llm": LLMResource(model=""),
        "io_manager": JsonIOManager(warehouse=root),
    }


class RunFailed(GraphwalkError):
    """A demo run that failed, or whose error-level asset checks did (``run_id``: its events)."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


def _failed_checks(evaluations: Iterable[dg.AssetCheckEvaluation], log: Log) -> list[str]:
    """Each failed error-level check as ``asset:check (metadata)``; failed warnings are logged."""
    failed: list[str] = []
    for data in evaluations:
        if data.passed:
            continue
        if data.severity == dg.AssetCheckSeverity.WARN:
            reason = data.metadata.get("skip_reason")
            log(f"  warning: {data.check_name}" + (f" ({reason.value})" if reason is not None else ""))
        else:
            facts = ", ".join(f"{key}: {value.value}" for key, value in data.metadata.items())
            failed.append(
                f"{data.asset_key.to_user_string()}:{data.check_name}" + (f" ({facts})" if facts else "")
            )
    return failed


def _materialize(
    assets: Sequence[Any], what: str, instance: dg.DagsterInstance, log: Log = print, **kwargs: Any
) -> dg.ExecuteInProcessResult:
    """``dg.materialize`` of ``assets`` in ``instance``, which must succeed with its error-level checks
    passing, else :class:`RunFailed` naming ``what``, the failed checks or the step's error, and the run.
    A :class:`GraphwalkError` a step raised (bad input, a setting) passes through as it is."""
    try:
        result = _execute(assets, instance, **kwargs)
    except GraphwalkError:
        raise
    except DagsterAssetCheckFailedError as exc:  # a blocking check: the run stopped at it
        run_id = instance.get_runs(limit=1)[0].run_id
        records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        evaluations = [r.dagster_event.asset_check_evaluation_data for r in records if r.dagster_event]
        raise _checks_failed(what, _failed_checks(evaluations, log) or [str(exc)], run_id) from None
    except Exception as exc:  # a step's error: its stack trace is in the run's events
        run_id = instance.get_runs(limit=1)[0].run_id
        raise RunFailed(f"{what} failed: {type(exc).__name__}: {exc}", run_id) from exc
    if failed := _failed_checks(result.get_asset_check_evaluations(), log):
        raise _checks_failed(what, failed, result.run_id)
    return result


def _execute(
    assets: Sequence[Any],
    instance: dg.DagsterInstance,
    *,
    resources: Mapping[str, Any] | None = None,
    run_config: Mapping[str, Any] | None = None,
    partition_key: str | None = None,
) -> dg.ExecuteInProcessResult:
    """``dg.materialize``, its console logger :data:`DEMO_CONSOLE`."""
    defs = dg.Definitions(
        assets=assets,
        resources=resources,
        jobs=[dg.define_asset_job(DEMO_JOB)],
        loggers={"console": DEMO_CONSOLE},
    )
    return defs.resolve_job_def(DEMO_JOB).execute_in_process(
        run_config=run_config, instance=instance, partition_key=partition_key
    )


def _checks_failed(what: str, failed: Sequence[str], run_id: str) -> RunFailed:
    """The error of a run whose error-level checks ``failed``."""
    return RunFailed(f"{what}: asset check failed: {'; '.join(failed)}", run_id)


def ingest_sources(
    source_ids: Sequence[str], resources: dict[str, Any], instance: dg.DagsterInstance, log: Log = print
) -> list[dg.ExecuteInProcessResult]:
    """Register the sources as partitions, run the chain per source, then publish the graph."""
    instance.add_dynamic_partitions(SOURCES_PARTITION, list(source_ids))
    results = []
    for source_id in source_ids:
        log(f"ingest {source_id}")
        results.append(
            _materialize(
                INGEST_CHAIN,
                f"ingesting {source_id}",
                instance,
                log,
                partition_key=source_id,
                resources=resources,
                run_config=QUIET_LOGS,
            )
        )
    log("knowledge_graph")
    results.append(
        _materialize(GRAPH, "knowledge_graph", instance, log, resources=resources, run_config=QUIET_LOGS)
    )
    return results


def train(
    datasets: Sequence[str],
    resources: dict[str, Any],
    instance: dg.DagsterInstance,
    *,
    n: int,
    log: Log = print,
) -> dg.ExecuteInProcessResult:
    """decision_examples from ``n`` dev questions of each of ``datasets``, then trained_decider and its
    check: the model the ``-trained`` eval partitions walk with."""
    log(f"train decider on {', '.join(datasets)} (dev)")
    config = {"decision_examples": {"config": {"datasets": list(datasets), "n": n}}}
    return _materialize(
        TRAINING,
        "training the decider",
        instance,
        log,
        resources=resources,
        run_config={"ops": config, **QUIET_LOGS},
    )


def evaluate(
    partitions: Sequence[tuple[str, str]],
    resources: dict[str, Any],
    instance: dg.DagsterInstance,
    *,
    n: int,
    log: Log = print,
    questions_config: dict[str, Any] | None = None,
    splits: Mapping[str, str] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """One run per (dataset, system) partition (``splits``: a dataset's split when not the default),
    then the summary over all of them."""
    results = []
    for dataset, system in partitions:
        split = (splits or {}).get(dataset)
        questions = {"n": n, **(questions_config or {}), **({"split": split} if split else {})}
        config = {"ops": {"eval_questions": {"config": questions}}, **QUIET_LOGS}
        log(f"eval {dataset} × {system}" + (f" ({split})" if split else ""))
        results.append(
            _materialize(
                EVAL,
                f"eval {dataset} × {system}",
                instance,
                log,
                partition_key=eval_key(dataset, system),
                resources=resources,
                run_config=config,
            )
        )
    log("eval_summary")
    results.append(
        _materialize(
            [eval_assets.eval_summary],
            "eval_summary",
            instance,
            log,
            resources=resources,
            run_config=QUIET_LOGS,
        )
    )
    return results


def run_demo(
    warehouse: Path,
    plan: DemoPlan,
    *,
    n: int,
    sources_file: Path | None = None,
    questions: Path | None = None,
    instance: dg.DagsterInstance | None = None,
    dagster_home: Path | None = None,
    log: Log = print,
) -> None:
    """Ingest every declared source, publish the graph, train the decider when the plan says so, run
    the plan's eval partitions and summarize.

    The runs go to ``instance``, else a persistent instance in ``dagster_home``, else an ephemeral one.
    """
    resources = offline_resources(warehouse, sources_file=sources_file)
    source_ids = [spec.id for spec in resources["sources"].specs()]
    config = {"questions": str(questions)} if questions else None
    if instance is None:
        instance = demo_instance(dagster_home) if dagster_home else dg.DagsterInstance.ephemeral()
    with instance as inst:
        ingest_sources(source_ids, resources, inst, log)
        if plan.train_on:
            train(plan.train_on, resources, inst, n=plan.train_questions, log=log)
        evaluate(plan.partitions, resources, inst, n=n, log=log, questions_config=config, splits=plan.splits)
