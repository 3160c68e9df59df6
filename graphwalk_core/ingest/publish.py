"""Publish a graph store into the warehouse: nodes, edges, provenance, conflicts, metadata, ledger.

Also the per-source ``documents`` table (what the last diff saw), which the ledger check reads, and
the published graph read back as triples.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from graphwalk_core.ingest.ledger import LEDGER_PREFIX, LedgerEntry
from graphwalk_core.ingest.outputs import DIFF_STATUSES, DocumentDiff
from graphwalk_core.stores.base import GraphStore
from graphwalk_core.stores.parquet import TABLES, export_parquet
from graphwalk_core.stores.triples import write_triples
from graphwalk_core.warehouse import Warehouse, open_query
from graphwalk_core.warehouse.layout import cut_short
from graphwalk_core.warehouse.swap import swap_in

LEDGER_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("document_id", pa.string()),
        ("content_hash", pa.string()),
        ("extractor", pa.string()),
        ("status", pa.string()),
        ("ingested_at", pa.string()),
    ]
)
DOCUMENTS_SCHEMA = pa.schema([("document_id", pa.string()), ("status", pa.string())])
TRIPLES_FILE = "knowledge_graph_triples.txt"
#: The lock file in the warehouse folder that serializes publishes (no table: views read folders only).
PUBLISH_LOCK = ".publish.lock"
#: The prefix of the folder a publish exports into: hidden, so no view is ever made over it.
EXPORT_PREFIX = ".publish-"
#: The folder of the export folder the store is exported into (hidden: the tables are staged beside it).
EXPORT_STORE = ".store"

_TRIPLES_SQL = """
SELECT s.name, e.type, t.name
FROM edges e JOIN nodes s ON s.id = e.source JOIN nodes t ON t.id = e.target
ORDER BY 1, 2, 3
"""


def ledger_table(metadata: pa.Table) -> pa.Table:
    """The ledger entries held in the exported ``metadata`` table, one row per (source, document)."""
    rows = []
    for key, value in zip(
        metadata.column("key").to_pylist(), metadata.column("value").to_pylist(), strict=True
    ):
        if not key.startswith(LEDGER_PREFIX) or value is None:
            continue
        source = key[len(LEDGER_PREFIX) :].split("/", 1)[0]
        entry = LedgerEntry.model_validate_json(value)
        rows.append({"source": source, **entry.model_dump(include=set(LEDGER_SCHEMA.names))})
    return pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA)


@contextmanager
def export_folder(root: Path) -> Iterator[Path]:
    """A new folder ``<root>/.publish-<random>`` for one publish, removed after it. Made with mode
    0777 & ~umask, like the table folders: ``mkdtemp``'s 0700 kept the others sharing a warehouse from
    removing (or finishing moving in) one a killed run left."""
    while True:
        folder = root / f"{EXPORT_PREFIX}{secrets.token_hex(6)}"
        try:
            folder.mkdir()
            break
        except FileExistsError:
            continue
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def publish_graph(store: GraphStore, warehouse: Warehouse) -> dict[str, int]:
    """Replace the graph tables (and ``ledger``) with the store's contents; row count per table.

    One publish into a warehouse at a time (a file lock, :data:`PUBLISH_LOCK`), each from one committed
    state of the store, read once the lock is held: two runs publishing at once could otherwise leave
    one's nodes beside the other's edges, or an older graph over a newer one. The store is exported
    into a hidden folder of the warehouse (a ``tmp…`` one became a table for any view refresh meanwhile,
    and for good when the run was killed), and the tables are staged there and replaced together
    (:meth:`Warehouse.replace`: a query sees the whole old graph or the whole new one). One such folder
    a killed run left is removed by the next publish, which first finishes moving its tables in when
    the run was killed doing so."""
    warehouse.root.mkdir(parents=True, exist_ok=True)
    with FileLock(warehouse.root / PUBLISH_LOCK):
        killed = cut_short(warehouse.root)
        for stale in sorted(warehouse.root.glob(f"{EXPORT_PREFIX}*")):  # a killed publish's (lock held)
            if stale in killed:
                swap_in(warehouse.root, stale)
            shutil.rmtree(stale, ignore_errors=True)
        with export_folder(warehouse.root) as tmp:
            exported = await export_parquet(store, tmp / EXPORT_STORE)
            tables = {name: pq.read_table(exported / f"{name}.parquet") for name in TABLES}
            tables["ledger"] = ledger_table(tables["metadata"])
            warehouse.replace(tables, tmp)
    return {name: table.num_rows for name, table in tables.items()}


def write_documents(warehouse: Warehouse, diff: DocumentDiff) -> int:
    """Replace the ``documents/source=<id>`` partition with the diff's document ids and outcomes."""
    rows = [
        {"document_id": doc_id, "status": status}
        for status in DIFF_STATUSES
        for doc_id in getattr(diff, status)
    ]
    rows.sort(key=lambda r: r["document_id"])
    warehouse.write("documents", rows, {"source": diff.source_id}, schema=DOCUMENTS_SCHEMA)
    return len(rows)


def export_triples(root: Path, path: Path | None = None) -> Path:
    """Write the warehouse graph as ``subject|relation|object`` lines (by node name), atomically; the
    triples are read a batch at a time."""
    target = path or Path(root) / TRIPLES_FILE
    with open_query(root, _TRIPLES_SQL) as rows:  # atomic: write_triples writes through atomic_path
        write_triples(target, (row for batch in rows.batches() for row in batch))
    return target
