"""ScratchFile: an unlinked temporary file written and read at offsets, for what a run keeps out of its
memory (the vector pool's full blocks, the documents waiting for their window).

The file has no name in the temporary folder (``TMPDIR``): it is gone when closed or collected, or when
the process ends, killed or not. Its pages are the operating system's file cache, not the process's
memory. A failure to create, write or read it is a :class:`~graphwalk_core.errors.ConfigError` that
names the folder, and so is a ``TMPDIR`` that Python would pass over (missing or not writable) for
another folder, perhaps a ``/tmp`` held in memory.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from graphwalk_core.errors import ConfigError


class ScratchFile:
    """``what`` names the contents in errors ("the documents to process")."""

    def __init__(self, what: str) -> None:
        self.what = what
        wanted = os.environ.get("TMPDIR")
        if wanted and tempfile.gettempdir() != os.path.abspath(wanted):  # Python passed over it silently
            raise ConfigError(
                f"cannot create a file for {what}: TMPDIR is {wanted}, which does not exist or cannot be "
                f"written (Python would use {tempfile.gettempdir()} instead): create it, or unset TMPDIR"
            )
        try:
            self._file = tempfile.TemporaryFile(prefix="graphwalk-")  # noqa: SIM115 (closed by close() or when collected)
        except OSError as exc:
            raise self._error("create a file for", exc) from None

    def write(self, data: bytes, offset: int) -> None:
        """Write ``data`` at ``offset``."""
        try:
            written = os.pwrite(self._file.fileno(), data, offset)
        except OSError as exc:
            raise self._error("write", exc) from None
        if written != len(data):  # a regular file writes less only when its disk is full
            raise self._error("write", OSError(f"{written} of {len(data)} bytes written: the disk is full"))

    def read(self, length: int, offset: int) -> bytearray:
        """The ``length`` bytes at ``offset`` (read into one new buffer, not copied again)."""
        data = bytearray(length)
        self.read_into(data, offset)
        return data

    def read_into(self, buffer: Any, offset: int) -> None:
        """Fill ``buffer`` (a writable buffer, such as a contiguous numpy array) from ``offset``."""
        size = memoryview(buffer).nbytes
        try:
            got = os.preadv(self._file.fileno(), [buffer], offset)
        except OSError as exc:
            raise self._error("read", exc) from None
        if got != size:
            raise self._error("read", OSError(f"{got} of {size} bytes read"))

    def close(self) -> None:
        self._file.close()

    def _error(self, action: str, exc: OSError) -> ConfigError:
        folder = tempfile.gettempdir()
        reason = exc.strerror or str(exc)
        return ConfigError(
            f"cannot {action} {self.what} in the temporary folder {folder}: {reason} "
            "(set TMPDIR to a folder with room)"
        )
