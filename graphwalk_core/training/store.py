"""Where the warehouse keeps training data: the ``decision_examples`` table (model folders:
:mod:`graphwalk_core.warehouse.models`), what a model folder says of its accuracy, and which model
becomes the warehouse's newest (the one evaluations walk with by default)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from graphwalk_core.decisions.trained import MANIFEST, DeciderModel, learned_ids, question_key, read_manifest
from graphwalk_core.errors import InputError
from graphwalk_core.eval.datasets.base import Dataset
from graphwalk_core.files import folder_locked, read_table_once
from graphwalk_core.training.examples import DecisionExample, from_table, read_examples_table, to_table
from graphwalk_core.warehouse.models import latest_model, mark_latest, model_folder
from graphwalk_core.warehouse.tables import PART_FILE, Warehouse

EXAMPLES = "decision_examples"
#: Overall validation accuracy (top choice = the target's top) a model needs to become the newest.
VALIDATION_FLOOR = 0.8
#: The ``decision_examples`` file's metadata key naming the graph its weak labels were read over.
GRAPH_KEY = b"graphwalk.graph"


def write_decision_examples(
    warehouse: Warehouse, examples: list[DecisionExample], graph: str | None = None
) -> Path:
    """Replace the ``decision_examples`` table; ``graph``: the identity of the graph the examples were
    labeled over (kept in the file's metadata for the model trained on them)."""
    table = to_table(examples)
    if graph is not None:
        table = table.replace_schema_metadata({GRAPH_KEY: graph.encode()})
    return warehouse.write(EXAMPLES, table)


def read_decision_examples(warehouse: Warehouse) -> tuple[list[DecisionExample], str | None]:
    """The ``decision_examples`` table and the graph they were labeled over (None: not recorded)."""
    path = warehouse.partition_dir(EXAMPLES, None) / PART_FILE
    if not path.is_file():
        raise InputError(f"{path}: no decision_examples table: materialize decision_examples first")
    table = read_examples_table(path)  # the examples and their graph from one file, whatever replaces it
    graph = (table.schema.metadata or {}).get(GRAPH_KEY)
    return from_table(table), None if graph is None else graph.decode()


def learned_questions(
    warehouse: Warehouse, datasets: Iterable[Dataset], model: Path | None = None
) -> list[str]:
    """The ids of ``datasets``' questions that ``model`` (a folder; default: the warehouse's newest trained
    model) learned from, in order: those its folder lists (by id and text, :func:`question_key`; a folder
    saved before keys, by id). The warehouse's newest model saved before models kept them is checked
    against the warehouse's ``decision_examples`` ids (which it was trained on unless that table changed
    since); another such folder, against nothing."""
    folder = model or latest_model(warehouse)
    if folder is None:
        return []
    ids = learned_ids(folder)
    if ids is None and model is not None:
        return []
    if ids is None:
        path = warehouse.partition_dir(EXAMPLES, None) / PART_FILE
        if not path.is_file():
            return []
        ids = read_table_once(path, columns=["question_id"]).column("question_id").to_pylist()
    learned = frozenset(ids)
    return [
        q.id
        for dataset in datasets
        for q in dataset.questions
        if question_key(q.id, q.text) in learned or q.id in learned
    ]


def validation_accuracy(folder: Path) -> float | None:
    """A model folder's step accuracy over all decisions of its held-out validation questions (its
    manifest's; none when it held none out)."""
    return read_manifest(folder / MANIFEST)["validation_accuracy"]["all"]


def save_model(warehouse: Warehouse, model: DeciderModel) -> Path:
    """Save ``model`` in its versioned folder of the warehouse; a folder that holds a model already holds
    this one (its name is the model's fingerprint) and is left as it is, never saved over in place while
    LATEST may name it (a save cut short there would leave the newest model half written). Processes saving
    models take turns: another saving this one at once would remove its manifest while LATEST names it."""
    folder = model_folder(warehouse, model.fingerprint)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder_locked(folder.parent):
        return folder if (folder / MANIFEST).is_file() else model.save(folder)


def reaches_floor(accuracy: float | None) -> bool:
    """Whether a validation accuracy reaches :data:`VALIDATION_FLOOR` (None, no validation question:
    unknown, so no)."""
    return accuracy is not None and accuracy >= VALIDATION_FLOOR


def promote(warehouse: Warehouse, folder: Path) -> bool:
    """Make the model in ``folder`` the warehouse's newest (what ``-trained`` evaluations and
    ``--decider trained`` walk with) when its validation accuracy reaches the floor; a model below it is
    kept but not made the newest, so they go on walking with the earlier one. Whether it was made so."""
    if not reaches_floor(validation_accuracy(folder)):
        return False
    mark_latest(warehouse, folder)
    return True
