"""graphwalk_core.stores package."""
