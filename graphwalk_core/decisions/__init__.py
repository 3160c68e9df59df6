"""graphwalk_core.decisions package."""
