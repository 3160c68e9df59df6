"""Automation conditions shared by the domains: refresh from what exists, never start new work unasked."""

import dagster as dg


def refresh_on_any_update() -> dg.AutomationCondition:
    """Run after any input updates, once no input is in progress; never just because it is missing.

    An unpartitioned table over partitioned inputs (``knowledge_graph`` over the sources,
    ``eval_summary`` over dataset × system) refreshes from the partitions that exist: ``eager()`` would
    wait for every input partition (most eval partitions are never run), and without that wait its
    "newly missing" rule would fire on a fresh deployment before any input exists.
    """
    return (
        dg.AutomationCondition.any_deps_updated().since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    ).with_label("after any input updates (from the partitions that exist)")


def refresh_materialized_partitions() -> dg.AutomationCondition:
    """Eager for partitions materialized before; partitions never run stay missing.

    An upstream change re-runs the eval partitions someone started (so their answers follow the
    graph); new ones are started by hand (a backfill), so nothing costly starts unasked.
    """
    return (dg.AutomationCondition.eager() & ~dg.AutomationCondition.missing()).with_label(
        "eager, for partitions materialized before"
    )
