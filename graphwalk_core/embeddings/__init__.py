"""graphwalk_core.embeddings package."""
