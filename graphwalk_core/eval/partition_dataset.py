"""The dataset of one evaluation partition; ``custom`` answers over the warehouse's knowledge graph."""

from __future__ import annotations

from pathlib import Path

from graphwalk_core.eval.datasets import Dataset, load_dataset
from graphwalk_core.eval.datasets.base import REPO_ROOT
from graphwalk_core.eval.datasets.hub import resolve_data_dir
from graphwalk_core.ingest.publish import export_triples
from graphwalk_core.warehouse import Warehouse

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
) -> Dataset:
    """``load_dataset(name)``; ``custom`` reads ``questions`` over the graph's triples in the warehouse.

    The data comes from ``data_dir``, or from the dataset repo ``hub`` (``REPO@SHA``), or the default folder.
    """
    root = resolve_data_dir(Path(data_dir) if data_dir else None, hub, hub_endpoint, [name], split)
    common = {"split": split, "n": n, "seed": seed, "data_dir": root}
    if name != "custom":
        return load_dataset(name, **common)
    kb = export_triples(warehouse.root)
    return load_dataset("custom", path=Path(questions) if questions else CUSTOM_QUESTIONS, kb=kb, **common)
