"""Where the warehouse keeps training data and models: the ``decision_examples`` table and model folders."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from graphwalk_core.decisions.trained import MANIFEST
from graphwalk_core.errors import InputError
from graphwalk_core.training.examples import DecisionExample, read_examples, to_table
from graphwalk_core.warehouse.tables import PART_FILE, Warehouse

EXAMPLES = "decision_examples"
MODELS_DIR = Path("models") / "decider"
#: The file naming the newest model folder (relative to the models folder).
LATEST = "LATEST"


def write_decision_examples(warehouse: Warehouse, examples: list[DecisionExample]) -> Path:
    """Replace the ``decision_examples`` table."""
    return warehouse.write(EXAMPLES, to_table(examples))


def read_decision_examples(warehouse: Warehouse) -> list[DecisionExample]:
    path = warehouse.partition_dir(EXAMPLES, None) / PART_FILE
    if not path.is_file():
        raise InputError(f"{path}: no decision_examples table: materialize decision_examples first")
    return read_examples(path)


def example_question_ids(warehouse: Warehouse) -> frozenset[str]:
    """The ids of the questions the ``decision_examples`` table learned from (none without the table)."""
    path = warehouse.partition_dir(EXAMPLES, None) / PART_FILE
    if not path.is_file():
        return frozenset()
    return frozenset(pq.read_table(path, columns=["question_id"]).column("question_id").to_pylist())


def model_folder(warehouse: Warehouse, data_hash: str) -> Path:
    """The versioned folder of a model trained on examples with ``data_hash``."""
    return warehouse.root / MODELS_DIR / data_hash[:12]


def mark_latest(warehouse: Warehouse, folder: Path) -> None:
    (warehouse.root / MODELS_DIR / LATEST).write_text(folder.name + "\n", encoding="utf-8")


def latest_model(warehouse: Warehouse) -> Path | None:
    """The newest trained model folder of the warehouse, if any."""
    pointer = warehouse.root / MODELS_DIR / LATEST
    if not pointer.is_file():
        return None
    return warehouse.root / MODELS_DIR / pointer.read_text(encoding="utf-8").strip()


def validation_accuracy(folder: Path) -> float | None:
    """A model folder's step accuracy over all decisions of its held-out validation questions (its
    manifest's; none when it held none out)."""
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    return manifest["validation_accuracy"]["all"]
