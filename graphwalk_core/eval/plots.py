"""PNG plots of a summary table: F1 by hop count per system, and cost vs F1 (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from graphwalk_core.files import atomic_path


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def f1_by_hops_series(summary: pa.Table) -> dict[str, list[tuple[int, float]]]:
    """(hops, F1) points by line label, one line per dataset family (``metaqa`` for ``metaqa-2hop``),
    split and system, sorted by label and hops; rows without hops or F1 are left out."""
    series: dict[str, list[tuple[int, float]]] = {}
    for row in summary.to_pylist():
        if row["hops"] is None or row["f1"] is None:
            continue
        label = f"{row['dataset'].split('-')[0]} ({row['split']}) · {row['system']}"
        series.setdefault(label, []).append((row["hops"], row["f1"]))
    return {label: sorted(points) for label, points in sorted(series.items())}


def plot_f1_by_hops(summary: pa.Table, path: Path) -> Path:
    """One line per (dataset, split, system): F1 against hop count (rows without hops are left out)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = f1_by_hops_series(summary)
    for label, points in series.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xlabel("hops")
    ax.set_ylabel("F1")
    ax.set_ylim(0, 1.02)
    ax.set_title("F1 by hop count")
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8)
        ax.set_xticks(sorted({p[0] for pts in series.values() for p in pts}))
    return _save(fig, plt, path)


def plot_cost_vs_f1(summary: pa.Table, path: Path) -> Path:
    """One point per summary row with a reported cost: $ per 1k questions against F1."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rows = [r for r in summary.to_pylist() if r["f1"] is not None and r["cost_per_1k_usd"] is not None]
    for row in rows:
        hops = "" if row["hops"] is None else f" {row['hops']}h"
        ax.scatter(row["cost_per_1k_usd"], row["f1"])
        ax.annotate(f"{row['system']}{hops}", (row["cost_per_1k_usd"], row["f1"]), fontsize=7)
    if not rows:
        ax.text(
            0.5,
            0.5,
            "no provider-reported cost in these runs",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.set_xlabel("$ per 1,000 questions (provider-reported)")
    ax.set_ylabel("F1")
    ax.set_title("Cost vs F1")
    ax.grid(alpha=0.3)
    return _save(fig, plt, path)


def _save(fig, plt, path: Path) -> Path:  # type: ignore[no-untyped-def]
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return path
