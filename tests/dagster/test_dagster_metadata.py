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


def test_a_long_list_shows_its_first_lines_and_how_many_more() -> None:
    """Every unchanged document had a line in source_documents' ``skipped_why``: a daily re-ingest of a
    source of 100,000 documents wrote megabytes of metadata into the event log each run."""
    from graphwalk_dagster.metadata import LIST_LINES, skipped_metadata

    meta = skipped_metadata([], unchanged=[f"d{i:03}" for i in range(LIST_LINES + 3)])
    assert meta["skipped"] == 53
    lines = meta["skipped_why"].value.splitlines()
    assert (len(lines), lines[0]) == (52, "- `d000`: unchanged since the last run (hash in the ledger)")
    assert lines[-3:] == ["- `d049`: unchanged since the last run (hash in the ledger)", "", "_3 more_"]
