"""graphwalk sql command (placeholder until its issue lands)."""


def sql() -> None:
    """Not built yet."""
    raise SystemExit("graphwalk sql is not built yet")
