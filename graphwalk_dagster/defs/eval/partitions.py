"""Evaluation partitions: dataset × system."""

from pathlib import Path

import dagster as dg

from graphwalk_core.errors import MissingFileError, MissingFilesError
from graphwalk_core.eval.datasets.registry import DATASET_NAMES, data_files, has_test_split
from graphwalk_core.eval.partition_dataset import HF_PARTITION
from graphwalk_core.eval.systems.graphwalk import PRESETS
from graphwalk_core.eval.systems.registry import SYSTEM_NAMES

#: Every named dataset, and ``hf``: any hub dataset (run config eval_questions.hf: repo@sha, columns).
DATASETS = (*DATASET_NAMES, HF_PARTITION)
#: The suffix of a system partition that walks with the warehouse's trained decider (relation-greedy-trained).
TRAINED = "-trained"
#: eval_results metadata: the folder name of the trained model a partition walked with, ``none`` when it
#: was skipped for want of one (see :func:`~graphwalk_dagster.defs.eval.sensors.trained_model_sensor`).
TRAINED_MODEL = "trained_model"
SYSTEMS = (*SYSTEM_NAMES, *(f"{preset}{TRAINED}" for preset in PRESETS))

eval_partitions = dg.MultiPartitionsDefinition(
    {
        "dataset": dg.StaticPartitionsDefinition(list(DATASETS)),
        "system": dg.StaticPartitionsDefinition(list(SYSTEMS)),
    }
)


def default_split(dataset: str) -> str:
    """The split a partition scores when its run config names none: ``test`` on a dataset whose data folder
    has a test split (MetaQA: every system, so an automated refresh scores what the demo and the
    ``-trained`` partitions score, and a decider learns from dev), ``dev`` on the others (their test
    questions need a file of their own)."""
    return "test" if has_test_split(dataset) else "dev"


def default_split_note(dataset: str, error: BaseException) -> str | None:
    """Why a partition with no split named looked for a file of its default split, when the load
    ``error`` is that a file of that split alone is missing (a data folder or hub repo holding dev
    only); else None."""
    split = default_split(dataset)
    if split == "dev" or not isinstance(error, MissingFileError | MissingFilesError):
        return None
    own = [Path(f).parts for f in data_files(dataset, split=split) if f not in data_files(dataset)]
    if not any(Path(missing).parts[-len(f) :] == f for missing in error.missing for f in own):
        return None
    return f"no split named: a MetaQA partition scores {split} by default; `split: dev` scores dev questions"


def unseen_questions_hint(dataset: str) -> str:
    """The eval_questions run config that gives a ``-trained`` partition questions its model has not
    learned from."""
    if has_test_split(dataset):
        return "eval_questions run config: split: test"
    return "eval_questions run config: questions: a file of questions it has not learned from"


def eval_key(dataset: str, system: str) -> dg.MultiPartitionKey:
    """The partition key of one (dataset, system) pair."""
    return dg.MultiPartitionKey({"dataset": dataset, "system": system})
