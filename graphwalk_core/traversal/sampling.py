"""Client-side temperature and top-p over a returned distribution, and per-walk RNGs."""

from __future__ import annotations

import hashlib
import math
import random

from graphwalk_core.decisions.base import top_label


def apply_temperature(dist: dict[str, float], temperature: float) -> dict[str, float]:
    """``p ** (1 / T)`` renormalized; ``T == 0`` is a one-hot argmax (ties by offer order).

    The powers are of ``p / max(p)``, so a low ``T`` never underflows every label to 0.
    """
    if temperature == 0:
        best = top_label(dist)
        return {label: 1.0 if label == best else 0.0 for label in dist}
    if temperature == 1:
        return dict(dist)
    top = max(dist.values())
    powered = {label: (p / top) ** (1.0 / temperature) if p > 0 else 0.0 for label, p in dist.items()}
    total = sum(powered.values())
    return {label: v / total for label, v in powered.items()}


def apply_top_p(dist: dict[str, float], top_p: float) -> dict[str, float]:
    """Keep the smallest most-probable set whose mass reaches ``top_p`` (ties by offer order), renormalized.

    Labels outside the nucleus get 0; the result keeps the offer order.
    """
    if top_p >= 1.0:
        return dict(dist)
    kept: set[str] = set()
    mass = 0.0
    for label in sorted(dist, key=lambda lab: -dist[lab]):  # stable: ties keep offer order
        kept.add(label)
        mass += dist[label]
        if mass >= top_p - 1e-12:
            break
    total = math.fsum(dist[label] for label in kept)  # exactly rounded: the same in any set order
    return {label: (p / total if label in kept else 0.0) for label, p in dist.items()}


def used_distribution(dist: dict[str, float], temperature: float, top_p: float) -> dict[str, float]:
    """The distribution a sampled walk draws from: temperature first, then top-p."""
    return apply_top_p(apply_temperature(dist, temperature), top_p)


def draw(dist: dict[str, float], rng: random.Random) -> str:
    """One label drawn from ``dist`` (cumulative over offer order)."""
    u = rng.random()
    acc = 0.0
    last = ""
    for label, p in dist.items():
        if p <= 0:
            continue
        acc += p
        last = label
        if u < acc:
            return label
    return last


def walk_rng(seed: int, query: str, walk_index: int) -> random.Random:
    """An RNG seeded from (seed, query, walk index), so results never depend on query order."""
    digest = hashlib.sha256(f"{seed}\x1f{query}\x1f{walk_index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
