"""Hive-partitioned Parquet tables and the DuckDB views over them."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import forked_jobs
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.warehouse import Warehouse, query

from .sessions import duckdb_session


def _eval_rows(dataset: str, f1s: list[float]) -> list[dict[str, object]]:
    return [{"qid": f"q{i}", "f1": f1, "dataset": dataset} for i, f1 in enumerate(f1s)]


def test_write_hive_layout_and_views(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "wh")
    part = {"dataset": "metaqa-2hop", "system": "relation-greedy"}
    path = wh.write("eval_results", _eval_rows("metaqa-2hop", [1.0, 0.5]), part)
    assert path == tmp_path / "wh/eval_results/dataset=metaqa-2hop/system=relation-greedy/part-0.parquet"
    wh.write("eval_results", _eval_rows("metaqa-1hop", [0.0]), {"dataset": "metaqa-1hop", "system": "x"})
    # the partition column lives in the folder name only
    assert wh.read("eval_results", part).column_names == ["qid", "f1"]
    con = duckdb.connect(str(wh.db_path), read_only=True)
    rows = con.execute("select dataset, system, avg(f1) from eval_results group by all order by 1").fetchall()
    con.close()
    assert rows == [("metaqa-1hop", "x", 0.0), ("metaqa-2hop", "relation-greedy", 0.75)]
    assert wh.tables() == ["eval_results"]


def test_rewrite_replaces_partition_and_views_follow_tables(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    wh.write("nodes", [{"id": "a"}, {"id": "b"}])
    wh.write("nodes", [{"id": "c"}])
    assert query(tmp_path, "select id from nodes").rows == [("c",)]
    wh.write("edges", [{"source": "c", "target": "c"}])
    wh.delete("nodes")
    assert query(tmp_path, "select view_name from duckdb_views() where not internal").rows == [("edges",)]


def test_failed_write_keeps_previous_partition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = Warehouse(tmp_path)
    wh.write("nodes", [{"id": "a"}])

    def broken(table: pa.Table, where: Path) -> None:
        Path(where).write_bytes(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)  # graphwalk_core.files imports it when writing
    with pytest.raises(OSError, match="disk full"):
        wh.write("nodes", [{"id": "b"}])
    monkeypatch.undo()
    assert query(tmp_path, "select id from nodes").rows == [("a",)]
    assert sorted(p.name for p in (tmp_path / "nodes").iterdir()) == ["part-0.parquet"]


@pytest.mark.parametrize(
    ("table", "partition", "message"),
    [
        ("bad-name", None, "table 'bad-name' is invalid"),
        ("t", {"dataset": ""}, "dataset='' is invalid: it would read as NULL"),
        ("t", {"dataset": "__HIVE_DEFAULT_PARTITION__"}, "it would read as NULL"),
        ("t", {"dataset": "é" * 120}, r"is too long: its folder name dataset=%C3%A9.* is 728 bytes"),
        ("t", {"1x": "a"}, "partition key '1x' is invalid"),
    ],
)
def test_bad_names_are_refused(
    tmp_path: Path, table: str, partition: dict[str, str] | None, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        Warehouse(tmp_path).write(table, [{"a": 1}], partition)


ODD_VALUES = [
    "my docs",
    "a/b",
    "k=v",
    "50%",
    "%41",
    "a+b",
    "é",
    "日本",
    "..",
    "q'\"",
    "a#b?c",
    " x",
    "t\tn\n",
]


def test_any_partition_value_reads_back_exactly(tmp_path: Path) -> None:
    """Only letters, digits and '._-' were taken, so a source id sources.yaml takes ('my docs', 'é')
    failed its ingest run at the documents table; folder names now percent-encode the value, which
    DuckDB's views and pyarrow's hive partitioning decode."""
    wh = Warehouse(tmp_path)
    for i, value in enumerate(ODD_VALUES):
        wh.write("documents", [{"document_id": f"d{i}"}], {"source": value})
    assert wh.partition_dir("documents", {"source": "my docs"}).name == "source=my%20docs"
    assert wh.partition_dir("documents", {"source": "a/b"}).name == "source=a%2Fb"
    rows = query(tmp_path, "select document_id, source from documents").rows
    assert sorted(rows) == sorted((f"d{i}", v) for i, v in enumerate(ODD_VALUES))
    schema = pa.schema([("source", pa.string())])
    table = pq.read_table(tmp_path / "documents", partitioning=ds.partitioning(schema, flavor="hive"))
    assert sorted(zip(table["document_id"].to_pylist(), table["source"].to_pylist(), strict=True)) == sorted(
        (f"d{i}", v) for i, v in enumerate(ODD_VALUES)
    )
    assert [wh.read("documents", {"source": v}).to_pylist() for v in ODD_VALUES[:2]] == [
        [{"document_id": "d0"}],
        [{"document_id": "d1"}],
    ]


def test_partition_column_must_match(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"column 'dataset' holds \['other'\], but the partition is dataset=d"
    ):
        Warehouse(tmp_path).write("t", [{"dataset": "other"}], {"dataset": "d"})


def test_a_column_named_like_the_partition_key_in_other_case_must_match(tmp_path: Path) -> None:
    """DuckDB names are case-insensitive: the view read the partition value in place of a column 'P' of
    partition p=old (the column's values were lost to every query)."""
    wh = Warehouse(tmp_path)
    with pytest.raises(InputError, match=r"column 'P' holds \['1'\], but the partition is p=old"):
        wh.write("t", [{"P": 1, "v": 2}], {"p": "old"})
    wh.write("t", [{"P": "old", "v": 2}], {"p": "old"})
    assert query(tmp_path, "select * from t").rows == [(2, "old")]


@pytest.mark.parametrize(
    ("first", "then", "keys"),
    [
        ({}, {"p": "x"}, "no key"),
        ({"p": "x"}, {}, "p"),
        ({"p": "x"}, {"q": "y"}, "p"),
        ({"p": "x"}, {"p": "y", "q": "z"}, "p"),
    ],
)
def test_a_partition_keyed_unlike_the_tables_others_is_refused(
    tmp_path: Path, first: dict[str, str], then: dict[str, str], keys: str
) -> None:
    """A write whose partition keys differ from the table's went through, and then no view of the table
    could be made (DuckDB: 'Hive partition mismatch'): every query of it failed, and so did every later
    write to any table of the warehouse; it is now refused, nothing written."""
    wh = Warehouse(tmp_path)
    wh.write("t", [{"v": 1}], first)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.parquet"))
    with pytest.raises(InputError) as error:
        wh.write("t", [{"v": 2}], then)
    assert str(error.value) == (
        f"table 't': a partition keyed by {', '.join(then) or 'no key'} cannot join its partitions, keyed by "
        f"{keys} ({wh.partition_dir('t', first) / 'part-0.parquet'}): the views read them together; "
        "write the same keys, or delete the table first (Warehouse.delete)"
    )
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.parquet")) == before
    wh.write("u", [{"v": 3}])  # the warehouse's other tables are written as before
    assert query(tmp_path, "select v from t").rows == [(1,)]


def test_a_partition_write_lists_only_the_folders_on_the_way_to_the_tables_first_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check of a write's partition keys sorted every Parquet file of the table to read the first one's
    keys: each write listed every partition folder (124 ms a write beside 4,800 partitions, so writing
    them took minutes more). It now lists only the folders on the way to the first file."""
    wh = Warehouse(tmp_path)
    for i in range(50):
        wh.write("t", [{"v": i}], {"p": f"{i:02d}"}, refresh=False)
    listed: list[str] = []
    for name in ("scandir", "listdir"):
        real = getattr(os, name)

        def spy(path: object = ".", real: object = real) -> object:
            listed.append(Path(os.fsdecode(path)).relative_to(tmp_path).as_posix())  # type: ignore[arg-type]
            return real(path)  # type: ignore[operator]

        monkeypatch.setattr(os, name, spy)
    wh.write("t", [{"v": 50}], {"p": "50"}, refresh=False)
    monkeypatch.undo()
    assert len([p for p in listed if p.startswith("t/")]) <= 2  # the first partition's (and the one found)
    with pytest.raises(InputError, match=r"keyed by p \(.*/t/p=00/part-0\.parquet\)"):
        wh.write("t", [{"v": 0}], refresh=False)


def test_tables_named_alike_but_for_case_are_refused(tmp_path: Path) -> None:
    """DuckDB's view names are case-insensitive: the view of 'nodes' replaced the view of 'Nodes', so the
    rows of 'Nodes' were no longer read by any query, with nothing said."""
    wh = Warehouse(tmp_path)
    wh.write("Nodes", [{"v": 1}])
    with pytest.raises(InputError) as error:
        wh.write("nodes", [{"v": 2}])
    assert str(error.value) == (
        f"table 'nodes' cannot be written beside the table 'Nodes' ({tmp_path / 'Nodes'}): the views' "
        "names ignore case; use another name"
    )
    assert wh.tables() == ["Nodes"]
    assert query(tmp_path, 'select v from "Nodes"').rows == [(1,)]


def test_empty_rows_need_a_schema(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    with pytest.raises(InputError, match="nothing to write"):
        wh.write("t", [])
    wh.write("t", [], schema=pa.schema([("id", pa.string())]))
    assert query(tmp_path, "select count(*) from t").rows == [(0,)]


def test_query_errors_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no warehouse database at"):
        query(tmp_path, "select 1")
    Warehouse(tmp_path).write("t", [{"a": 1}])
    with pytest.raises(InputError, match=r"query failed: .*nope"):
        query(tmp_path, "select nope from t")


def test_locked_database_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphwalk_core.errors import BackendError
    from graphwalk_core.warehouse import views

    wh = Warehouse(tmp_path)
    wh.write("t", [{"a": 1}])
    with duckdb_session(wh.db_path, read_only=False) as pid:
        monkeypatch.setattr(views, "LOCK_TIMEOUT_S", 0.2)
        held = rf"stayed locked by another process \(PID {pid}, .*python.*\) for 0s"
        with pytest.raises(BackendError, match=held):  # the holder named: a forgotten session, a run
            wh.write("t", [{"a": 2}])
    # the Parquet file was replaced before the view refresh failed; the next refresh picks it up
    assert query(tmp_path, "select a from t").rows == [(2,)]


def test_a_write_while_this_process_reads_waits_then_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view refresh while this process had a query open (DuckDB shares one database per process, and
    refuses a read-write connection beside a read-only one) raised DuckDB's raw ConnectionException."""
    from graphwalk_core.errors import BackendError
    from graphwalk_core.warehouse import open_query, views

    wh = Warehouse(tmp_path)
    wh.write("t", [{"a": 1}])
    monkeypatch.setattr(views, "LOCK_TIMEOUT_S", 1.0)
    with open_query(tmp_path, "select a from t") as rows:
        with pytest.raises(BackendError) as error:
            wh.write("u", [{"a": 2}])
        assert [row for batch in rows.batches() for row in batch] == [(1,)]
    assert str(error.value) == (
        f"{wh.db_path} stayed locked by this process for 1s (close other DuckDB sessions on it)"
    )
    wh.write("u", [{"a": 2}])
    assert query(tmp_path, "select a from u").rows == [(2,)]


def test_writes_never_follow_a_symlink_out_of_the_warehouse(tmp_path: Path) -> None:
    """A table or partition folder that is a symlink to another place had writes land there (a partition
    file, the graph tables a publish moves in, a killed publish finished); the views then refused to read
    it, once it was written."""
    from graphwalk_core.warehouse.swap import swap_in

    root, outside = tmp_path / "wh", tmp_path / "outside"
    outside.mkdir()
    wh = Warehouse(root)
    wh.write("t", [{"a": 1}])
    (root / "documents").symlink_to(outside, target_is_directory=True)
    (root / "t" / "source=x").symlink_to(outside, target_is_directory=True)
    staging = root / ".publish-killed" / "documents"
    staging.mkdir(parents=True)
    pq.write_table(pa.table({"a": [2]}), staging / "part-0.parquet")
    attempts = [  # (the write, the folder refused, where it leads)
        (lambda: wh.write("documents", [{"a": 1}], {"source": "x"}), "documents/source=x", "source=x"),
        (lambda: wh.write("t", [{"a": 1}], {"source": "x"}), "t/source=x", ""),
        (lambda: wh.replace({"documents": pa.table({"a": [1]})}, root / ".publish-new"), "documents", ""),
        (lambda: swap_in(wh.root, root / ".publish-killed"), "documents", ""),
    ]
    for attempt, folder, to in attempts:
        with pytest.raises(InputError) as error:
            attempt()
        assert str(error.value) == (
            f"warehouse folder {root / folder} leads out of the warehouse {root}, to {outside / to} "
            "(a symlink?): nothing is read or written there; replace the link with a folder"
        )
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in (root / ".publish-killed").iterdir()) == ["documents"]  # no move began


def test_a_query_while_another_process_replaces_a_partition_reads_it_whole(tmp_path: Path) -> None:
    """DuckDB opens each file of a query more than once (its schema, then its rows), so a query while
    another process replaced a partition (an ingest writing ``documents``, an eval partition its
    ``eval_results``) read the old file's footer and the new file's bytes: "IO Error: Could not read enough
    bytes from file" in about half of the queries (a graph check, ``eval_summary``). A query that fails
    while a table file was replaced now runs again."""
    import time

    wh = Warehouse(tmp_path)
    tables = [pa.table({"x": list(range(500 + 50 * i)), "s": [f"v{i}"] * (500 + 50 * i)}) for i in range(2)]
    wh.write("t", tables[0], {"k": "a"})

    def writes() -> None:
        for i in range(1, 100):  # a write every 20 ms or so
            wh.write("t", tables[i % 2], {"k": "a"}, refresh=False)
            time.sleep(0.02)

    pid, counts = forked_jobs.in_background(writes), []
    while (code := forked_jobs.finished(pid)) is None:
        counts.append(query(tmp_path, "SELECT count(*), count(DISTINCT s) FROM t").rows)
    assert code == 0
    assert len(counts) > 1 and set(map(tuple, counts)) <= {((500, 1),), ((550, 1),)}


def test_a_refused_or_unparsable_query_runs_once_beside_a_file_just_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry of a query that failed while a table file was replaced also ran a refused or unparsable
    query again, 5 times in all (each opening the database and looking at every file's time), whenever a
    file had been written in the last second: its text, not a file, is what fails. It is refused at once."""
    from graphwalk_core.warehouse import views

    Warehouse(tmp_path).write("t", [{"a": 1}])
    runs: list[str] = []
    real = views.open_query
    monkeypatch.setattr(views, "open_query", lambda root, sql: (runs.append(sql), real(root, sql))[1])
    for sql, message in (
        ("delete from t", "query refused: DELETE statements are not allowed"),
        ("selec 1", "query failed: Parser Error"),
    ):
        with pytest.raises(InputError, match=f"^{message}"):
            query(tmp_path, sql)
    assert runs == []
    assert query(tmp_path, "select a from t").rows == [(1,)]
    assert runs == ["select a from t"]


def test_a_partition_read_while_another_process_replaces_it_is_one_file(tmp_path: Path) -> None:
    """pyarrow given a path opens the file more than once, so ``Warehouse.read`` while another process
    replaced the partition (atomically) read parts of both files: "Page was smaller than expected" or
    "Column cannot have more than one dictionary" in about one read of twenty. It now reads through one
    open file."""

    wh = Warehouse(tmp_path)
    tables = [pa.table({"x": list(range(500 + 50 * i)), "s": [f"v{i}"] * (500 + 50 * i)}) for i in range(2)]
    wh.write("t", tables[0], {"k": "a"})

    def writes() -> None:
        for i in range(1, 300):
            wh.write("t", tables[i % 2], {"k": "a"}, refresh=False)

    pid, rows = forked_jobs.in_background(writes), []
    while (code := forked_jobs.finished(pid)) is None:
        rows.append(wh.read("t", {"k": "a"}).num_rows)
    assert code == 0
    assert len(rows) > 1 and set(rows) <= {500, 550}
