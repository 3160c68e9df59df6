"""graphwalk sql prints a query's result as a table, and reads nothing but the warehouse folder."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner, Result

from graphwalk_core.cli import app
from graphwalk_core.errors import BackendError, InputError
from graphwalk_core.warehouse import Warehouse, query, views


def test_sql_prints_rows(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("eval_results", [{"f1": 0.25}, {"f1": 0.75}], {"dataset": "custom"})
    result = CliRunner().invoke(
        app,
        ["sql", "select dataset, avg(f1) as f1 from eval_results group by all", "--warehouse", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "custom" in line]
    assert lines == ["│ custom  │ 0.5 │"]
    assert result.output.rstrip().endswith("1 row(s)")


def test_sql_prints_csv_and_json(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1, "b": "x,y"}, {"a": 2, "b": None}])
    query = "select a, b from t order by a"
    as_csv = CliRunner().invoke(app, ["sql", query, "--warehouse", str(tmp_path), "--format", "csv"])
    assert (as_csv.exit_code, as_csv.output) == (0, 'a,b\n1,"x,y"\n2,\n')
    as_json = CliRunner().invoke(
        app, ["sql", query, "--warehouse", str(tmp_path), "-f", "json", "--limit", "1"]
    )
    assert (as_json.exit_code, json.loads(as_json.output)) == (0, [{"a": 1, "b": "x,y"}])


def test_sql_prints_values_and_errors_as_text_not_markup(tmp_path: Path) -> None:
    """A value or column name like rich markup ([bold], [/x]) is printed as it is: it vanished, or
    crashed the printout."""
    Warehouse(tmp_path).write("t", [{"[b]name": "[bold]Zed"}, {"[b]name": "x [/y] z"}])
    result = _sql(tmp_path, "select * from t order by 1")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()[1:5]
    assert lines == ["┃ [b]name   ┃", "┡━━━━━━━━━━━┩", "│ [bold]Zed │", "│ x [/y] z  │"]
    failed = _sql(tmp_path, "select [/x] from t")
    assert failed.exit_code == 2 and "[/x]" in failed.output


def test_sql_prints_a_wide_table_whole_into_a_pipe(tmp_path: Path) -> None:
    """Piped output is not squeezed into 80 columns (31 columns left every cell blank there)."""
    row = {f"column_{i:02d}": f"value_{i:02d}" for i in range(31)}
    Warehouse(tmp_path).write("wide", [row])
    result = CliRunner().invoke(app, ["sql", "select * from wide", "--warehouse", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "┃ " + " ┃ ".join(row) + " ┃"
    assert lines[3] == "│ " + " │ ".join(value.ljust(9) for value in row.values()) + " │"
    assert "values are cut" not in result.output


def test_sql_says_when_a_table_is_wider_than_the_terminal(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("wide", [{f"column_{i:02d}": f"value_{i:02d}" for i in range(31)}])
    result = CliRunner().invoke(
        app,
        ["sql", "select * from wide", "--warehouse", str(tmp_path)],
        env={"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        "31 columns need 373 characters, the terminal has 80: values are cut. Select fewer columns, or use "
        "--format csv / --format json."
    )


def test_sql_reports_a_bad_query(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = CliRunner().invoke(app, ["sql", "select b from t", "--warehouse", str(tmp_path)])
    assert result.exit_code == 2
    assert "query failed" in result.output


def _sql(root: Path, query: str) -> Result:
    return CliRunner().invoke(app, ["sql", query, "--warehouse", str(root)])


@pytest.mark.parametrize("statement", ["", "  ", ";", " -- nothing", "/* nothing */ ;"])
def test_sql_says_a_query_without_a_statement_is_empty(tmp_path: Path, statement: str) -> None:
    """A query with no statement (empty, only comments) crashed with an AttributeError traceback."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = _sql(tmp_path, statement)
    assert (result.exit_code, " ".join(result.output.split())) == (
        2,
        "error: query refused: it holds no SQL statement (write one, e.g. 'select * from nodes')",
    )


def test_sql_cannot_write_files_outside_the_warehouse(tmp_path: Path) -> None:
    root, outside = tmp_path / "wh", tmp_path / "x"
    Warehouse(root).write("t", [{"a": 1}])
    result = _sql(root, f"COPY (SELECT a FROM t) TO '{outside}'")
    assert (result.exit_code, result.exception.__class__) == (2, SystemExit)
    assert "query refused: COPY statements are not allowed" in result.output
    assert "Traceback" not in result.output
    assert not outside.exists()
    # nor inside it: the console only reads
    result = _sql(root, f"COPY (SELECT a FROM t) TO '{root / 'copy.csv'}'")
    assert result.exit_code == 2 and "query refused: COPY" in result.output
    assert not (root / "copy.csv").exists()


@pytest.mark.parametrize(
    "reader",
    [
        "read_csv('/etc/hostname')",
        "read_text('/etc/hostname')",
        "read_parquet('{other}/t/part-0.parquet')",
        "read_text('{root}/../other/t/part-0.parquet')",
        "glob('/etc/*')",
    ],
)
def test_sql_reads_no_file_outside_the_warehouse(tmp_path: Path, reader: str) -> None:
    root, other = tmp_path / "wh", tmp_path / "other"
    Warehouse(root).write("t", [{"a": 1}])
    Warehouse(other).write("t", [{"a": 2}])
    result = _sql(root, f"SELECT * FROM {reader.format(root=root, other=other)}")
    assert result.exit_code == 2, result.output
    assert "query refused: it reaches outside the warehouse folder" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_sandbox_cannot_be_lifted(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    for statement in ("SET enable_external_access = true", "SET lock_configuration = false"):
        with pytest.raises(InputError, match="query refused: SET statements are not allowed"):
            query(tmp_path, statement)
    # the connection itself refuses, even for statements the console would not send
    con = views.connect(tmp_path / views.DB_NAME, read_only=True)
    try:
        with pytest.raises(duckdb.InvalidInputException, match="configuration has been locked"):
            con.execute("SET enable_external_access = true")
        with pytest.raises(duckdb.PermissionException, match="/tmp/x"):
            con.execute("COPY (SELECT 1) TO '/tmp/x'")
    finally:
        con.close()


@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ("/* c */ update extensions", "query refused: UPDATE statements are not allowed"),
        ("SELECT 1; UPDATE EXTENSIONS (httpfs)", "query refused: UPDATE statements are not allowed"),
        ("EXPLAIN ANALYZE UPDATE EXTENSIONS", "query refused: cannot tell which statement this EXPLAIN runs"),
    ],
)
def test_sql_refuses_a_statement_the_duckdb_package_cannot_name(
    tmp_path: Path, statement: str, refusal: str
) -> None:
    """The Python package's StatementType lacks UPDATE EXTENSIONS: reading its type raised a ValueError,
    a traceback instead of a refusal."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = _sql(tmp_path, statement)
    assert (result.exit_code, result.exception.__class__) == (2, SystemExit)
    assert refusal in " ".join(result.output.split())


def test_sql_reads_the_warehouse_files_directly(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    wh.write("t", [{"a": 1}, {"a": 2}])
    parquet = tmp_path / "t" / "part-0.parquet"
    assert query(tmp_path, f"SELECT sum(a) FROM read_parquet('{parquet}')").rows == [(3,)]
    assert query(tmp_path, "DESCRIBE t").rows[0][:2] == ("a", "BIGINT")
    assert query(tmp_path, "WITH x AS (SELECT a FROM t) SELECT max(a) FROM x").rows == [(2,)]


@pytest.mark.parametrize(
    "statement",
    [
        "EXPLAIN ANALYZE COPY (SELECT 666 AS a) TO '{part}'",
        "explain analyse copy (select 666 as a) to '{part}'",
        "EXPLAIN /* a comment */ ANALYZE COPY (SELECT 666 AS a) TO '{part}'",
        "EXPLAIN (ANALYZE) COPY (SELECT 666 AS a) TO '{part}'",
        "EXPLAIN (FORMAT json, ANALYZE) COPY (SELECT 666 AS a) TO '{part}'",
        "SELECT 1; EXPLAIN ANALYZE COPY (SELECT 666 AS a) TO '{part}'",
    ],
)
def test_sql_cannot_overwrite_warehouse_files_through_explain_analyze(tmp_path: Path, statement: str) -> None:
    """EXPLAIN ANALYZE runs the statement it explains: an explained COPY wrote inside the warehouse (the
    sandbox allows that folder), replacing a table's Parquet file."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    part = tmp_path / "t" / "part-0.parquet"
    result = _sql(tmp_path, statement.format(part=part))
    assert result.exit_code == 2, result.output
    assert "query refused: EXPLAIN of COPY statements is not allowed" in " ".join(result.output.split())
    assert query(tmp_path, "SELECT a FROM t").rows == [(1,)]
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["part-0.parquet"]


@pytest.mark.parametrize(
    "statement",
    [
        "EXPLAIN SELECT a FROM t",
        "EXPLAIN ANALYZE SELECT a FROM t",
        "EXPLAIN /* c */ ANALYSE FROM t",
        "EXPLAIN (SELECT 1)",
        "EXPLAIN (FORMAT json) SELECT a FROM t",
        "EXPLAIN (ANALYZE) SELECT a FROM t",
    ],
)
def test_sql_explains_a_select(tmp_path: Path, statement: str) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    assert len(query(tmp_path, statement).rows) == 1


def test_query_shares_a_sandboxed_database_with_an_open_connection(tmp_path: Path) -> None:
    """A second connection of one process reuses the first one's sandbox (DuckDB also allows its temp
    folder, warehouse.duckdb.tmp, so the allowed list is not the folder alone)."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    con = views.connect(tmp_path / views.DB_NAME, read_only=True)
    try:
        assert query(tmp_path, "SELECT a FROM t").rows == [(1,)]
    finally:
        con.close()


@pytest.mark.parametrize(
    "settings",
    [
        ["SET lock_configuration = true"],
        ["SET allowed_directories = $dirs", "SET lock_configuration = true"],  # external access still on
    ],
)
def test_query_refuses_a_database_locked_without_the_sandbox(tmp_path: Path, settings: list[str]) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    con = duckdb.connect(str(tmp_path / views.DB_NAME), read_only=True)
    try:
        for setting in settings:
            con.execute(setting, {"dirs": [f"{tmp_path.resolve()}/"]} if "$dirs" in setting else None)
        with pytest.raises(BackendError, match="DuckDB database already open with other file access"):
            query(tmp_path, "SELECT a FROM t")
    finally:
        con.close()


def test_symlinks_out_of_the_warehouse_are_not_followed(tmp_path: Path) -> None:
    """A file or folder symlink inside the warehouse that points out of it reads nothing; a write then
    says which table holds it (it failed with DuckDB's PermissionException and a traceback)."""
    root, other = tmp_path / "wh", tmp_path / "other"
    Warehouse(root).write("t", [{"a": 1}])
    Warehouse(other).write("t", [{"a": 2}])
    (root / "t" / "k=x").mkdir()
    (root / "t" / "k=x" / "part-0.parquet").symlink_to(other / "t" / "part-0.parquet")
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    for reader in ("read_parquet('{root}/t/k=x/part-0.parquet')", "read_text('{root}/etc/hostname')"):
        with pytest.raises(InputError, match="query refused: it reaches outside the warehouse folder"):
            query(root, f"SELECT * FROM {reader.format(root=root)}")
    with pytest.raises(InputError) as error:
        Warehouse(root).write("u", [{"b": 1}])
    assert str(error.value).splitlines()[0] == (
        f"warehouse table 't' reaches outside the warehouse folder {root}: Permission Error: Cannot access "
        f'file "{root}/t/k=x/part-0.parquet" - file system operations are disabled by configuration '
        "(a symlink that points out of the folder? the views read only files under it)"
    )


@pytest.mark.parametrize(("name", "chars"), [("wh[1]", "["), ("wh*", "*"), ("w?h*", "* ?")])
def test_a_warehouse_named_like_a_glob_is_refused(tmp_path: Path, name: str, chars: str) -> None:
    """The views glob their folder's path: 'wh[1]' read 'wh1', 'wh*' every sibling too (refused by the
    sandbox only if the sibling held Parquet files, with a PermissionException from every write)."""
    Warehouse(tmp_path / "wh1").write("t", [{"a": 1}])
    with pytest.raises(InputError) as error:
        Warehouse(tmp_path / name).write("t", [{"a": 3}])
    assert str(error.value) == (
        f"warehouse folder {tmp_path / name} has the glob character(s) {chars} in its path: the DuckDB "
        "views would read other folders' files too; move the warehouse to a path without them"
    )


#: Ten million rows whose last million fail: only a query that reads every row meets the error.
FAILS_LATE = "select case when i < 9000000 then i else error('row ' || i) end as i from range(10000000) t(i)"


@pytest.mark.parametrize("output", ["csv", "json"])
def test_sql_fetches_only_the_rows_it_prints(tmp_path: Path, output: str) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = CliRunner().invoke(
        app, ["sql", FAILS_LATE, "--warehouse", str(tmp_path), "-f", output, "--limit", "2"]
    )
    expected = {"csv": "i\n0\n1\n", "json": '[\n {\n  "i": 0\n },\n {\n  "i": 1\n }\n]\n'}
    assert (result.exit_code, result.output) == (0, expected[output])


def test_open_query_reads_rows_a_batch_at_a_time(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    with views.open_query(tmp_path, FAILS_LATE) as rows:
        batches = rows.batches(1000)
        assert (rows.columns, next(batches), len(next(batches))) == (["i"], [(i,) for i in range(1000)], 1000)
        with pytest.raises(InputError, match=r"^query failed: .*row 9000000"):
            for _ in batches:
                pass


def test_sql_json_streams_the_text_json_dumps_gives(tmp_path: Path) -> None:
    rows = [{"a": 1, "b": 'x\n"é"', "c": [1, 2]}, {"a": 2, "b": None, "c": []}, {"a": 3, "b": "", "c": None}]
    Warehouse(tmp_path).write("t", rows)
    query = "select a, b, c from t order by a"
    result = CliRunner().invoke(app, ["sql", query, "--warehouse", str(tmp_path), "-f", "json"])
    assert (result.exit_code, result.output) == (0, json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    empty = CliRunner().invoke(app, ["sql", query + " limit 0", "--warehouse", str(tmp_path), "-f", "json"])
    assert (empty.exit_code, empty.output) == (0, "[]\n")


def test_sql_counts_every_row_of_a_long_table(tmp_path: Path) -> None:
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = CliRunner().invoke(app, ["sql", "select * from range(25001)", "--warehouse", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("25001 row(s), 200 shown")
    assert "│ 199   │" in result.output and "│ 200   │" not in result.output


def test_a_warehouse_with_a_backslash_in_its_path_is_refused(tmp_path: Path) -> None:
    """DuckDB reads a backslash as a folder separator: 'a\\b/warehouse.duckdb' was opened as
    'a/b/warehouse.duckdb', and the error called the database truncated and safe to remove."""
    root = tmp_path / "a\\b"
    with pytest.raises(InputError) as error:
        Warehouse(root).write("t", [{"a": 1}])
    assert str(error.value) == (
        f"warehouse folder {root} has a backslash in its path, which DuckDB reads as a folder separator "
        "(it would open another folder's warehouse.duckdb); move the warehouse to a path without one"
    )
    assert not (tmp_path / "a").exists()


def test_sql_expands_a_warehouse_under_home_like_the_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warehouse (Dagster, the demo) expands '~', graphwalk sql did not: GRAPHWALK_WAREHOUSE=~/wh in .env
    (which does not expand it) had the writes land in $HOME/wh and the console look for a '~' folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    Warehouse("~/wh").write("t", [{"a": 1}])
    result = CliRunner().invoke(app, ["sql", "select a from t", "--warehouse", "~/wh", "-f", "csv"])
    assert (result.exit_code, result.output) == (0, "a\n1\n")
    assert query(Path("~/wh"), "select a from t").rows == [(1,)]


def test_sql_csv_writes_lists_and_structs_as_json(tmp_path: Path) -> None:
    """CSV gave a list or struct as Python's repr (['a\\'b', None], {'x': 1.5}): no CSV reader or JSON
    parser reads the value back. It is now the JSON text --format json gives it, compact."""
    Warehouse(tmp_path).write("t", [{"l": ["a'b", None, "é"], "s": {"x": 1.5, "y": None}, "n": None}])
    result = CliRunner().invoke(app, ["sql", "select * from t", "--warehouse", str(tmp_path), "-f", "csv"])
    assert (result.exit_code, result.output) == (
        0,
        'l,s,n\n"[""a\'b"", null, ""é""]","{""x"": 1.5, ""y"": null}",\n',
    )


def test_sql_csv_writes_the_rows_of_flat_columns_as_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every value of every row was checked for a list or struct to write as JSON, whatever the columns'
    types: CSV of a result with none took twice as long (200,000 rows of 5 columns: 0.36 s, from 0.17).
    Only list, array, struct, map and union columns are looked at now; other batches go to the CSV writer
    as fetched."""
    Warehouse(tmp_path).write("t", [{"a": 1, "b": "x"}, {"a": 2, "b": None}])
    real, received = csv.writer, list[object]()

    class Spy:
        def __init__(self, out: object, **kw: object) -> None:
            self.writer = real(out, **kw)  # type: ignore[call-overload]
            self.writerow = self.writer.writerow

        def writerows(self, rows: object) -> None:
            received.append(rows)
            self.writer.writerows(rows)

    monkeypatch.setattr(csv, "writer", Spy)
    result = CliRunner().invoke(
        app, ["sql", "select * from t order by a", "--warehouse", str(tmp_path), "-f", "csv"]
    )
    assert (result.exit_code, result.output) == (0, "a,b\n1,x\n2,\n")
    assert received == [[(1, "x"), (2, None)]]
    result = CliRunner().invoke(
        app,
        [
            "sql",
            "select a, union_value(l := [a]) u from t order by a",
            "--warehouse",
            str(tmp_path),
            "-f",
            "csv",
        ],
    )
    assert (result.exit_code, result.output) == (0, "a,u\n1,[1]\n2,[2]\n")


def test_sql_says_how_to_pivot(tmp_path: Path) -> None:
    """A PIVOT without its values listed is a MULTI statement (DuckDB creates a type from the values
    first): it was refused as 'MULTI statements are not allowed', which names nothing the user wrote."""
    Warehouse(tmp_path).write("t", [{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "a", "v": 3}])
    with pytest.raises(InputError) as error:
        query(tmp_path, "PIVOT t ON k USING sum(v)")
    assert str(error.value) == (
        "query refused: a PIVOT must list the values it turns into columns here (PIVOT t ON col IN "
        "('a', 'b') USING ...): without them DuckDB first creates a type, a write"
    )
    assert query(tmp_path, "PIVOT t ON k IN ('a', 'b') USING sum(v)").rows == [(4, 2)]


def test_sql_json_keeps_every_column_of_a_join(tmp_path: Path) -> None:
    """Columns named alike (a join's two 'id's) were one JSON key: the last one's value replaced the
    others, with nothing said. A name met again is now suffixed _1, _2, ... (as DuckDB names a subquery's)."""
    Warehouse(tmp_path).write("t", [{"id": "x", "a_1": 9}])
    result = CliRunner().invoke(
        app,
        [
            "sql",
            "select t.id, u.id, 3 as id, t.a_1 as a, 4 as a, t.a_1 from t join t u using (id)",
            "--warehouse",
            str(tmp_path),
            "-f",
            "json",
        ],
    )
    assert (result.exit_code, json.loads(result.output)) == (
        0,
        [{"id": "x", "id_1": "x", "id_2": 3, "a": 9, "a_1": 4, "a_1_1": 9}],
    )


@pytest.mark.parametrize(
    ("statement", "error"),
    [
        ("select nope from t", 'query failed: Binder Error: Referenced column "nope" not found'),
        ("select * from nope", "query failed: Catalog Error: Table with name nope does not exist!"),
        ("select * frm t", 'query failed: Parser Error: syntax error at or near "t"'),
    ],
)
def test_a_mistyped_query_reads_no_parquet_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str, error: str
) -> None:
    """Every failed query read each Parquet file of the warehouse whole, looking for an unreadable one to
    name: a typo took minutes and the largest file's memory on a big warehouse."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    scans: list[Path] = []
    monkeypatch.setattr(views, "unreadable_parquet", lambda root: scans.append(root))
    with pytest.raises(InputError) as raised:
        query(tmp_path, statement)
    assert (str(raised.value).splitlines()[0][: len(error)], scans) == (error, [])


_NOT_FINITE = (
    "select 'nan'::double x, ['inf'::double, 1.5] l, {'y': '-inf'::float} s, "
    "map(['nan'::double], [1]) m from t"
)


def test_sql_json_writes_nan_and_infinities_as_null(tmp_path: Path) -> None:
    """NaN and infinities were written bare (NaN, Infinity, -Infinity): not JSON, so jq and JSON.parse
    refused the whole output. They are null now, as Pydantic writes them (`graphwalk query --json`)."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    result = CliRunner().invoke(app, ["sql", _NOT_FINITE, "--warehouse", str(tmp_path), "-f", "json"])
    assert (result.exit_code, result.output) == (
        0,
        '[\n {\n  "x": null,\n  "l": [\n   null,\n   1.5\n  ],\n  "s": {\n   "y": null\n  },\n'
        '  "m": {\n   "NaN": 1\n  }\n }\n]\n',
    )
    json.loads(result.output, parse_constant=pytest.fail)


def test_sql_csv_and_table_keep_nan_and_infinities(tmp_path: Path) -> None:
    """CSV and the table print a float's own text (nan, inf); a list or struct in a CSV cell is the JSON
    text --format json gives it, so valid JSON too."""
    Warehouse(tmp_path).write("t", [{"a": 1}])
    query = "select 'nan'::double x, '-inf'::double y, ['inf'::double] l from t"
    as_csv = CliRunner().invoke(app, ["sql", query, "--warehouse", str(tmp_path), "-f", "csv"])
    assert (as_csv.exit_code, as_csv.output) == (0, "x,y,l\nnan,-inf,[null]\n")
    table = _sql(tmp_path, query)
    assert (table.exit_code, table.output.splitlines()[3]) == (0, "│ nan │ -inf │ [inf] │")
