"""Metadata shown in the UI: floats rounded for display, None as "none"."""

import math

from graphwalk_dagster.metadata import display_float, markdown_table, to_metadata


def test_floats_are_rounded_to_four_significant_digits() -> None:
    values = {"f1": 2 / 3, "latency_p50_s": 12.3456789, "cost_usd": 1.234567e-5, "n": 3, "ok": True}
    assert to_metadata({**values, "skip_reason": None}) == {
        "f1": 0.6667,
        "latency_p50_s": 12.35,
        "cost_usd": 1.235e-05,
        "n": 3,
        "ok": True,
        "skip_reason": "none",
    }
    assert (display_float(0.0), display_float(1.0), math.isnan(display_float(math.nan))) == (0.0, 1.0, True)


def test_preview_cells_round_floats() -> None:
    table = markdown_table([{"name": "Inception", "probability": 0.912345678, "hops": 2}])
    assert table.splitlines()[-1] == "| Inception | 0.9123 | 2 |"
