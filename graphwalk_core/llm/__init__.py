"""graphwalk_core.llm package."""
