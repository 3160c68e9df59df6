"""graphwalk_core.traversal package."""
