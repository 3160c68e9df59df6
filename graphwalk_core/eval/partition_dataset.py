"""The dataset of one evaluation partition; ``custom`` answers over the warehouse's knowledge graph."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphwalk_core.errors import ConfigError
from graphwalk_core.eval.datasets import Dataset, load_dataset
from graphwalk_core.eval.datasets.base import REPO_ROOT
from graphwalk_core.eval.datasets.hub import resolve_data_dir
from graphwalk_core.ingest.publish import export_triples
from graphwalk_core.warehouse import Warehouse

#: The dataset partition whose questions come from any hub dataset (config ``hf``).
HF_PARTITION = "hf"
#: The partitions whose questions can come from a file of the user's (config ``questions``).
QUESTION_FILE_DATASETS = ("custom", "hotpotqa", "2wiki", "2wiki-retrieval")
#: The sample question file over the sample graph built from data/sources.yaml.
CUSTOM_QUESTIONS = REPO_ROOT / "data" / "questions.jsonl"


def load_partition_dataset(
    name: str,
    warehouse: Warehouse,
    *,
    n: int | None,
    split: str = "dev",
    seed: int = 0,
    data_dir: str | Path | None = None,
    hub: str | None = None,
    hub_endpoint: str | None = None,
    questions: str | Path | None = None,
    hf: Mapping[str, Any] | None = None,
) -> Dataset:
    """``load_dataset(name)``; ``custom`` reads ``questions`` over the graph's triples in the warehouse;
    HotpotQA and the 2Wiki datasets read ``questions`` instead of the data folder's file when it is set
    (another split's questions), MetaQA ignores it; ``hf`` loads the hub split ``hf`` describes
    (:class:`HubDatasetSpec` fields, ``columns`` as a ``{FIELD: COLUMN}`` mapping) through HF ``datasets``.

    The data comes from ``data_dir``, or from the dataset repo ``hub`` (``REPO@SHA``), or the default folder.
    """
    if name == HF_PARTITION:
        return _hub_split(hf, n=n, seed=seed, endpoint=hub_endpoint)
    root = resolve_data_dir(Path(data_dir) if data_dir else None, hub, hub_endpoint, [name], split)
    common = {"split": split, "n": n, "seed": seed, "data_dir": root}
    if name not in QUESTION_FILE_DATASETS:  # one run config serves a backfill's every partition
        return load_dataset(name, **common)
    if name != "custom":
        return load_dataset(name, path=Path(questions) if questions else None, **common)
    kb = export_triples(warehouse.root)
    return load_dataset("custom", path=Path(questions) if questions else CUSTOM_QUESTIONS, kb=kb, **common)


def _hub_split(hf: Mapping[str, Any] | None, *, n: int | None, seed: int, endpoint: str | None) -> Dataset:
    from graphwalk_core.eval.datasets.hf import HubDatasetSpec

    if not hf or not hf.get("repo"):
        raise ConfigError(
            f"the {HF_PARTITION!r} dataset needs its hub split in the run config: "
            "hf: {repo: OWNER/NAME@<40-hex sha>, split: validation, columns: {FIELD: COLUMN}}"
        )
    spec = HubDatasetSpec.from_options(
        hf["repo"],
        split=hf.get("split") or "validation",
        config_name=hf.get("config_name"),
        columns=hf.get("columns") or {},
        streaming=bool(hf.get("streaming")),
    )
    # named like its partition (eval_results' dataset column); the repo@sha stays in info["hub"]
    return spec.load(n=n, seed=seed, endpoint=endpoint).model_copy(update={"name": HF_PARTITION})
