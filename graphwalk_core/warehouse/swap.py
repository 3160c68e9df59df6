"""Replace several tables together: a query over the views sees every one of them old or every one new.

The tables are written into a staging folder (hidden, directly under the warehouse folder, so no view
reads it), then moved in while ``warehouse.duckdb``'s write lock is held: no DuckDB session on the views
(graphwalk's queries, the DuckDB CLI) is open while the files move, and one that starts meanwhile waits.
A swap killed part way leaves :data:`~graphwalk_core.warehouse.layout.SWAPPING` in its staging folder:
queries refuse to run (they would join new tables with old ones) until :func:`swap_in` finishes it.
"""

from __future__ import annotations

import os
from pathlib import Path

from graphwalk_core.warehouse.layout import DB_NAME, PART_FILE, SWAPPING, inside
from graphwalk_core.warehouse.refresh import refresh_views
from graphwalk_core.warehouse.views import connect

#: Seconds a swap waits for the DuckDB sessions open on the warehouse (a query, the DuckDB CLI) to close:
#: longer than a query's wait, since a publish that gives up fails its whole run.
SWAP_TIMEOUT_S = 120.0


def swap_in(root: Path, staging: Path) -> list[str]:
    """Move the tables staged in ``staging`` (``<table>/part-0.parquet``) into the warehouse at ``root``,
    all while holding the database's write lock; then refresh the views. Finishes a killed swap too."""
    con = connect(root / DB_NAME, read_only=False, timeout_s=SWAP_TIMEOUT_S)
    try:
        parts = sorted(staging.glob(f"*/{PART_FILE}"))
        targets = [inside(root, root / part.parent.name) for part in parts]  # all checked before any move
        marker = staging / SWAPPING
        marker.touch()
        for part, target in zip(parts, targets, strict=True):
            target.mkdir(exist_ok=True)
            os.replace(part, target / PART_FILE)
        marker.unlink()
    finally:
        con.close()
    return refresh_views(root)
