"""An append-only JSONL checkpoint: one fsynced line per finished question, resumable after a kill."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from graphwalk_core.errors import InputError
from graphwalk_core.eval.records import QuestionResult
from graphwalk_core.files import write_text_atomic

log = logging.getLogger(__name__)


def read_checkpoint(path: Path, *, cut_torn: bool = False) -> list[QuestionResult]:
    """The records already written, in file order.

    A torn last line (the process died mid-write, or a run is writing it now) is left out; with
    ``cut_torn`` (the run's own process, holding its folder) it is cut off the file so appends stay valid.
    A bad line anywhere else is an error naming it.
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    good_end = data.rfind(b"\n") + 1
    if cut_torn and good_end < len(data):
        log.warning(
            "%s: dropping a torn last line (%d bytes) left by an interrupted run", path, len(data) - good_end
        )
        with path.open("r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    records = []
    for lineno, line in enumerate(data[:good_end].decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(QuestionResult.model_validate(json.loads(line)))
        except ValueError as exc:
            raise InputError(f"{path}:{lineno}: not a result record ({exc})") from exc
    return records


def rewrite_checkpoint(path: Path, records: list[QuestionResult]) -> None:
    """Replace the checkpoint at ``path`` with ``records`` (in that order), atomically."""
    write_text_atomic("".join(r.model_dump_json() + "\n" for r in records), path)


class CheckpointWriter:
    """Appends records durably.

    Each record is written to the file at once with one ``write`` (so a killed process loses no
    finished question: the kernel holds the data), and fsynced with group commit: at most every
    ``fsync_interval_s`` seconds, and on close. ``fsync_interval_s=0`` fsyncs every record.
    """

    def __init__(self, path: Path, *, fsync_interval_s: float = 0.2) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fsync_interval_s = fsync_interval_s
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        self._last_sync = time.monotonic()
        self._dirty = False

    def append(self, record: QuestionResult) -> None:
        data = (record.model_dump_json() + "\n").encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        self._dirty = True
        if time.monotonic() - self._last_sync >= self.fsync_interval_s:
            self.sync()

    def sync(self) -> None:
        if self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> CheckpointWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
