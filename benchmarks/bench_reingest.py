"""A re-ingest after a one-line edit, with and without the embedding cache (``GRAPHWALK_EMBED_CACHE``).

The first N 2Wiki passages (``../shared/data/2wiki/corpus.json``) as one ``.txt`` file each, ingested by
``graphwalk ingest`` (CLI defaults: NLP extraction, decider routing with MiniLM) into two SQLite graphs:
one with a fresh cache file, one with the cache off. Then a sentence is appended to one file and both
graphs are ingested again. Each step is its own process; printed per step: wall and CPU seconds (user +
system) and peak RSS. The two graphs are then compared (``graph export --format triples``, sha256).

Run: ``.venv/bin/python benchmarks/bench_reingest.py [--n-passages 6119]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "2wiki" / "corpus.json"
GRAPHWALK = str(Path(sys.executable).with_name("graphwalk"))
ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}


def cli_env(**settings: str) -> dict[str, str]:
    """This process's environment with the CLI's defaults: no ``GRAPHWALK_*`` setting of the caller's (a
    decider, a model file) but ``settings``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHWALK_")}
    return {**kept, **ENV, **settings}


EDIT = "\nAn added sentence: Ada Lovelace met Charles Babbage in London.\n"


def write_passages(folder: Path, n: int) -> None:
    from graphwalk_core.eval.datasets.twowiki import load_corpus
    from graphwalk_core.eval.ingestion import PassageSource

    folder.mkdir(parents=True)
    passages = sorted(load_corpus(CORPUS), key=lambda p: p.id)[:n]
    for rank, passage in enumerate(passages):
        (folder / f"{rank:05d}.txt").write_text(PassageSource.text_of(passage), encoding="utf-8")


def timed(args: list[str], cache: str) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS MB of one ``graphwalk`` process."""
    env = cli_env(GRAPHWALK_EMBED_CACHE=cache)
    started = time.perf_counter()
    process = subprocess.Popen([GRAPHWALK, *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"graphwalk {' '.join(args)} failed ({process.returncode})")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def triples_sha(graph: Path) -> str:
    out = graph.with_suffix(".txt")
    subprocess.run(
        [GRAPHWALK, "graph", "export", str(graph), "--format", "triples", "--out", str(out), "--replace"],
        env=cli_env(),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return hashlib.sha256(out.read_bytes()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-passages", type=int, default=6119)
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: {CORPUS} is absent (see ../shared/README.md)")
        return
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        write_passages(corpus, args.n_passages)
        modes = {"cache": str(work / "vectors.sqlite"), "no cache": "off"}
        for step in ("first ingest", "one-line edit"):
            if step == "one-line edit":
                edited = sorted(corpus.iterdir())[len(list(corpus.iterdir())) // 2]
                edited.write_text(edited.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
            for mode, cache in modes.items():
                graph = work / f"{mode.replace(' ', '_')}.sqlite"
                rows.append((step, mode, *timed(["ingest", str(corpus), "--graph", str(graph)], cache)))
        size = (work / "vectors.sqlite").stat().st_size / 2**20
        same = triples_sha(work / "cache.sqlite") == triples_sha(work / "no_cache.sqlite")
    print(f"\n{args.n_passages:,} passages; cache file {size:.1f} MB; graphs equal: {same}\n")
    print("| step | embedding cache | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|---|")
    for step, mode, wall, cpu, peak in rows:
        print(f"| {step} | {mode} | {wall:.1f} | {cpu:.1f} | {peak:.0f} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
