"""graphwalk_core.ingest package."""
