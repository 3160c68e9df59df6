"""Per-decision accuracy and speed of the offline LocalDecisionBackend on MetaQA dev (relation mode).

For each sampled dev question (1/2/3 hops) the gold relation path comes from its qtype. At every depth
the decider gets the relation-mode question the engine would build (``traversal.prompts``, MetaQA
glosses, literal STOP, no STOP at the start) for the frontier reached along the gold path so far:

* ``rel@d`` : the top choice is the gold relation (and direction) at depth ``d``;
* ``stop``  : after the full gold path, the top choice is STOP;
* ``no-stop``: before the path is complete (depth >= 1), the top choice is not STOP.

    python benchmarks/bench_local_decider.py [N_PER_HOP] [--variant NAME=k:v,k:v ...]

The default compares the shipped defaults with the previous engineer's settings (``v1``).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRAPHWALK_EMBED_CACHE", "off")  # cold: no vectors kept from an earlier run

from rich.console import Console
from rich.table import Table

from graphwalk_core.decisions.base import ChoiceQuestion, DecisionRequest
from graphwalk_core.decisions.local import DEFAULT_SKIP_KEYS, LocalDecisionBackend
from graphwalk_core.embeddings.cache import VectorCache
from graphwalk_core.embeddings.fastembed import MINILM_MODEL, FastEmbedEmbedder
from graphwalk_core.eval.datasets.metaqa import METAQA_OBJECT_TYPES
from graphwalk_core.traversal import prompts
from graphwalk_core.traversal.config import METAQA_RELATION_GLOSSES

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "metaqa"
MODEL = Path(__file__).resolve().parents[2] / "shared" / "models" / "all-minilm-l6-v2-onnx"
#: qtype words -> KB relation (MetaQA's qtype files name the entity types along the gold path).
QTYPE_RELATION = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "genre": "has_genre",
    "language": "in_language",
    "tag": "has_tags",
    "tags": "has_tags",
    "imdbrating": "has_imdb_rating",
    "imdbvotes": "has_imdb_votes",
}
MAX_FRONTIER = 2000
#: The graph's node types, as the engine's answer-type question offers them.
NODE_TYPES = sorted({"film", *METAQA_OBJECT_TYPES.values()})
#: Settings compared by default: the shipped defaults and the previous engineer's (v1) ones.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "v1": {"option_style": "flat", "stop_rule": "gain", "stop_bias": 0.0, "type_weight": 0.0},
}

Adjacency = dict[str, dict[tuple[str, str], list[str]]]


def load_kb() -> Adjacency:
    """node -> (relation, direction) -> neighbors, in file order."""
    adj: Adjacency = defaultdict(lambda: defaultdict(list))
    with (DATA / "kb.txt").open(encoding="utf-8") as fh:
        for line in fh:
            s, r, o = line.rstrip("\n").split("|")
            adj[s][(r, "out")].append(o)
            adj[o][(r, "in")].append(s)
    return adj


def gold_path(qtype: str) -> list[tuple[str, str]]:
    """(relation, direction) per hop: ``movie_to_director`` is directed_by out, the reverse is in."""
    parts = qtype.split("_to_")
    return [
        (QTYPE_RELATION[b], "out") if a == "movie" else (QTYPE_RELATION[a], "in") for a, b in pairwise(parts)
    ]


def sample(hops: int, n: int, seed: int = 0) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(query, topic, gold path) for a seeded sample of dev questions."""
    qa = (DATA / f"{hops}-hop" / "vanilla" / "qa_dev.txt").read_text(encoding="utf-8").splitlines()
    qt = (DATA / f"{hops}-hop" / "qa_dev_qtype.txt").read_text(encoding="utf-8").splitlines()
    idx = sorted(random.Random(seed).sample(range(len(qa)), min(n, len(qa))))
    out = []
    for i in idx:
        q = qa[i].split("\t")[0]
        topic = q[q.index("[") + 1 : q.index("]")]
        out.append((q.replace("[", "").replace("]", ""), topic, gold_path(qt[i])))
    return out


def question_at(
    adj: Adjacency, start: str, frontier: list[str], path: list[str], allow_stop: bool, hint: str | None
) -> tuple[ChoiceQuestion | None, dict[str, tuple[str, str, list[str]]]]:
    """The engine's relation-mode question for ``frontier`` and label -> (relation, direction, reached)."""
    merged: dict[tuple[str, str], list[str]] = {}
    for node in frontier:
        for key, nbs in adj[node].items():
            merged.setdefault(key, []).extend(nbs)
    options: dict[str, Any] = {}
    moves: dict[str, tuple[str, str, list[str]]] = {}
    for (rel, d), found in merged.items():
        targets = [t for t in dict.fromkeys(found) if t != start]
        if targets:
            label = f"o{len(options) + 1}"
            options[label] = prompts.relation_option(
                rel, d, targets[:3], len(targets), glosses=METAQA_RELATION_GLOSSES
            )  # type: ignore[arg-type]
            moves[label] = (rel, d, targets[:MAX_FRONTIER])
    if allow_stop:
        options[prompts.STOP] = prompts.stop_description("literal", frontier[:3])
    if len(options) < 2:  # the engine forces a lone move
        return None, moves
    instr = prompts.instructions("relation", path, frontier[:3], len(frontier), answer_hint=hint)
    return ChoiceQuestion(key="b0", instructions=instr, options=options), moves


async def score(backend: LocalDecisionBackend, adj: Adjacency, items: dict[int, list[Any]]) -> dict[str, Any]:
    """Counts of right decisions per metric, per hop count."""
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    started = time.perf_counter()
    for hops, questions in items.items():
        for query, topic, gold in questions:
            frontier, path = [topic], []
            state = prompts.build_state(query)
            ask = DecisionRequest(state=state, questions=[prompts.answer_type_question(NODE_TYPES)])
            typed = (await backend.decide(ask)).results[prompts.ANSWER_TYPE_KEY].top
            hint = NODE_TYPES[int(typed[1:]) - 1]
            for depth in range(hops + 1):
                # like the engine: the hint is asked with the first call and shown from depth 1 on
                cq, moves = question_at(adj, topic, frontier, path, depth > 0, hint if depth else None)
                if cq is None:
                    if not moves:
                        break
                    top = next(iter(moves))
                else:
                    req = DecisionRequest(state=state, questions=[cq])
                    top = (await backend.decide(req)).results["b0"].top
                chosen = moves.get(top)
                if depth < hops:
                    key = f"{hops}h rel@{depth}"
                    hits[key][0] += chosen is not None and chosen[:2] == gold[depth]
                    hits[key][1] += 1
                    if depth > 0:
                        hits[f"{hops}h no-stop"][0] += top != prompts.STOP
                        hits[f"{hops}h no-stop"][1] += 1
                    found = [m for m in moves.values() if m[:2] == gold[depth]]
                    if not found:
                        break
                    rel, d, frontier = found[0]
                    path.append(f"{rel} ({d})")
                else:
                    hits[f"{hops}h stop"][0] += top == prompts.STOP
                    hits[f"{hops}h stop"][1] += 1
    return {"hits": hits, "seconds": time.perf_counter() - started}


def parse_variant(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME=key:value,key:value`` (values parsed as float when they look numeric)."""
    name, _, body = spec.partition("=")
    kwargs: dict[str, Any] = {}
    for pair in filter(None, body.split(",")):
        key, _, value = pair.partition(":")
        if key == "skip":  # extra keys to drop, joined by "+"
            kwargs["skip_keys"] = DEFAULT_SKIP_KEYS | set(value.split("+"))
            continue
        try:
            kwargs[key] = float(value)
        except ValueError:
            kwargs[key] = value
    return name, kwargs


def main(argv: list[str]) -> None:
    if not (DATA / "kb.txt").is_file() or not (MODEL / "tokenizer.json").is_file():
        print(f"skipped: needs {DATA} and {MODEL}")
        return
    n = int(argv[0]) if argv and argv[0].isdigit() else 100
    variants = dict(VARIANTS)
    if "--variant" in argv:
        variants = dict(parse_variant(s) for s in argv[argv.index("--variant") + 1 :])
    adj = load_kb()
    items = {h: sample(h, n) for h in (1, 2, 3)}
    embedder = FastEmbedEmbedder(MINILM_MODEL, MODEL)
    results = {}
    for name, kwargs in variants.items():
        embedder.cache = VectorCache(embedder.cache.maxsize)  # each variant's seconds from a cold cache
        backend = LocalDecisionBackend(embedder, **kwargs)
        results[name] = asyncio.run(score(backend, adj, items))
    keys = sorted({k for r in results.values() for k in r["hits"]})
    table = Table(title=f"LocalDecisionBackend on MetaQA dev, {n} questions per hop count (seed 0)")
    table.add_column("decision")
    for name in results:
        table.add_column(name, justify="right")
    for key in keys:
        cells = []
        for r in results.values():
            ok, total = r["hits"].get(key, (0, 0))
            cells.append(f"{ok / total:.3f} ({total})" if total else "-")
        table.add_row(key, *cells)
    table.add_row("seconds", *(f"{r['seconds']:.1f}" for r in results.values()))
    Console().print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
