"""The hash ledger, kept in store metadata: (source, document) -> content hash, extractor, routing, time,
status.

Keys are ``ingest/ledger/<source id>/<document id>``; values are JSON :class:`LedgerEntry` objects.
Ingestion times live only here (provenance carries none), so re-ingesting gives identical elements.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from graphwalk_core.errors import InputError
from graphwalk_core.stores.base import GraphStore, get_metadata_many

LEDGER_PREFIX = "ingest/ledger/"
#: ``ingest/origin/<source id>``: where the source's documents were last read from (``OriginAware``).
ORIGIN_PREFIX = "ingest/origin/"
#: What an entry written before routing was versioned stands for (name-only merging never changed).
UNVERSIONED_ROUTING = "exact:1"
Status = Literal["complete", "incomplete"]


class LedgerEntry(BaseModel):
    document_id: str
    content_hash: str
    extractor: str
    #: the routing behaviour that placed the document's mentions (``routing.ROUTING_VERSIONS``)
    routing: str = ""
    status: Status = "complete"
    ingested_at: str = ""
    errors: list[str] = []

    def matches(self, content_hash: str, extractor: str, routing: str | None = None) -> bool:
        """True when the document needs no work: same content, same extractor, same routing behaviour
        (when ``routing`` is given), complete."""
        same_routing = routing is None or (self.routing or UNVERSIONED_ROUTING) == routing
        return (
            self.status == "complete"
            and self.content_hash == content_hash
            and self.extractor == extractor
            and same_routing
        )


class SourceOrigin(BaseModel):
    """The value of an ``ingest/origin/<source id>`` key."""

    origin: str


def ledger_key(source_id: str, document_id: str) -> str:
    return f"{LEDGER_PREFIX}{source_id}/{document_id}"


def provenance_source(source_id: str, document_id: str) -> str:
    """``Provenance.source_id`` of a document: ``<source>/<document>``."""
    return f"{source_id}/{document_id}"


def now_iso() -> str:
    """The ledger's clock: now, or ``SOURCE_DATE_EPOCH`` (the reproducible-builds convention) when set,
    so two runs of one input can write byte-identical ledgers."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    return when.isoformat(timespec="seconds")


async def read_ledger(store: GraphStore, source_id: str) -> dict[str, LedgerEntry]:
    """Every ledger entry of one source, by document id (in key order)."""
    raw = await get_metadata_many(store, await store.metadata_keys(f"{LEDGER_PREFIX}{source_id}/"))
    out: dict[str, LedgerEntry] = {}
    for value in raw.values():
        entry = LedgerEntry.model_validate_json(value)
        out[entry.document_id] = entry
    return out


async def read_entries(
    store: GraphStore, source_id: str, document_ids: Sequence[str]
) -> dict[str, LedgerEntry]:
    """The ledger entries of those of ``document_ids`` the ledger holds (one set-based read where the
    store offers it)."""
    keys = {ledger_key(source_id, doc_id): doc_id for doc_id in document_ids}
    raw = await get_metadata_many(store, list(keys))
    return {keys[key]: LedgerEntry.model_validate_json(value) for key, value in raw.items()}


async def write_entry(store: GraphStore, source_id: str, entry: LedgerEntry) -> None:
    await store.set_metadata(ledger_key(source_id, entry.document_id), entry.model_dump_json())


async def delete_entry(store: GraphStore, source_id: str, document_id: str) -> None:
    await store.set_metadata(ledger_key(source_id, document_id), None)


async def check_origin(store: GraphStore, source_id: str, origin: str, *, exclusive: bool) -> bool:
    """Whether ``origin`` is news for ``source_id`` (then :func:`record_origin` it once the run writes).
    ``exclusive``: refuse when its documents came from elsewhere (a source id derived from a path, which
    another folder of the same name gives too: its documents would replace theirs)."""
    value = await store.get_metadata(ORIGIN_PREFIX + source_id)
    recorded = None if value is None else SourceOrigin.model_validate_json(value).origin
    if recorded is not None and recorded != origin and exclusive:
        raise InputError(
            f"source {source_id!r} holds documents read from {recorded}; {origin} would replace them "
            f"(what it lacks would be retracted). Give it a source id of its own (--source-id NAME), or "
            f"--source-id {source_id} to replace them"
        )
    return recorded != origin


async def record_origin(store: GraphStore, source_id: str, origin: str) -> None:
    """Record where ``source_id``'s documents now come from."""
    await store.set_metadata(ORIGIN_PREFIX + source_id, SourceOrigin(origin=origin).model_dump_json())
