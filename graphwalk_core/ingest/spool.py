"""DocumentSpool: the documents a run will process, on disk until their window comes.

The diff reads every document once (to compare its hash with the ledger); the ones to process are
pickled (every value comes back exactly, NaN included) into a :class:`~graphwalk_core.scratch.ScratchFile`,
and the run keeps only each one's place in it. A window reads its documents back, so memory holds one
window's documents whatever the corpus's size, and a document is processed exactly as it was compared
(a file edited during the run is picked up by the next run).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from types import TracebackType

from graphwalk_core.ingest.sources.base import SourceDocument
from graphwalk_core.scratch import ScratchFile


class DocumentSpool:
    """Documents by id in a temporary file (gone when closed); a context manager."""

    def __init__(self) -> None:
        self._file = ScratchFile("the documents to process")
        self._at: dict[str, tuple[int, int]] = {}  # id -> (offset, length)
        self._end = 0

    def __len__(self) -> int:
        return len(self._at)

    def add(self, document: SourceDocument) -> None:
        """Keep ``document`` (a later one with the same id replaces it)."""
        data = pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(data, self._end)
        self._at[document.id] = (self._end, len(data))
        self._end += len(data)

    def read(self, ids: Sequence[str]) -> list[SourceDocument]:
        """The documents of ``ids``, in that order."""
        out = []
        for document_id in ids:
            offset, length = self._at[document_id]
            out.append(pickle.loads(self._file.read(length, offset)))
        return out

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> DocumentSpool:
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _value: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()
