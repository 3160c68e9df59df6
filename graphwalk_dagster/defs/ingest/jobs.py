"""``ingest_parallel``: the per-source chain with every step in its own process (multiprocess executor).

One run ingests one source partition; a backfill (or :mod:`graphwalk_dagster.scale_out`) starts one run
per partition, so several sources extract, route and write at once. Steps fork from a server process
that has imported the code location once (``forkserver``), so a step starts in a fraction of a second.
"""

import dagster as dg

from graphwalk_dagster.defs.ingest.partitions import source_partitions
from graphwalk_dagster.defs.ingest.sensors import INGEST_CHAIN

#: Steps of one run in flight at once (the chain is sequential: one source's steps follow each other).
MAX_CONCURRENT_STEPS = 4
#: Imported once by the fork server, so a step process starts with the code location, the instance's
#: storage (SQLite or dagster-postgres) and the graph store's drivers already loaded (a module that is
#: not installed is skipped).
PRELOAD = [
    "graphwalk_dagster.definitions",
    "graphwalk_dagster.defs.ingest.assets",
    "graphwalk_dagster.defs.eval.assets",
    "graphwalk_dagster.defs.training.assets",
    "dagster._core.storage.sqlite_storage",
    "dagster_postgres",
    "sqlalchemy.dialects.postgresql.psycopg",
    "psycopg",
    "pandas",
    "upath",
    "tomlkit",
]

multiprocess_forkserver = dg.multiprocess_executor.configured(
    {
        "max_concurrent": MAX_CONCURRENT_STEPS,
        "start_method": {"forkserver": {"preload_modules": PRELOAD}},
    },
    name="multiprocess_forkserver",
)

ingest_parallel = dg.define_asset_job(
    "ingest_parallel",
    selection=INGEST_CHAIN,
    partitions_def=source_partitions,
    executor_def=multiprocess_forkserver,
    description="The ingestion chain of one source, each step in its own process; backfill it over "
    "many sources to ingest them at once (a PostgreSQL graph takes concurrent writers).",
)
