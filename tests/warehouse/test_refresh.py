"""Refreshing warehouse.duckdb's views: others' views kept, no wait for read-only sessions, and a table
whose files do not read named without holding back the other tables' views."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.warehouse import Warehouse, query, views

from .sessions import duckdb_session

VIEWS = "select view_name from duckdb_views() where not internal order by 1"


def test_views_others_made_are_kept(tmp_path: Path) -> None:
    """A view made in warehouse.duckdb with the DuckDB CLI was dropped by the next write as stale."""
    wh = Warehouse(tmp_path)
    wh.write("nodes", [{"id": "a"}])
    con = duckdb.connect(str(wh.db_path))
    con.execute("CREATE VIEW my_report AS SELECT count(*) AS n FROM nodes")
    con.close()
    wh.write("edges", [{"source": "a"}])
    wh.delete("nodes")
    assert query(tmp_path, VIEWS).rows == [("edges",), ("my_report",)]
    wh.write("nodes", [{"id": "b"}, {"id": "c"}])
    assert query(tmp_path, "select n from my_report").rows == [(2,)]


def test_a_write_does_not_wait_for_a_read_only_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DuckDB session reading the warehouse (`duckdb -readonly`, `graphwalk sql` streaming a result)
    made every write fail after 5 s: views glob their files, so a write that adds no table changes none
    and opens the database read-only."""
    wh = Warehouse(tmp_path)
    wh.write("t", [{"a": 1}], {"k": "x"})
    with duckdb_session(wh.db_path, read_only=True):
        monkeypatch.setattr(views, "LOCK_TIMEOUT_S", 0.2)
        wh.write("t", [{"a": 2}], {"k": "x"})
        wh.write("t", [{"a": 3, "b": "new column"}], {"k": "y"})
        rows = query(tmp_path, "select k, a, b from t order by k").rows
    assert rows == [("x", 2, None), ("y", 3, "new column")]


def test_a_moved_warehouse_is_re_pointed_by_a_write(tmp_path: Path) -> None:
    Warehouse(tmp_path / "old").write("t", [{"a": 1}])
    (tmp_path / "old").rename(tmp_path / "new")
    Warehouse(tmp_path / "new").write("t", [{"a": 2}])
    assert query(tmp_path / "new", "select a from t").rows == [(2,)]


def test_a_table_that_does_not_read_is_named_and_the_others_get_views(tmp_path: Path) -> None:
    """An unreadable file (or folders partitioned by other keys) in one table failed every write that
    refreshed the views with DuckDB's own exception (a traceback), and no other view changed."""
    wh = Warehouse(tmp_path)
    part = wh.write("nodes", [{"id": "a"}])
    part.write_bytes(part.read_bytes()[:20])
    wh.write("mixed", [{"a": 1}], {"p": "1"}, refresh=False)
    deeper = tmp_path / "mixed/p=2/q=2/part-0.parquet"  # written by another tool (Warehouse.write refuses)
    deeper.parent.mkdir(parents=True)
    pq.write_table(pa.table({"a": [2]}), deeper)
    with pytest.raises(InputError) as error:
        wh.write("edges", [{"source": "a"}])
    mixed, nodes = str(error.value).splitlines()
    assert mixed.startswith("warehouse table 'mixed' has no view: Binder Error: Hive partition mismatch")
    assert nodes.startswith(
        "warehouse table 'nodes' has no view: Invalid Input Error: No magic bytes found at end of file "
        f"'{part}' (unreadable Parquet file {part}: "
    )
    assert query(tmp_path, VIEWS).rows == [("edges",), ("nodes",)]  # nodes keeps its view
    assert query(tmp_path, "select source from edges").rows == [("a",)]


def test_a_query_over_a_moved_warehouse_says_so(tmp_path: Path) -> None:
    """The views hold absolute paths: after a move, a query said it "reaches outside the warehouse
    folder", as if it had asked for another folder's files."""
    Warehouse(tmp_path / "old").write("t", [{"a": 1}])
    (tmp_path / "old").rename(tmp_path / "new")
    new = tmp_path / "new"
    with pytest.raises(InputError) as error:
        query(new, "select a from t")
    assert str(error.value) == (
        f"query failed: the views of {new / 'warehouse.duckdb'} read the tables under {tmp_path / 'old'}, "
        "where the warehouse was when they were made (moved, renamed or mounted elsewhere since?); any "
        'write re-points them, or: python -c "from graphwalk_core.warehouse import refresh_views; '
        f"refresh_views('{new}')\""
    )
    assert query(new, "select 1").rows == [(1,)]  # a query reading no view runs


def test_a_missing_database_beside_tables_says_how_to_make_it(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    wh.write("nodes", [{"id": "a"}])
    wh.write("edges", [{"source": "a"}])
    wh.db_path.unlink()
    with pytest.raises(InputError) as error:
        query(tmp_path, "select * from nodes")
    assert str(error.value) == (
        f"no warehouse database at {wh.db_path}, though the folder holds the tables edges, nodes: make "
        'their views with any write, or: python -c "from graphwalk_core.warehouse import refresh_views; '
        f"refresh_views('{tmp_path}')\""
    )


def test_a_refresh_that_waited_for_another_making_the_same_views_makes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partitions of a new table written at once (Dagster's multiprocess executor) each found its view
    missing, then took turns at the write lock, each reading every table's files again (seconds in a
    warehouse of thousands of files): with ten such processes most failed after 5 s ("stayed locked by
    another process"). A refresh that gets the lock now first checks whether the views were made meanwhile."""
    import subprocess
    import sys

    from graphwalk_core.warehouse import refresh

    wh = Warehouse(tmp_path)
    wh.write("t", [{"a": 1}])
    wh.write("u", [{"b": 2}], {"k": "x"}, refresh=False)  # a new table: its view is missing
    opened, described = refresh.connect, []

    def after_another_process(db: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        if not read_only:  # another partition's process took the write lock first and made the views
            made = f"from graphwalk_core.warehouse import refresh_views; refresh_views({str(tmp_path)!r})"
            subprocess.run([sys.executable, "-c", made], check=True)
        return opened(db, read_only=read_only)

    monkeypatch.setattr(refresh, "connect", after_another_process)
    monkeypatch.setattr(refresh, "_problem", lambda con, root, name: described.append(name))
    assert refresh.refresh_views(tmp_path) == ["t", "u"]
    assert described == []
    assert query(tmp_path, "select b, k from u").rows == [(2, "x")]
