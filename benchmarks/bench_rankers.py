"""Passage-ranker speed and quality on the full 2Wiki corpus (6,119 passages, the 51 shared questions).

Ingests the corpus offline (NLP extractor, exact routing), builds graph-ppr, typed-path and dense over
it, then ranks every question once per system (question embedding included). Prints p50/p95 per
question against the target (p50 ≤ 0.2 s per ranker), with recall@2/@5 and solved@10 beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

import numpy as np
from rich.console import Console
from rich.table import Table

from graphwalk_core.embeddings.factory import default_model_path, make_embedder
from graphwalk_core.eval.datasets import load_dataset
from graphwalk_core.eval.datasets.base import default_data_dir
from graphwalk_core.eval.metrics import retrieval_scores
from graphwalk_core.eval.systems.rankers import RANKERS
from graphwalk_core.eval.systems.registry import build_system_async
from graphwalk_core.settings import get_settings

TARGET_P50_S = 0.2


async def run() -> int:
    data = default_data_dir()
    if not (data / "2wiki" / "corpus.json").is_file() or default_model_path() is None:
        print(f"skipped: {data}/2wiki or the shared embedding model is absent")
        return 0
    ds = load_dataset("2wiki-retrieval", data_dir=data)
    embedder = make_embedder(get_settings().model_copy(update={"embed_model_path": default_model_path()}))
    table = Table(
        title=f"rankers: {len(ds.questions)} questions over {len(ds.knowledge.passages):,} passages"
    )
    for col in (
        "system",
        "profile",
        "build s",
        "p50 s",
        "p95 s",
        "recall@2",
        "recall@5",
        "solved@10",
        "target",
    ):
        table.add_column(col)
    for name in RANKERS:
        t0 = time.perf_counter()
        system = await build_system_async(name, ds, decider=None, embedder=embedder, llm=None)
        build_s = time.perf_counter() - t0
        latencies, scores = [], []
        for q in ds.questions:
            answer = await system.answer(q)
            latencies.append(answer.latency_s)
            scores.append(retrieval_scores(answer.passages, q.extra["supporting"]))
        p50, p95 = (float(np.percentile(latencies, p)) for p in (50, 95))
        table.add_row(
            name,
            system.identity()["profile"],
            f"{build_s:.1f}",
            f"{p50:.3f}",
            f"{p95:.3f}",
            *(
                f"{np.mean([float(s[c]) for s in scores]):.3f}"
                for c in ("recall_at_2", "recall_at_5", "all_supporting_at_10")
            ),
            f"p50 ≤ {TARGET_P50_S} s: {'met' if p50 <= TARGET_P50_S else 'MISSED'}",
        )
    Console(width=160).print(table)
    print(f"load average: {os.getloadavg()[0]:.2f} (build s of the first ranker includes ingestion)")
    return 0


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
