"""Broken or read-only storage gets an error naming the file and the cause (exit 2, no traceback), before
the work where it can, and a failed first run leaves no empty graph behind."""

from __future__ import annotations

import ctypes
import os
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphwalk_core.warehouse.views import DB_NAME, refresh_views

#: Linux capabilities that let root write through file modes (linux/capability.h), and prctl's
#: PR_CAPBSET_DROP: a root command without them meets read-only files as any user does.
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, PR_CAPBSET_DROP = 1, 2, 24


def obey_file_modes() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def graphwalk(*args: str, cwd: Path, unprivileged: bool = False) -> tuple[int, str]:
    """Run the ``graphwalk`` command; ``unprivileged``: read-only files stay read-only even for root."""
    try:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("graphwalk")), *args],
            cwd=cwd,
            env={**os.environ, "COLUMNS": "1000"},
            preexec_fn=obey_file_modes if unprivileged and os.geteuid() == 0 else None,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.SubprocessError as exc:  # prctl refused: root without CAP_SETPCAP
        pytest.skip(f"cannot make files read-only for root here (dropping CAP_DAC_OVERRIDE failed: {exc})")
    return result.returncode, result.stdout + result.stderr


def corpus(root: Path) -> Path:
    folder = root / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("Ada Lovelace met Charles Babbage in London.", encoding="utf-8")
    return folder


def test_a_read_only_sqlite_graph_is_refused_before_the_work(tmp_path: Path) -> None:
    docs, graph = corpus(tmp_path), tmp_path / "graph.sqlite"
    code, out = graphwalk("ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path)
    assert code == 0, out
    (docs / "b.txt").write_text("Grace Hopper met Alan Turing.", encoding="utf-8")
    graph.chmod(0o444)
    before = graph.read_bytes()
    code, out = graphwalk(
        "ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path, unprivileged=True
    )
    assert (code, out.strip()) == (
        2,
        f"error: cannot write the graph {graph}: attempt to write a readonly database",
    )
    assert graph.read_bytes() == before


def test_a_parquet_graph_in_a_read_only_folder_is_refused_before_the_work(tmp_path: Path) -> None:
    docs, graph = corpus(tmp_path), tmp_path / "graph"
    code, out = graphwalk("ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path)
    assert code == 0 and (graph / "nodes.parquet").is_file(), out
    graph.chmod(0o555)
    code, out = graphwalk(
        "ingest", str(docs), "--graph", str(graph), "--routing", "exact", cwd=tmp_path, unprivileged=True
    )
    assert (code, out.strip()) == (2, f"error: cannot write the graph folder {graph}: Permission denied")
    assert "documents" not in out  # no summary: nothing was extracted or routed


def test_a_sql_source_that_cannot_connect_leaves_no_graph_file(tmp_path: Path) -> None:
    graph = tmp_path / "new" / "graph.sqlite"
    code, out = graphwalk("ingest", "postgresql://bob:pw@127.0.0.1:1/x", "--graph", str(graph), cwd=tmp_path)
    # the message depends on whether a PostgreSQL driver is installed; the URL's password never shows
    # (a warning that the shared embedding model is absent may come first)
    assert code == 2 and out.strip().splitlines()[-1].startswith("error: cannot "), out
    assert "SQL source postgresql://bob:***@127.0.0.1:1/x: " in out
    assert not graph.exists()


def warehouse(root: Path) -> Path:
    table = root / "runs" / "dataset=demo"
    table.mkdir(parents=True)
    pq.write_table(
        pa.table({"n": list(range(500)), "name": [f"run {i}" for i in range(500)]}), table / "part.parquet"
    )
    refresh_views(root)
    return table / "part.parquet"


def test_a_truncated_warehouse_database_is_named(tmp_path: Path) -> None:
    warehouse(tmp_path)
    db = tmp_path / DB_NAME
    db.write_bytes(db.read_bytes()[:5000])
    code, out = graphwalk("sql", "select count(*) from runs", "--warehouse", str(tmp_path), cwd=tmp_path)
    assert code == 1 and "Traceback" not in out, out
    assert out.startswith(f"error: cannot open the warehouse database {db} (")
    assert out.rstrip().endswith("removing it is safe (the next materialization rebuilds it)")


def test_a_scrambled_parquet_file_is_named(tmp_path: Path) -> None:
    part = warehouse(tmp_path)
    data = bytearray(part.read_bytes())
    rng = random.Random(3)
    for i in range(4, len(data) - 8):
        data[i] = rng.randrange(256)
    part.write_bytes(bytes(data))
    code, out = graphwalk("sql", "select count(*) from runs", "--warehouse", str(tmp_path), cwd=tmp_path)
    assert code == 1 and "Traceback" not in out, out
    assert out.startswith("error: query failed: ")
    assert f"(unreadable Parquet file {part}: " in out
