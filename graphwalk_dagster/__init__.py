"""The Dagster layer of graphwalk: thin assets over graphwalk_core (see docs/dagster.md)."""
