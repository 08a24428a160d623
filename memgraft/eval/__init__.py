"""Evaluation: dataset loaders, retrieval metrics and answer scorers."""
