"""graphwalk_core.eval package."""
