"""Relevance scoring of (query, text) pairs: a cross-encoder, or a cosine fallback.

No cross-encoder ships offline, so the local profile scores with the
embedder's cosine and says so through ``is_cross_encoder``/``name``.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from memgraft.config import Settings
from memgraft.models.embedder import Embedder
from memgraft.models.registry import display_name, resolve
from memgraft.models.threads import set_torch_threads


@runtime_checkable
class Reranker(Protocol):
    name: str
    is_cross_encoder: bool

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray: ...


class CrossEncoderReranker:
    is_cross_encoder = True

    def __init__(self, model: str, *, batch_size: int = 32, threads: int = 0):
        from sentence_transformers import CrossEncoder

        set_torch_threads(threads)
        self.name = display_name(model)
        self._model = CrossEncoder(resolve(model))
        self.batch_size = batch_size

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        pairs = [(query, t) for t in texts]
        return np.asarray(self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False), dtype=np.float32)


class CosineReranker:
    """Bi-encoder cosine: the fallback when no cross-encoder is available."""

    is_cross_encoder = False

    def __init__(self, embedder: Embedder):
        self._embedder = embedder
        self.name = f"cosine({embedder.name}) [no cross-encoder: bi-encoder fallback]"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        vecs = self._embedder.encode([query, *texts])
        return (vecs[1:] @ vecs[0]).astype(np.float32)


def load_reranker(settings: Settings, embedder: Embedder) -> Reranker:
    if settings.models.reranker in ("", "cosine", "none"):
        return CosineReranker(embedder)
    return CrossEncoderReranker(settings.models.reranker, threads=settings.models.torch_threads)
