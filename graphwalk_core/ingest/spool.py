"""DocumentSpool: the documents a run will process, on disk until their window comes.

The diff reads every document once (to compare its hash with the ledger); the ones to process go to an
unlinked temporary file, pickled (every value comes back exactly, NaN included), and the run keeps only
each one's place in it. A window reads its documents back, so memory holds one window's documents
whatever the corpus's size, and a document is processed exactly as it was compared (a file edited during
the run is picked up by the next run).
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Sequence
from types import TracebackType

from graphwalk_core.ingest.sources.base import SourceDocument


class DocumentSpool:
    """Documents by id in a temporary file (gone when closed); a context manager."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="graphwalk-documents-")  # noqa: SIM115 (closed by close())
        self._at: dict[str, tuple[int, int]] = {}  # id -> (offset, length)
        self._end = 0

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, document_id: object) -> bool:
        return document_id in self._at

    def add(self, document: SourceDocument) -> None:
        """Keep ``document`` (a later one with the same id replaces it)."""
        data = pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL)
        if os.pwrite(self._file.fileno(), data, self._end) != len(data):
            raise OSError(f"short write to the document spool {self._file.name}")
        self._at[document.id] = (self._end, len(data))
        self._end += len(data)

    def read(self, ids: Sequence[str]) -> list[SourceDocument]:
        """The documents of ``ids``, in that order."""
        out = []
        for document_id in ids:
            offset, length = self._at[document_id]
            data = os.pread(self._file.fileno(), length, offset)
            if len(data) != length:
                raise OSError(f"short read from the document spool {self._file.name}")
            out.append(pickle.loads(data))
        return out

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> DocumentSpool:
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _value: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()
