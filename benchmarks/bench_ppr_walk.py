"""graph-ppr seeded also by an entity walk's passages: recall for several walk weights (graph-ppr-walk).

The walks are read from an earlier eval's results (the ``entity-greedy`` rows of its results.parquet,
passages best first), so each weight costs one PPR ranking per question, not a walk:

    graphwalk eval 2wiki-retrieval --system entity-greedy --decider local --out results/2wiki-walk
    .venv/bin/python benchmarks/bench_ppr_walk.py 2wiki-retrieval results/2wiki-walk/results.parquet
    graphwalk eval hotpotqa --system entity-greedy --decider local --out results/hotpot-walk
    .venv/bin/python benchmarks/bench_ppr_walk.py hotpotqa results/hotpot-walk/results.parquet

Weight 0 is graph-ppr/v1 exactly. Tune on dev questions only (the 51 2Wiki questions, HotpotQA dev).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

import duckdb

from graphwalk_core.embeddings.factory import default_model_path, make_embedder
from graphwalk_core.eval.datasets import load_dataset
from graphwalk_core.eval.metrics import retrieval_scores
from graphwalk_core.eval.systems.registry import build_system_async
from graphwalk_core.settings import get_settings

WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.5)
WALK_KS = (2, 10)


async def run(dataset: str, walks_path: str, walker: str) -> None:
    ds = load_dataset(dataset)
    embedder = make_embedder(get_settings().model_copy(update={"embed_model_path": default_model_path()}))
    rows = duckdb.execute(
        "select question_id, passages from read_parquet(?) where system = ?", [walks_path, walker]
    ).fetchall()
    walks = {qid: list(passages or []) for qid, passages in rows}
    load = os.getloadavg()[0]
    print(f"{dataset}: {len(ds.questions)} questions, {len(walks)} {walker} walks; load {load:.1f}")
    t0 = time.process_time()
    system = await build_system_async("graph-ppr", ds, decider=None, embedder=embedder)
    print(f"graph built in {time.process_time() - t0:.0f} CPU s; load {os.getloadavg()[0]:.1f}\n")
    ranker = system.ranker  # type: ignore[attr-defined]
    base = ranker.settings
    print("| walk_weight | walk_k | recall@2 | recall@5 | recall@10 | solved@10 |\n|---|---|---|---|---|---|")
    for weight in WEIGHTS:
        for walk_k in (WALK_KS[-1],) if weight == 0 else WALK_KS:
            ranker.settings = base.model_copy(update={"walk_weight": weight, "walk_k": walk_k})
            scores = [
                retrieval_scores(
                    ranker.rank(q.text, 10, walk=walks.get(q.id, [])).passage_ids, q.extra["supporting"]
                )
                for q in ds.questions
            ]
            means = [sum(float(s[k]) for s in scores) / len(scores) for k in scores[0]]
            print(f"| {weight} | {walk_k} | " + " | ".join(f"{m:.3f}" for m in means) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", choices=["2wiki-retrieval", "hotpotqa"])
    parser.add_argument("walks", nargs="?", help="results.parquet of an eval that ran the walk preset")
    parser.add_argument("--walker", default="entity-greedy", help="the walk system's name in those results")
    args = parser.parse_args()
    if args.dataset is None:  # as `make bench` runs it: the walks come from an eval run first
        print("skipped: needs DATASET and an earlier eval's results.parquet (the commands in this docstring)")
        return
    if args.walks is None or not os.path.isfile(args.walks):
        parser.error(f"walks: {args.walks or 'missing'}: not a file (results.parquet of an eval of the walk)")
    asyncio.run(run(args.dataset, args.walks, args.walker))


if __name__ == "__main__":
    main()
