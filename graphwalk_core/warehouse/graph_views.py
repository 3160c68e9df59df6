"""Queries over the knowledge-graph tables in the warehouse (nodes, edges, provenance)."""

from __future__ import annotations

from pathlib import Path

from graphwalk_core.warehouse.files import atomic_path
from graphwalk_core.warehouse.views import query

TRIPLES_FILE = "knowledge_graph_triples.txt"

_TRIPLES_SQL = """
SELECT s.name, e.type, t.name
FROM edges e JOIN nodes s ON s.id = e.source JOIN nodes t ON t.id = e.target
ORDER BY 1, 2, 3
"""


def export_triples(root: Path, path: Path | None = None) -> Path:
    """Write the warehouse graph as ``subject|relation|object`` lines (by node name), atomically."""
    from graphwalk_core.stores.io import write_triples

    rows = query(root, _TRIPLES_SQL).rows
    target = path or Path(root) / TRIPLES_FILE
    with atomic_path(target) as tmp:
        write_triples(tmp, rows)
    return target
