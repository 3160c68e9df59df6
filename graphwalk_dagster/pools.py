"""The instance's pool limits, written once as explicit limits rather than left to ``default_limit``.

Dagster gives a pool without a limit of its own the instance's ``concurrency.pools.default_limit`` on
the pool's first claim. On a PostgreSQL instance that first claim races: when several runs claim a new
pool at once, the INSERT that loses aborts its transaction and the run fails with
``InFailedSqlTransaction`` (dagster-io/dagster#33552, open in the Dagster this repo pins). So
``dagster.postgres.yaml`` sets no ``default_limit``, and the limits below are written as explicit
limits, which Dagster never re-initializes: by ``python -m graphwalk_dagster.scale_out`` before it
starts its runs, by ``make ui-postgres`` / ``make demo-postgres``, or by hand with
``python -m graphwalk_dagster.pools`` (``dagster instance concurrency set graph_store 8`` does the same).

Run: ``python -m graphwalk_dagster.pools [--graph-store N]`` with ``DAGSTER_HOME`` set: without
``--graph-store`` it only fills in pools that have no explicit limit; with it, it sets that limit.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence

import dagster as dg

from graphwalk_core.errors import GraphwalkError
from graphwalk_dagster.instance import home_instance

#: The pool of the steps that open the graph store (``defs/ingest/assets.py``).
GRAPH_POOL = "graph_store"
#: Steps of each pool in flight at once on a shared (PostgreSQL) instance: up to 8 sources route and
#: write at once (a PostgreSQL graph serializes each write transaction on its writer lock).
POOL_LIMITS: Mapping[str, int] = {GRAPH_POOL: 8}


def set_pool_limits(
    instance: dg.DagsterInstance, limits: Mapping[str, int] = POOL_LIMITS, *, overwrite: bool = False
) -> dict[str, int]:
    """Write ``limits`` as explicit limits; a pool that has one already (set in the UI or with
    ``dagster instance concurrency set``) keeps it unless ``overwrite``, and without ``overwrite`` an
    instance whose dagster.yaml sets ``default_limit`` (the SQLite ``dagster.yaml``: 1) gets that limit
    written instead. Every pool's limit afterwards."""
    storage = instance.event_log_storage
    explicit = set() if overwrite else {p.name for p in storage.get_pool_limits() if not p.from_default}
    default = None if overwrite else instance.global_op_concurrency_default_limit
    for pool in sorted(set(limits) - explicit):
        storage.set_concurrency_slots(pool, limits[pool] if default is None else default)
    return {pool.name: pool.limit for pool in sorted(storage.get_pool_limits(), key=lambda p: p.name)}


def count_of(what: str) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of ``what``, 1 or more (a limit of 0 would hold every step of
    the pool forever; a negative one failed with Dagster's traceback)."""

    def parse(text: str) -> int:
        if not text.strip().isdecimal() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"{text} is not a number of {what} (1 or more)")
        return int(text)

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument(
        "--graph-store",
        type=count_of("steps"),
        help=f"graph_store steps at once (default, where no limit is set yet: the instance's "
        f"default_limit, else {POOL_LIMITS[GRAPH_POOL]})",
    )
    args = parser.parse_args(argv)
    given = args.graph_store is not None
    limits = {GRAPH_POOL: args.graph_store} if given else POOL_LIMITS
    try:
        instance = home_instance()
    except GraphwalkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with instance:
        for pool, limit in set_pool_limits(instance, limits, overwrite=given).items():
            print(f"pool {pool}: {limit} at once")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
