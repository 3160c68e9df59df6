"""Training assets: decision examples from labeled questions (and traces), then a trained decider."""

import asyncio
from pathlib import Path

import dagster as dg
from pydantic import Field

from graphwalk_core.errors import InputError
from graphwalk_core.eval.partition_dataset import load_partition_dataset
from graphwalk_core.eval.systems.graphs import open_graph
from graphwalk_core.training.build import dataset_examples, folder_trace_examples, labeled_graph
from graphwalk_core.training.fit import FitConfig, fit_decider
from graphwalk_core.training.graphs import GRAPH, store_identity
from graphwalk_core.training.store import (
    VALIDATION_FLOOR,
    promote,
    read_decision_examples,
    save_model,
    write_decision_examples,
)
from graphwalk_dagster.defs.shared.resources import EmbedderResource, WarehouseResource
from graphwalk_dagster.metadata import to_metadata


class DecisionExamplesConfig(dg.Config):
    datasets: list[str] = Field(
        default=["metaqa-1hop", "metaqa-2hop", "metaqa-3hop"],
        description="labeled datasets over one graph (eval dataset names; custom: the warehouse graph)",
    )
    split: str = Field(default="dev", description="the split to learn from (never test)")
    n: int | None = Field(default=200, description="questions per dataset (seeded subset); none: all")
    seed: int = 0
    data_dir: str | None = Field(default=None, description="benchmark data (default: ../shared/data)")
    questions: str | None = Field(default=None, description="custom question file (dataset custom)")
    traces: str | None = Field(default=None, description="a folder of walk traces (*.json) as soft labels")


class TrainedDeciderConfig(dg.Config):
    max_iter: int = Field(default=60, ge=1, description="training epochs")


@dg.asset(group_name="training", deps=["knowledge_graph"], kinds={"python", "parquet"})
def decision_examples(
    context: dg.AssetExecutionContext, config: DecisionExamplesConfig, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """One row per decision step: weak labels from labeled questions' best relation paths, plus traces."""
    if config.split == "test":
        raise InputError("decision_examples learn from dev (or your own) questions, never from test")
    wh = warehouse.warehouse()
    common = {"n": config.n, "split": config.split, "seed": config.seed, "data_dir": config.data_dir}
    sets = [
        load_partition_dataset(name, wh, questions=config.questions, **common) for name in config.datasets
    ]
    knowledge = labeled_graph(sets)
    store = asyncio.run(open_graph(knowledge))
    examples, unlabeled = asyncio.run(dataset_examples(sets, store))
    if config.traces:
        examples += folder_trace_examples(Path(config.traces))
    path = write_decision_examples(wh, examples, asyncio.run(store_identity(store)))
    kinds = {kind: sum(ex.kind == kind for ex in examples) for kind in ("first", "later", "stop")}
    sources = {src: sum(ex.source == src for ex in examples) for src in ("weak", "trace")}
    context.log.info("%d examples, %d questions without a path to a gold answer", len(examples), unlabeled)
    return dg.MaterializeResult(
        metadata={
            "examples": len(examples),
            "questions": sum(len(ds.questions) for ds in sets),
            "unlabeled_questions": unlabeled,
            **to_metadata({f"kind_{k}": v for k, v in kinds.items()}),
            **to_metadata({f"source_{k}": v for k, v in sources.items()}),
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@dg.asset(group_name="training", deps=[decision_examples], kinds={"python", "scikitlearn"})
def trained_decider(
    context: dg.AssetExecutionContext,
    config: TrainedDeciderConfig,
    warehouse: WarehouseResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    """A decider trained on decision_examples; a versioned model folder in the warehouse, made the newest
    (``promoted``) only when its validation accuracy reaches the floor of the ``validation_floor`` check."""
    wh = warehouse.warehouse()
    examples, graph = read_decision_examples(wh)
    report = fit_decider(
        examples, embedder.make(), config=FitConfig(max_iter=config.max_iter), extra_manifest={GRAPH: graph}
    )
    assert report.model is not None
    folder = save_model(wh, report.model)
    promoted = promote(wh, folder)
    if not promoted:
        context.log.warning(
            "validation accuracy %s does not reach the floor %s: %s is kept but not made the newest model",
            report.validation_accuracy["all"], VALIDATION_FLOOR, folder.name,
        )  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            **to_metadata(report.examples),
            **to_metadata({f"validation_accuracy_{k}": v for k, v in report.validation_accuracy.items()}),
            **to_metadata({f"train_accuracy_{k}": v for k, v in report.train_accuracy.items()}),
            "training_seconds": round(sum(report.seconds.values()), 2),
            "model_id": report.model.name,
            "model_path": dg.MetadataValue.path(str(folder)),
            "promoted": promoted,
        }
    )
