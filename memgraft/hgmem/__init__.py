"""HGMem: hypergraph working memory for multi-step RAG (arXiv 2512.23959).

``memory`` holds the hypergraph (entities as vertices, memory points as
hyperedges) and ``export`` draws it for people (GraphML, standalone HTML).
"""
