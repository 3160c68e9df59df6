"""QA systems behind the QASystem protocol: graphwalk presets, graph-reader, vector-rag, iter-rag."""
