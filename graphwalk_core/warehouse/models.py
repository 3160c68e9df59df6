"""Where a warehouse keeps trained decider models: a versioned folder each, and a pointer to the newest."""

from __future__ import annotations

from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.files import write_text_atomic
from graphwalk_core.warehouse.tables import Warehouse

MODELS_DIR = Path("models") / "decider"
#: The file naming the newest model folder (relative to the models folder).
LATEST = "LATEST"


def model_folder(warehouse: Warehouse, fingerprint: str) -> Path:
    """The versioned folder of the model with ``fingerprint`` (its content hash: another model, even one
    trained on the same examples, gets another folder)."""
    return warehouse.root / MODELS_DIR / fingerprint[:12]


def mark_latest(warehouse: Warehouse, folder: Path) -> None:
    """Make ``folder`` (one of the warehouse's model folders) the newest (the pointer replaced whole)."""
    write_text_atomic(folder.name + "\n", warehouse.root / MODELS_DIR / LATEST)


def latest_model(warehouse: Warehouse) -> Path | None:
    """The newest trained model folder of the warehouse, if any; a pointer naming a folder that is gone is
    an InputError (walking without the model, or skipping its leak guard, would go unnoticed)."""
    pointer = warehouse.root / MODELS_DIR / LATEST
    if not pointer.is_file():
        return None
    name = pointer.read_text(encoding="utf-8").strip()
    folder = warehouse.root / MODELS_DIR / name
    if not name or not folder.is_dir():
        raise InputError(
            f"{pointer} names the model folder {name!r}, which is not in {folder.parent}: train a decider "
            f"again (materialize trained_decider), or write the name of a folder there into {LATEST}"
        )
    return folder
