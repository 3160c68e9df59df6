"""Evaluation assets: questions and results per dataset × system, and the summary over all of them."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from graphwalk_core.backends import Backends
from graphwalk_core.errors import ConfigError, InputError, NamesOptions
from graphwalk_core.eval.datasets.base import Dataset
from graphwalk_core.eval.partition_dataset import load_partition_dataset
from graphwalk_core.eval.report import results_table
from graphwalk_core.eval.runner import run_eval
from graphwalk_core.eval.systems.registry import build_system
from graphwalk_core.eval.tables import partition_stats, summarize, write_results
from graphwalk_core.training.graphs import datasets_note
from graphwalk_core.training.store import learned_questions
from graphwalk_core.warehouse.models import latest_model
from graphwalk_dagster.automation import refresh_materialized_partitions, refresh_on_any_update
from graphwalk_dagster.defs.eval.partitions import (
    TRAINED,
    TRAINED_MODEL,
    default_split,
    default_split_note,
    eval_partitions,
    unseen_questions_hint,
)
from graphwalk_dagster.defs.shared.resources import (
    DeciderResource,
    EmbedderResource,
    LLMResource,
    WarehouseResource,
    backends,
)
from graphwalk_dagster.metadata import embedded_image, latest_materialization, preview, to_metadata


class HubSplitConfig(dg.Config):
    """The ``hf`` dataset partition's split: any hub dataset through HF ``datasets`` at a pinned commit."""

    repo: str = Field(description="REPO@SHA: a Hugging Face dataset repo at a full 40-hex commit sha")
    split: str = Field(default="validation", description="the dataset's split")
    config_name: str | None = Field(default=None, description="the dataset's config, if it has several")
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="FIELD: COLUMN for question, answers, id, passages, supporting, title, text "
        "(an empty COLUMN: no such column); unset fields keep HotpotQA's layout",
    )
    streaming: bool = Field(default=False, description="stream rows over HTTP (n keeps the first n)")


class EvalQuestionsConfig(dg.Config):
    n: int | None = Field(default=20, ge=1, description="questions per partition (seeded subset); none: all")
    split: str | None = Field(
        default=None,
        description="dev | test (MetaQA; the shared HotpotQA and 2Wiki files are dev only); default: test "
        "on MetaQA (a trained decider learns from its dev questions), else dev",
    )
    seed: int = 0
    data_dir: str | None = Field(default=None, description="benchmark data (default: ../shared/data)")
    hub: str | None = Field(
        default=None,
        description="REPO@SHA: a Hugging Face dataset repo at a full commit sha, laid out like "
        "../shared/data (instead of data_dir)",
    )
    hub_endpoint: str | None = Field(default=None, description="hub endpoint (default: $HF_ENDPOINT)")
    questions: str | None = Field(
        default=None,
        description="question file: custom's (default: data/questions.jsonl), or hotpotqa's, 2wiki's and "
        "2wiki-retrieval's in their own format (default: the data folder's dev file; a test split needs "
        "one); the metaqa partitions ignore it",
    )
    hf: HubSplitConfig | None = Field(default=None, description="the hub split of the hf dataset partition")


#: The eval_questions config field of each option key the core names in its errors where the field is
#: named otherwise (``n``, ``split``, ``data_dir``, ``hub``, ``hub_endpoint`` are named alike).
QUESTIONS_FIELDS = {"path": "questions", "repo": "hf.repo"}


def config_error(exc: NamesOptions, asset: str, fields: dict[str, str]) -> InputError | ConfigError:
    """``exc`` worded for a Dagster user: the options it names as ``asset``'s run-config fields."""
    kind = ConfigError if isinstance(exc, ConfigError) else InputError
    return kind(f"{asset} run config: {exc.naming(lambda key: f'`{fields.get(key, key)}`')}")


class EvalResultsConfig(dg.Config):
    concurrency: int = Field(default=4, ge=1)


#: The run tag Dagster puts on a run its automation condition sensor requests (a refresh).
AUTOMATION_TAG = "dagster/from_automation_condition"


def _questions_config(context: dg.AssetExecutionContext, config: EvalQuestionsConfig) -> EvalQuestionsConfig:
    """The config this run loads questions with: a refresh by the automation has no run config of its
    own, so it takes the one the partition was last materialized with (its ``config`` metadata), and
    answers the same questions over the new graph rather than the defaults' (an ``hf`` partition would
    fail without its repo)."""
    if context.run.tags.get(AUTOMATION_TAG) != "true":
        return config
    latest = latest_materialization(context.instance, context.asset_key, context.partition_key)
    event = latest.asset_materialization if latest is not None else None
    recorded = event.metadata.get("config") if event else None
    return EvalQuestionsConfig(**recorded.value) if isinstance(recorded, dg.JsonMetadataValue) else config


def _dims(context: dg.AssetExecutionContext) -> dict[str, str]:
    key = context.partition_key
    return key.keys_by_dimension if isinstance(key, dg.MultiPartitionKey) else {}


def _questions_error(exc: Exception, dataset: str, *, split_named: bool) -> Exception:
    """``exc`` as eval_questions reports it: options named as its run-config fields, and with no split
    named, a note when a file of the default split is missing (a MetaQA copy holding dev only)."""
    error = config_error(exc, "eval_questions", QUESTIONS_FIELDS) if isinstance(exc, NamesOptions) else exc
    note = None if split_named else default_split_note(dataset, exc)
    if note is None:
        return error
    kind = ConfigError if isinstance(error, ConfigError) else InputError
    return kind(f"{error} ({note})")


@dg.asset(
    partitions_def=eval_partitions,
    group_name="eval",
    deps=["knowledge_graph"],
    kinds={"python"},
    automation_condition=refresh_materialized_partitions(),
)
def eval_questions(
    context: dg.AssetExecutionContext, config: EvalQuestionsConfig, warehouse: WarehouseResource
) -> Dataset:
    """The partition's dataset: a seeded subset of questions plus the knowledge to answer from (an
    automated refresh loads it with the run config of the partition's last materialization)."""
    dims = _dims(context)
    config = _questions_config(context, config)
    options = {**config.model_dump(), "split": config.split or default_split(dims["dataset"])}
    try:
        dataset = load_partition_dataset(dims["dataset"], warehouse.warehouse(), **options)
    except (NamesOptions, InputError) as exc:
        error = _questions_error(exc, dims["dataset"], split_named=config.split is not None)
        if error is exc:
            raise
        raise error from exc
    context.add_output_metadata(
        {
            "questions": len(dataset.questions),
            "config": dg.MetadataValue.json(config.model_dump()),
            "preview": preview([q.model_dump(include={"id", "text", "gold"}) for q in dataset.questions]),
        }
    )
    return dataset


def _backends(
    system: str,
    decider: DeciderResource,
    llm: LLMResource,
    embedder: EmbedderResource,
    warehouse: WarehouseResource,
) -> Backends:
    """The partition's backends; ``<preset>-trained`` walks with the warehouse's newest trained decider
    (or the decider resource's ``model_path``); without one the system is skipped with the reason,
    which names the resource's warehouse (not the settings' one, whose model Backends would fall back to)."""
    found = backends(decider, llm, embedder)
    if not system.endswith(TRAINED):
        return found
    # the resource's warehouse: with no model_path, Backends walks with its newest model
    update = {"decider": "trained", "warehouse": warehouse.path()}
    return Backends(found.settings.model_copy(update=update))


def _walks_trained(dims: dict[str, str], decider: DeciderResource) -> bool:
    """Whether a partition walks with a trained decider: a ``-trained`` one, or any with the decider
    resource's ``trained`` backend."""
    return dims["system"].endswith(TRAINED) or decider.settings().resolved_decider() == "trained"


def _trained_model(decider: DeciderResource, warehouse: WarehouseResource) -> Path | None:
    """The model folder a partition walking with a trained decider walks with: the decider resource's
    ``model_path``, else the warehouse's newest model (None: no model yet, the system is skipped then)."""
    return decider.settings().decider_model or latest_model(warehouse.warehouse())


def _check_trained(
    dims: dict[str, str],
    dataset: Dataset,
    decider: DeciderResource,
    warehouse: WarehouseResource,
    model: Path | None,
) -> str | None:
    """A partition walking with a trained decider (``model``) must not score questions its model learned
    from (the ids its folder lists): with ``split: dev`` (the default off MetaQA), eval_questions' seed 0
    picks 20 of the 200 dev questions decision_examples' defaults learn from, and the automation reruns a
    partition with the defaults. Returns a warning when the model learned over another graph than the
    dataset's."""
    seen = learned_questions(warehouse.warehouse(), [dataset], decider.settings().decider_model)
    if seen:
        raise InputError(
            f"eval_results {dims['dataset']} × {dims['system']}: {len(seen)} of {len(dataset.questions)} "
            f"questions are ones the trained decider learned from (first: {seen[0]}); "
            f"score questions it has not seen ({unseen_questions_hint(dims['dataset'])})"
        )
    return datasets_note(model, [dataset])


@dg.asset(
    partitions_def=eval_partitions,
    group_name="eval",
    kinds={"duckdb", "parquet"},
    automation_condition=refresh_materialized_partitions(),
)
def eval_results(
    context: dg.AssetExecutionContext,
    config: EvalResultsConfig,
    eval_questions: Dataset,
    warehouse: WarehouseResource,
    decider: DeciderResource,
    llm: LLMResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    """Run the partition's system over its questions; write eval_results/dataset=…/system=… Parquet.

    The metadata says whether the partition was answered (``status``: ok, partial, skipped with
    ``skip_reason``), how many questions were ``answered`` this run (a skipped one was not) and how many
    answers were ``reused`` from an earlier run over the same graph.
    """
    dims = _dims(context)
    trained = _walks_trained(dims, decider)
    model = _trained_model(decider, warehouse) if trained else None
    note = _check_trained(dims, eval_questions, decider, warehouse, model) if trained else None
    if note:
        context.log.warning(note)
    name = dims["system"].removesuffix(TRAINED)
    found = _backends(dims["system"], decider, llm, embedder, warehouse).for_systems([name])
    system = build_system(
        name,
        eval_questions,
        decider=found.decider,
        embedder=found.embedder,
        llm=found.llm,
        skip_reason=found.reasons,
        label=dims["system"],
    )
    run = run_eval(
        eval_questions,
        system,
        out_dir=warehouse.path() / "eval_runs",
        concurrency=config.concurrency,
        decider=found.decider,
    )
    table = results_table(run.results)
    path = write_results(warehouse.warehouse(), dims["dataset"], dims["system"], table)
    rows = table.select(["question_id", "status", "predicted", "gold", "f1", "error"]).to_pylist()
    return dg.MaterializeResult(
        metadata={
            **to_metadata(partition_stats(table)),
            "answered": sum(not r.reused and r.status != "skipped" for r in run.results),
            "run_id": run.metadata.run_id,
            "graph_fingerprint": (run.metadata.graph_fingerprint or "none")[:16],
            **({TRAINED_MODEL: model.name if model else "none"} if trained else {}),
            **({"warning": note} if note else {}),
            "path": dg.MetadataValue.path(str(path)),
            "preview": preview(rows),
        }
    )


@dg.asset(
    deps=[eval_results],
    group_name="eval",
    kinds={"duckdb", "parquet"},
    automation_condition=refresh_on_any_update(),
)
def eval_summary(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """One row per dataset × system over every eval_results partition, with plots."""
    summary = summarize(warehouse.warehouse())
    plots = {name: dg.MetadataValue.path(str(path)) for name, path in summary.plots.items()}
    images = "\n\n".join(embedded_image(name, path) for name, path in summary.plots.items())
    return dg.MaterializeResult(
        metadata={
            "rows": summary.table.num_rows,
            "summary": dg.MetadataValue.md(summary.markdown),
            **plots,
            "plots": dg.MetadataValue.md(images),
        }
    )
