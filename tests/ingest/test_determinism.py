"""The same input gives the same bytes: two fresh ingests of 200 real HotpotQA paragraphs (default routing,
offline decider) in processes with different ``PYTHONHASHSEED`` write byte-identical graphs, ledgers and
exports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import write_hotpotqa_paragraphs

SEEDS = (1, 2)
#: The ledger's clock (the reproducible-builds convention): ingestion times are the only time field.
EPOCH = "1700000000"


def run_both(commands: dict[int, list[str]]) -> None:
    """Run one command per seed at once, each under its own PYTHONHASHSEED."""
    procs = {
        seed: subprocess.Popen(
            command,
            env={**os.environ, "PYTHONHASHSEED": str(seed), "SOURCE_DATE_EPOCH": EPOCH},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for seed, command in commands.items()
    }
    for seed, proc in procs.items():
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"PYTHONHASHSEED={seed}: {out}"


@pytest.mark.slow
def test_fresh_ingests_are_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    assert len(write_hotpotqa_paragraphs(corpus, 200)) == 200
    graphs = {seed: tmp_path / f"g{seed}" / "graph.sqlite" for seed in SEEDS}
    for graph in graphs.values():
        graph.parent.mkdir()
    ingest = [
        sys.executable,
        "-m",
        "graphwalk_core.cli.ingest",
        str(corpus),
        "--source-id",
        "hp",
        "-q",
        "--graph",
    ]
    run_both({seed: [*ingest, str(graph)] for seed, graph in graphs.items()})
    export = [str(Path(sys.executable).with_name("graphwalk")), "graph", "export"]
    run_both(
        {seed: [*export, str(graph), "--out", str(graph.parent / "export")] for seed, graph in graphs.items()}
    )
    one, two = (graphs[seed].parent for seed in SEEDS)
    files = sorted(p.relative_to(one).as_posix() for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(two).as_posix() for p in two.rglob("*") if p.is_file())
    assert {
        "graph.sqlite",
        "export/nodes.parquet",
        "export/edges.parquet",
        "export/provenance.parquet",
    } <= set(files)
    different = [name for name in files if (one / name).read_bytes() != (two / name).read_bytes()]
    assert different == []
