"""graphwalk query command (placeholder until its issue lands)."""


def query() -> None:
    """Not built yet."""
    raise SystemExit("graphwalk query is not built yet")
