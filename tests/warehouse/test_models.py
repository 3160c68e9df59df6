"""The warehouse's model folders and the pointer to the newest."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.warehouse.models import latest_model, mark_latest, model_folder
from graphwalk_core.warehouse.tables import Warehouse


def test_a_failed_pointer_write_keeps_the_previous_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Marking a new model newest replaces the pointer whole: a write that fails half way (a full disk)
    leaves the previous model the newest, not an empty pointer naming the models folder itself."""
    wh = Warehouse(tmp_path / "wh")
    old, new = model_folder(wh, "0123456789ab"), model_folder(wh, "ba9876543210")
    old.mkdir(parents=True)
    mark_latest(wh, old)

    def cut(self: Path, text: str, encoding: str | None = None) -> int:
        with self.open("w", encoding=encoding) as f:
            f.write(text[:0])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", cut)
    with pytest.raises(OSError, match="No space left"):
        mark_latest(wh, new)
    monkeypatch.undo()
    assert latest_model(wh) == old


def test_a_pointer_to_a_removed_model_folder_is_an_error(tmp_path: Path) -> None:
    """LATEST naming a folder removed by hand was returned as the newest model: evaluations then failed
    with a FileNotFoundError, and the leak guard found no question list there and checked nothing."""
    wh = Warehouse(tmp_path / "wh")
    folder = model_folder(wh, "0123456789ab")
    folder.mkdir(parents=True)
    mark_latest(wh, folder)
    assert latest_model(wh) == folder
    folder.rmdir()
    with pytest.raises(InputError) as caught:
        latest_model(wh)
    assert str(caught.value) == (
        f"{folder.parent / 'LATEST'} names the model folder '0123456789ab', which is not in {folder.parent}: "
        "train a decider again (materialize trained_decider), or write the name of a folder there into LATEST"
    )
