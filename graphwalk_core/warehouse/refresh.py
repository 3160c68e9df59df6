"""Keep ``warehouse.duckdb``'s views in step with the Parquet tables: one view per table folder.

The views glob their table's files and DuckDB binds a view again at each query, so a new partition or
column needs no refresh: only a new or removed table, or a moved folder, changes a view. A refresh
that changes nothing opens the database read-only, so it does not wait for other read-only sessions
(``graphwalk sql`` streaming a result, ``duckdb -readonly``). Views someone else made in the file are
left alone; only views over a table folder of the warehouse (graphwalk's) are dropped when stale.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from graphwalk_core.errors import InputError
from graphwalk_core.warehouse.layout import DB_NAME, table_names, view_root
from graphwalk_core.warehouse.views import connect, unreadable_parquet, view_sql


def _pattern(table_dir: Path) -> str:
    return (table_dir / "**" / "*.parquet").as_posix().replace("'", "''")


def _select(table_dir: Path) -> str:
    return (
        f"SELECT * FROM read_parquet('{_pattern(table_dir)}', "
        "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
    )


def _ours(name: str, sql: str) -> bool:
    """Whether the view ``name`` defined by ``sql`` is graphwalk's view of a table folder."""
    return view_root(name, sql) is not None


def _made(views: dict[str, str], root: Path, names: list[str]) -> bool:
    """Whether ``views`` (a database's) are exactly graphwalk's views of ``names`` over ``root``."""
    reads = {name: view_root(name, sql) for name, sql in views.items()}
    ours = {name: read for name, read in reads.items() if read is not None}
    return ours == dict.fromkeys(names, root.as_posix())


def _current(db: Path, root: Path, names: list[str]) -> bool:
    """Whether ``db`` already holds exactly graphwalk's views of ``names`` over ``root``."""
    if not db.exists():
        return False
    con = connect(db, read_only=True)
    try:
        return _made(view_sql(con), root, names)
    finally:
        con.close()


def _problem(con: duckdb.DuckDBPyConnection, root: Path, name: str) -> str | None:
    """Why no view of table ``name`` can be made (its files do not read together), or None."""
    try:
        con.execute(f"DESCRIBE {_select(root / name)}")
    except duckdb.PermissionException as exc:
        return (
            f"warehouse table {name!r} reaches outside the warehouse folder {root}: "
            f"{str(exc).splitlines()[0]} (a symlink that points out of the folder? the views read "
            "only files under it)"
        )
    except duckdb.Error as exc:
        bad = unreadable_parquet(root / name)
        where = f" (unreadable Parquet file {bad})" if bad else ""
        return f"warehouse table {name!r} has no view: {str(exc).splitlines()[0]}{where}"
    return None


def refresh_views(root: Path) -> list[str]:
    """(Re)create one view per table under ``root`` in ``root/warehouse.duckdb``; drop graphwalk's
    stale ones. A table whose files do not read (a symlink out of ``root``, an unreadable file,
    folders partitioned by other keys) keeps the view it had and is an ``InputError`` naming it, raised
    once the other tables' views are made."""
    root = Path(root).expanduser().resolve()
    if glob := sorted(set("*?[") & set(root.as_posix())):
        raise InputError(
            f"warehouse folder {root} has the glob character(s) {' '.join(glob)} in its path: the DuckDB "
            "views would read other folders' files too; move the warehouse to a path without them"
        )
    root.mkdir(parents=True, exist_ok=True)
    names = table_names(root)
    db = root / DB_NAME
    if _current(db, root, names):
        return names
    con = connect(db, read_only=False)
    try:
        views = view_sql(con)
        if _made(views, root, names):  # by another process (a partition of the same new table) meanwhile
            return names
        problems = {name: _problem(con, root, name) for name in names}
        con.execute("BEGIN")
        for stale in sorted(set(views) - set(names)):
            if _ours(stale, views[stale]):
                con.execute(f'DROP VIEW "{stale}"')
        for name in names:
            if problems[name] is None:
                con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {_select(root / name)}')
        con.execute("COMMIT")
    finally:
        con.close()
    if failed := [problem for problem in problems.values() if problem]:
        raise InputError("\n".join(failed))
    return names
