"""The reranker deployment: a cross-encoder, or the cosine fallback over the embedder deployment.

No cross-encoder ships offline, so locally ``load_reranker`` returns the cosine
fallback, which scores with the embedder: here that embedder is a proxy to the
embedder deployment, so the fallback adds no second copy of the model. Its name
says it is a fallback, and every search reports that name as its S_sem source.
"""

from __future__ import annotations

import asyncio

import numpy as np
from ray import serve

from memgraft.config import Settings
from serving.proxies import EmbedderProxy


@serve.deployment(name="reranker")
class RerankerDeployment:
    async def __init__(self, settings: Settings, embedder, timeout_s: float | None = None):
        from memgraft.models.reranker import load_reranker

        info = await embedder.info.remote()
        proxy = EmbedderProxy(embedder, info["name"], info["dim"], timeout_s)
        self.reranker = await asyncio.to_thread(load_reranker, settings, proxy)

    def info(self) -> dict:
        return {"name": self.reranker.name, "is_cross_encoder": bool(self.reranker.is_cross_encoder)}

    async def score(self, query: str, texts: list[str]) -> np.ndarray:
        return await asyncio.to_thread(self.reranker.score, query, texts)
