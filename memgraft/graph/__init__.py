"""The offline graph: extraction, merging, the graph folder and its store."""
