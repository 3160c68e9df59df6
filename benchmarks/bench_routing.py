# ruff: noqa: E402  (thread limits must be set before numpy loads)
"""Routing throughput over HotpotQA paragraphs: NLP extractions precomputed, MiniLM embedder, local decider.

Run: ``.venv/bin/python benchmarks/bench_routing.py [--sizes 250 500 1000] [--embedder minilm ...]``.
Needs ``../shared/data/hotpotqa/hotpotqa_dev_ircotfmt_300.jsonl`` and the shared MiniLM folder (both
ONNX files); by default it runs every embedder: ``minilm`` (the default file), ``minilm-qint8``
(``GRAPHWALK_EMBED_MODEL_FILE=model_qint8_dynamic.onnx``) and ``hashing`` (no ONNX). Only routing is
timed (extraction runs before the clock), each size on a fresh store, embedder cache and decider.
Goal: >= 100 paragraphs/s, linear in corpus size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run
# one BLAS thread: on a shared 2-core machine, threaded small matrix products thrash (3-7x slower)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.embeddings import factory
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.ingest.chunking import Chunk
from graphwalk_core.ingest.extraction.base import Extraction
from graphwalk_core.ingest.extraction.nlp import NLP_VERSION, extract_nlp
from graphwalk_core.ingest.outputs import ChunkExtraction, DocumentRef, ExtractionSet
from graphwalk_core.ingest.routing import Router, route_extractions
from graphwalk_core.model import text_hash
from graphwalk_core.settings import GraphwalkSettings
from graphwalk_core.stores.memory import MemoryGraphStore

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "hotpotqa" / "hotpotqa_dev_ircotfmt_300.jsonl"


def load_paragraphs(path: Path, limit: int) -> list[tuple[str, str]]:
    """(id, text) of the first ``limit`` distinct context paragraphs (title line + paragraph)."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            for ctx in json.loads(line)["contexts"]:
                text = f"{ctx['title']}\n\n{ctx['paragraph_text']}"
                if text in seen:
                    continue
                seen.add(text)
                out.append((f"p{len(out):05d}", text))
                if len(out) == limit:
                    return out
    return out


def extraction_set(paragraphs: list[tuple[str, str]], extractions: list[Extraction]) -> ExtractionSet:
    items, refs = [], []
    for (doc_id, text), extraction in zip(paragraphs, extractions, strict=True):
        chunk = Chunk(
            document_id=doc_id, index=0, text=text, start=0, end=len(text), content_hash=text_hash(text)
        )
        items.append(ChunkExtraction(chunk=chunk, extractor=NLP_VERSION, extraction=extraction))
        refs.append(DocumentRef(id=doc_id, content_hash=chunk.content_hash, extractor=NLP_VERSION))
    return ExtractionSet(source_id="hotpotqa", documents=refs, items=items)


def fresh_embedder(settings: GraphwalkSettings | None):  # type: ignore[no-untyped-def]
    """A new embedder (no vectors cached from a previous size); ``None``: the hashing embedder."""
    if settings is None:
        return HashingEmbedder()
    factory._fastembed.cache_clear()
    return factory.make_embedder(settings)


async def run(
    size: int,
    paragraphs: list[tuple[str, str]],
    extractions: list[Extraction],
    settings: GraphwalkSettings | None,
):
    embedder = fresh_embedder(settings)
    embedder.embed(["warm up"])  # model load and first-call setup stay outside the clock
    decider = LocalDecisionBackend(embedder)
    exset = extraction_set(paragraphs[:size], extractions[:size])
    store = MemoryGraphStore()
    router = Router(store, decider, embedder, None, "jev")
    started = time.perf_counter()
    plan = await route_extractions(exset, store, decider, embedder, None, "jev", router=router)
    seconds = time.perf_counter() - started
    asked = sum(1 for m in plan.mentions if m.via == "decider")
    new = sum(1 for m in plan.mentions if m.action == "new")
    return {
        "paragraphs": size,
        "mentions": len(plan.mentions),
        "asked": asked,
        "new nodes": new,
        "calls": plan.cost.calls,
        "embedded": router.index.embedded_texts,
        "seconds": seconds,
        "para/s": size / seconds,
        "ms/para": 1000 * seconds / size,
    }


EMBEDDERS = {
    "minilm": None,  # the shared folder's default file (model.onnx, weight-only int8)
    "minilm-qint8": "model_qint8_dynamic.onnx",  # ~2x faster, vectors vary slightly with batch-mates
    "hashing": None,  # no ONNX: the routing machinery alone
}


def settings_for(embedder: str, model_path: Path | None) -> GraphwalkSettings | None:
    """Settings that load ``embedder`` (None: the hashing embedder)."""
    if embedder == "hashing":
        return None
    if model_path is None:
        raise SystemExit(f"--embedder {embedder} needs the shared MiniLM folder (../shared/models)")
    return GraphwalkSettings(embed_model_path=model_path, embed_model_file=EMBEDDERS[embedder])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--embedder", choices=list(EMBEDDERS), nargs="+", default=list(EMBEDDERS))
    args = parser.parse_args()
    if not DATA.is_file():
        print(f"skipped: {DATA} is absent (see ../shared/README.md)")
        return 0
    model_path = factory.default_model_path()
    paragraphs = load_paragraphs(DATA, max(args.sizes))
    started = time.perf_counter()
    extractions = [extract_nlp(text) for _, text in paragraphs]
    print(
        f"{len(paragraphs)} paragraphs, nlp extraction {time.perf_counter() - started:.2f}s (untimed); "
        f"decider: local; load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    rows = []
    for name in args.embedder:
        settings = settings_for(name, model_path)
        sized = [asyncio.run(run(size, paragraphs, extractions, settings)) for size in args.sizes]
        base = sized[0]["ms/para"]
        rows += [{"embedder": name, **r, "vs smallest": r["ms/para"] / base} for r in sized]
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values()]
        print("| " + " | ".join(cells) + " |")
    print("vs smallest: time per paragraph relative to the smallest size (1.00 = linear in corpus size)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
