"""What the offline NLP extractor misses on 2Wiki passages, and how often routing merges distinct entities.

Run: ``.venv/bin/python benchmarks/bench_2wiki_extraction.py [--corpus-subset N] [--jev-subset N]``.
Needs ``../shared/data/2wiki/corpus.json`` (and the shared MiniLM folder for ``--jev-subset``).

Extraction (no routing; each passage is extracted as ingestion sees it, title line first):

* *title entity*: the passage title is one of the passage's extracted entities;
* *title linked*: ... and it has a relation to some other entity of the passage (the title line is a
  sentence of its own, so co-occurrence alone never links it);
* *kinship*: sentences "X is/was the son|daughter|wife|husband|father|mother|brother|sister of Y":
  Y is extracted, and Y is linked to the passage's title (the 2Wiki subject, often "He"/"She" there).

Routing, with gold from the corpus itself: a mention whose surface form equals a passage title
belongs to that title's entity. Over every node's ``name_sources`` (each provenance record of a name
is one mention), pairwise *merge precision* is the share of same-node mention pairs that share a title
(distinct titles in one node are wrong merges, e.g. "University of Vermont" absorbed by "University of
Kansas"), and *merge recall* the share of same-title mention pairs routed to one node. The full corpus
is ingested with exact routing (the 2wiki-retrieval setting; goal <= 75 s); ``--jev-subset N`` also
routes the first N passages with the embedding router and the local decider.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from collections import Counter, defaultdict
from math import comb
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

from graphwalk_core.eval.datasets.base import Passage
from graphwalk_core.eval.datasets.twowiki import load_corpus
from graphwalk_core.eval.ingestion import PassageIngester, PassageSource
from graphwalk_core.ingest.extraction.nlp import NLP_VERSION, extract_nlp, sentences
from graphwalk_core.stores.memory import MemoryGraphStore

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "data" / "2wiki" / "corpus.json"
MODEL = SHARED / "models" / "all-minilm-l6-v2-onnx"
KIN = re.compile(
    r"\b(?:is|was) the (?:eldest |youngest |only |second |third )?"
    r"(?:son|daughter|wife|husband|father|mother|brother|sister) of "
    r"((?:[A-Z][\w.'-]*)(?: (?:[A-Z][\w.'-]*|of|de|von|van|the))*)"
)


def extraction_misses(passages: list[Passage]) -> dict[str, float]:
    """Title entity / title linked / kinship rates over the passages."""
    titled = linked = kin = kin_found = kin_linked = 0
    for p in passages:
        extraction = extract_nlp(PassageSource.text_of(p))
        names = {e.name for e in extraction.entities}
        touching = defaultdict(set)
        for r in extraction.relations:
            touching[r.source].add(r.target)
            touching[r.target].add(r.source)
        title = p.title.strip()
        titled += title in names
        linked += bool(touching.get(title))
        for sentence in sentences(p.text):
            for match in KIN.finditer(sentence):
                y = match.group(1).rstrip(".")
                kin += 1
                kin_found += y in names
                kin_linked += y in touching.get(title, ())
    n = len(passages)
    return {
        "passages": n,
        "title entity": titled / n,
        "title linked": linked / n,
        "kinship sentences": kin,
        "kin Y extracted": kin_found / max(kin, 1),
        "kin Y linked to title": kin_linked / max(kin, 1),
    }


async def merge_quality(store: MemoryGraphStore, titles: set[str]) -> dict[str, float | str]:
    """Pairwise merge precision/recall of title mentions over the nodes' name sources."""
    per_node: list[Counter[str]] = []
    async for node in store.iter_nodes():
        counts = Counter({name: len(prov) for name, prov in node.name_sources.items() if name in titles})
        if counts:
            per_node.append(counts)
    same_node = sum(comb(sum(c.values()), 2) for c in per_node)
    same_both = sum(comb(k, 2) for c in per_node for k in c.values())
    by_title: Counter[str] = Counter()
    for c in per_node:
        by_title.update(c)
    same_title = sum(comb(k, 2) for k in by_title.values())
    wrong = sorted((sorted(c) for c in per_node if len(c) > 1), key=lambda names: (-len(names), names))
    return {
        "title mentions": sum(by_title.values()),
        "merge precision": same_both / same_node if same_node else 1.0,
        "merge recall": same_both / same_title if same_title else 1.0,
        "nodes holding 2+ titles": len(wrong),
        "example": " + ".join(wrong[0][:3]) if wrong else "-",
    }


async def routed(passages: list[Passage], ingester: PassageIngester) -> tuple[MemoryGraphStore, float]:
    store = MemoryGraphStore()
    t0 = time.perf_counter()
    await ingester(store, passages)
    return store, time.perf_counter() - t0


async def run(args: argparse.Namespace) -> None:
    passages = load_corpus(CORPUS)[: args.corpus_subset]
    titles = {p.title.strip() for p in passages}
    t0 = time.perf_counter()
    misses = extraction_misses(passages)
    print(f"extractor {NLP_VERSION}, {len(passages)} passages, load {os.getloadavg()[0]:.1f}\n")
    print("| " + " | ".join(misses) + " | extract s |")
    print("|" + "---|" * (len(misses) + 1))
    print("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in misses.values())
          + f" | {time.perf_counter() - t0:.1f} |\n")  # fmt: skip
    rows = []
    store, seconds = await routed(passages, PassageIngester(source_id="2wiki"))
    rows.append(("exact", len(passages), seconds, await merge_quality(store, titles)))
    if args.jev_subset:
        from graphwalk_core.decisions.local import LocalDecisionBackend
        from graphwalk_core.embeddings.fastembed import MINILM_MODEL, FastEmbedEmbedder

        emb = FastEmbedEmbedder(MINILM_MODEL, MODEL)
        subset = passages[: args.jev_subset]
        ingester = PassageIngester(
            source_id="2wiki", routing="jev", decider=LocalDecisionBackend(emb), embedder=emb
        )
        store, seconds = await routed(subset, ingester)
        quality = await merge_quality(store, {p.title.strip() for p in subset})
        rows.append(("jev (local decider)", len(subset), seconds, quality))
    keys = list(rows[0][3])
    print("| routing | passages | ingest s (goal <= 75 for 6,119) | " + " | ".join(keys) + " |")
    print("|" + "---|" * (3 + len(keys)))
    for name, n, seconds, quality in rows:
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in quality.values()]
        print(f"| {name} | {n} | {seconds:.1f} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-subset", type=int, default=None, help="first N passages (default: all)")
    parser.add_argument(
        "--jev-subset", type=int, default=0, help="also route the first N with the local decider"
    )
    args = parser.parse_args()
    if not CORPUS.is_file():
        print(f"skipped: needs {CORPUS}")
        return 0
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
