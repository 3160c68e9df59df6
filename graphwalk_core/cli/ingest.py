"""graphwalk ingest command (placeholder until its issue lands)."""


def ingest() -> None:
    """Not built yet."""
    raise SystemExit("graphwalk ingest is not built yet")
