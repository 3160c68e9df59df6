"""Entity walks on the full 2Wiki graph: ingest time, name-index time, walk p50/p90 and walk quality.

Run: ``.venv/bin/python benchmarks/bench_2wiki_walks.py [--compose parts|text] [--no-names]
[--corpus-subset N] [--n N]``. Needs ``../shared/data/2wiki`` and the shared MiniLM folder.

The graph is built from all 6,119 passages by the offline pipeline (``nlp`` extractor, exact routing;
goal <= 75 s), then every node name is embedded once (``NameVectors.warm``: the per-graph cost, timed
apart), then the 51 questions are walked one at a time (entity-greedy preset, local decider, name
linking): per-question latency p50/p90 (goal p50 <= 0.5 s), texts embedded per question, and the
retrieval measures of ``graphwalk eval 2wiki-retrieval`` (solved@10, recall@2/@5). ``--no-names``
skips the warm-up (names are then embedded as walks meet them, on the walks' clock); ``--compose text``
embeds every ``context; option`` text whole (one new text per option per step, as before ``parts``);
``--summaries`` embeds every distinct node summary once too (a second per-graph index) and lets the
decider's parts include them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings.fastembed import MINILM_MODEL, FastEmbedEmbedder
from graphwalk_core.eval.datasets.twowiki import load_twowiki_retrieval
from graphwalk_core.eval.ingestion import PassageIngester
from graphwalk_core.eval.metrics import retrieval_scores
from graphwalk_core.eval.retrieval import corpus_subset
from graphwalk_core.eval.systems.graphwalk import GraphwalkSystem, preset_config
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.traversal.entry import NameEntryResolver
from graphwalk_core.traversal.name_vectors import NameVectors

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "data" / "2wiki"
MODEL = SHARED / "models" / "all-minilm-l6-v2-onnx"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(args: argparse.Namespace) -> None:
    ds = load_twowiki_retrieval(
        DATA / "corpus.json", DATA / "retrieval_questions_51.json", split="dev", n=args.n, seed=0
    )
    ds = corpus_subset(ds, args.corpus_subset)
    store = MemoryGraphStore()
    t0 = time.perf_counter()
    await PassageIngester(source_id="2wiki")(store, ds.knowledge.passages)
    ingest_s = time.perf_counter() - t0
    nodes, edges = await store.counts()
    emb = FastEmbedEmbedder(MINILM_MODEL, MODEL)
    names = None
    names_s = 0.0
    if args.names:
        names = NameVectors(store, emb)
        t0 = time.perf_counter()
        await names.warm()
        names_s = time.perf_counter() - t0
    summaries_s = 0.0
    if args.summaries:  # every distinct node summary embedded once too; the decider then keeps them
        texts = list(dict.fromkeys([n.summary async for n in store.iter_nodes() if n.summary]))
        t0 = time.perf_counter()
        emb.embed(texts)
        summaries_s = time.perf_counter() - t0
    decider = LocalDecisionBackend(
        emb, compose=args.compose, unique_keys=() if args.summaries else ("summary",)
    )
    resolver = await NameEntryResolver.from_store(store, embedder=emb)

    walker = GraphwalkSystem(
        args.preset, store, decider, config=preset_config(args.preset), embedder=emb,
        linking="resolve", entry=resolver, names=names,
    )  # fmt: skip
    gc.freeze()  # the graph lives until exit
    rows, embedded = [], []
    for q in ds.questions:
        misses = emb.cache.misses
        t0 = time.perf_counter()
        answer = await walker.answer(q)  # passages: witness paths, then start and answer nodes
        latency = time.perf_counter() - t0
        scores = retrieval_scores(answer.passages, q.extra["supporting"])
        rows.append({**scores, "latency_s": latency, "decision_calls": answer.decision_calls})
        embedded.append(emb.cache.misses - misses)
    n = len(rows)
    lat = [r["latency_s"] for r in rows]
    print(
        f"2Wiki: {len(ds.knowledge.passages)} passages -> {nodes} nodes / {edges} edges; "
        f"{n} questions; preset {args.preset}; decider {decider.model_id}; load {os.getloadavg()[0]:.1f}\n"
    )
    print("| ingest s (goal <= 75) | name index s | summary index s | walk p50 s (goal <= 0.5) | walk p90 s "
          "| texts embedded/q | calls/q | solved@10 | recall@2 | recall@5 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {ingest_s:.1f} | {names_s:.1f} | {summaries_s:.1f} | {pct(lat, 0.5):.3f} "
        f"| {pct(lat, 0.9):.3f} | {sum(embedded) / n:.1f} | {sum(r['decision_calls'] for r in rows) / n:.1f} "
        f"| {sum(r['all_supporting_at_10'] for r in rows) / n:.3f} "
        f"| {sum(r['recall_at_2'] for r in rows) / n:.3f} | {sum(r['recall_at_5'] for r in rows) / n:.3f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compose", choices=["parts", "text"], default="parts")
    parser.add_argument(
        "--no-names", dest="names", action="store_false", help="no warm-up: names embedded as walks meet them"
    )
    parser.add_argument("--summaries", action="store_true", help="embed node summaries once, keep them")
    parser.add_argument("--preset", default="entity-greedy")
    parser.add_argument("--corpus-subset", type=int, default=None)
    parser.add_argument("--n", type=int, default=None, help="questions (default: all 51)")
    args = parser.parse_args()
    if not (DATA / "corpus.json").is_file() or not (MODEL / "tokenizer.json").is_file():
        print(f"skipped: needs {DATA} and {MODEL}")
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
