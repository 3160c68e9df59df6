"""Where the warehouse keeps its tables: ``<root>/<table>/<key>=<value>/.../part-0.parquet``."""

from __future__ import annotations

import re
from pathlib import Path

from graphwalk_core.errors import InputError

PART_FILE = "part-0.parquet"
DB_NAME = "warehouse.duckdb"
#: The file a staging folder holds while its tables move into the warehouse (see ``warehouse.swap``).
SWAPPING = ".swapping"
TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The reader in graphwalk's view of a table: ``read_parquet('<root>/<name>/**/*.parquet'``.
VIEW_READER = re.compile(
    r"read_parquet\('(?P<root>(?:[^']|'')*)/(?P<name>[A-Za-z_][A-Za-z0-9_]*)/\*\*/\*\.parquet'"
)


def view_root(name: str, sql: str | None) -> str | None:
    """The folder whose tables the view ``name`` (defined by ``sql``) reads, when it is graphwalk's view of
    the table ``name``; None for any other view."""
    found = VIEW_READER.search(sql or "")
    if found is None or found["name"] != name:
        return None
    return found["root"].replace("''", "'")


def table_names(root: Path) -> list[str]:
    """Table folders directly under ``root`` that hold at least one Parquet file."""
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and TABLE_NAME.match(p.name) and next(p.rglob("*.parquet"), None) is not None
    )


def cut_short(root: Path) -> list[Path]:
    """The staging folders (hidden, directly under ``root``) whose tables a killed swap left part moved in."""
    return sorted(
        marker.parent
        for marker in root.glob(f".*/{SWAPPING}")
        if next(marker.parent.glob(f"*/{PART_FILE}"), None) is not None
    )


def inside(root: Path, folder: Path) -> Path:
    """``folder`` (under ``root``), refused when it resolves out of ``root``: a table or partition folder
    that is a symlink to another place would have a write land there."""
    resolved = folder.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise InputError(
            f"warehouse folder {folder} leads out of the warehouse {root}, to {resolved} (a symlink?): "
            "nothing is read or written there; replace the link with a folder"
        )
    return folder
