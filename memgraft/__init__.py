"""memgraft: hypergraph working memory and validity-aware collaborative memory for RAG.

The library core never imports Ray; Ray adapters live in ``pipelines/``,
``training/`` and ``serving/``.
"""

__version__ = "0.1.0"
