"""Turn core outputs into Dagster metadata (counts, usage, markdown previews, skips).

Floats are shown to ``FLOAT_DIGITS`` significant digits (F1 0.6667, not 0.6666666666666666); the
warehouse tables keep full precision.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

PREVIEW_ROWS = 10
#: Lines of a list shown as metadata (skipped or deleted documents): every run's metadata stays small
#: however large the source; the warehouse's ``documents`` table holds every document's outcome.
LIST_LINES = 50
FLOAT_DIGITS = 4


def latest_materialization(
    instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition: str
) -> dg.EventLogRecord | None:
    """The record of the partition's latest materialization of ``asset_key`` (None: never materialized)."""
    found = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1
    ).records
    return found[0] if found else None


def display_float(value: float) -> float:
    """``value`` rounded to ``FLOAT_DIGITS`` significant digits (small costs keep their digits)."""
    return float(f"{value:.{FLOAT_DIGITS}g}")


def markdown_table(rows: Sequence[Mapping[str, Any]], *, limit: int = PREVIEW_ROWS) -> str:
    """A markdown table of the first ``limit`` rows (cells cut to 60 characters)."""
    if not rows:
        return "_(no rows)_"
    columns = list(rows[0])

    def cell(value: Any) -> str:
        if isinstance(value, float):
            value = display_float(value)
        text = "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= 60 else text[:57] + "..."

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"\n_{len(rows) - limit} more row(s)_")
    return "\n".join(lines)


def to_metadata(values: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values as metadata: ``None`` becomes the text "none" (Dagster has no null metadata),
    floats are rounded for display."""

    def shown(value: Any) -> Any:
        if value is None:
            return "none"
        return display_float(value) if isinstance(value, float) else value

    return {k: shown(v) for k, v in values.items()}


def embedded_image(name: str, path: Path) -> str:
    """Markdown showing a PNG inline (as a data URI), so the UI renders the plot itself."""
    data = base64.b64encode(path.read_bytes()).decode()
    return f"**{name}** (`{path}`)\n\n![{name}](data:image/png;base64,{data})"


def preview(rows: Sequence[Mapping[str, Any]]) -> dg.MetadataValue:
    return dg.MetadataValue.md(markdown_table(rows))


def cost_metadata(cost: Any) -> dict[str, Any]:
    """Calls, tokens and provider-reported cost of a stage (a core ``Cost``)."""
    return to_metadata(
        {
            "calls": cost.calls,
            "input_tokens": cost.input_tokens,
            "output_tokens": cost.output_tokens,
            "cost_usd": cost.cost_usd,
        }
    )


def markdown_list(lines: Sequence[str], empty: str, *, limit: int = LIST_LINES) -> dg.MetadataValue:
    """The first ``limit`` lines as markdown, then how many more there are (``empty`` when none)."""
    shown = "\n".join(lines[:limit]) or empty
    return dg.MetadataValue.md(shown + (f"\n\n_{len(lines) - limit} more_" if len(lines) > limit else ""))


def skipped_metadata(skipped: Sequence[Any], *, unchanged: Sequence[str] = ()) -> dict[str, Any]:
    """What was skipped and why: unreadable input (file, line, reason) first, then unchanged documents."""
    lines = [f"- `{item.describe()}`" for item in skipped]
    lines += [f"- `{doc}`: unchanged since the last run (hash in the ledger)" for doc in unchanged]
    return {
        "skipped": len(skipped) + len(unchanged),
        "skipped_why": markdown_list(lines, "_nothing skipped_"),
    }


def check_result(
    outcome: Any,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
    metadata: Mapping[str, Any] | None = None,
) -> dg.AssetCheckResult:
    """An asset check result from a core ``CheckOutcome`` (failing rows counted, a few shown), with
    ``metadata`` besides."""
    return dg.AssetCheckResult(
        passed=outcome.passed,
        severity=severity,
        metadata={
            "failures": outcome.failures,
            "examples": dg.MetadataValue.md("\n".join(f"- `{e}`" for e in outcome.examples) or "none"),
            **(metadata or {}),
        },
    )
