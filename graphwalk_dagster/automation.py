"""Automation conditions shared by the domains: refresh from what exists, never start new work unasked."""

import dagster as dg


def refresh_on_any_update() -> dg.AutomationCondition:
    """Eager, without waiting for missing upstream partitions.

    An unpartitioned table over partitioned inputs (``knowledge_graph`` over the sources,
    ``eval_summary`` over dataset × system) refreshes from the partitions that exist: with plain
    ``eager()`` it would wait for every partition, and most eval partitions are never run.
    """
    return (
        dg.AutomationCondition.eager()
        .without(~dg.AutomationCondition.any_deps_missing())
        .with_label("eager, from the partitions that exist")
    )


def refresh_materialized_partitions() -> dg.AutomationCondition:
    """Eager for partitions materialized before; partitions never run stay missing.

    An upstream change re-runs the eval partitions someone started (so their answers follow the
    graph); new ones are started by hand (a backfill), so nothing costly starts unasked.
    """
    return (dg.AutomationCondition.eager() & ~dg.AutomationCondition.missing()).with_label(
        "eager, for partitions materialized before"
    )
