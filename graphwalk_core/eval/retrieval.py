"""The 2wiki-retrieval corpus at a smaller size: every supporting passage plus seeded distractors.

The retrieval measures themselves (recall@2/5/10, all-supporting@10) are columns of every text eval's
results (``metrics.retrieval_scores``); ``graphwalk eval 2wiki-retrieval`` runs every retrieval system.
"""

from __future__ import annotations

import hashlib

from graphwalk_core.eval.datasets.base import Dataset


def corpus_subset(dataset: Dataset, n_passages: int | None, seed: int = 0) -> Dataset:
    """Every supporting passage of the questions plus seeded distractors: ``n_passages`` in all."""
    passages = list(dataset.knowledge.passages)
    if n_passages is None or n_passages >= len(passages):
        return dataset
    needed = {pid for q in dataset.questions for pid in q.extra.get("supporting", [])}
    keep = [p for p in passages if p.id in needed]
    others = sorted(
        (p for p in passages if p.id not in needed),
        key=lambda p: hashlib.sha256(f"{seed}\x00{p.id}".encode()).hexdigest(),
    )
    keep += others[: max(0, n_passages - len(keep))]
    order = {p.id: i for i, p in enumerate(passages)}
    keep.sort(key=lambda p: order[p.id])
    knowledge = dataset.knowledge.model_copy(update={"passages": tuple(keep)})
    info = {**dataset.info, "passages": len(keep), "corpus_subset_seed": seed}
    return dataset.model_copy(update={"knowledge": knowledge, "info": info})
