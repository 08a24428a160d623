"""The embedder deployment: one model per replica, concurrent callers' texts encoded as one batch.

Every query of every search and HGMem step is one short ``encode`` call; alone,
each pays a forward pass of its own. ``@serve.batch`` gathers the calls that
arrive within ``embed_batching.batch_wait_timeout_s`` and encodes their texts
together (sentence-transformers sorts them by length, so padding stays small).
A batch that fails is encoded again caller by caller, so only the caller whose
text broke it gets the error (:mod:`serving.isolate`).
"""

from __future__ import annotations

import asyncio

import numpy as np
from ray import serve

from memgraft.config import Settings
from memgraft.models.batching import split_by_sizes
from serving.isolate import per_caller, unwrap
from serving.settings import Batching


@serve.deployment(name="embedder")
class EmbedderDeployment:
    def __init__(self, settings: Settings, batching: Batching):
        from memgraft.models.embedder import load_embedder

        self.embedder = load_embedder(settings)
        batching.configure(self._encode_batch)

    def info(self) -> dict:
        return {"name": self.embedder.name, "dim": int(self.embedder.dim)}

    async def encode(self, texts: list[str]) -> np.ndarray:
        return unwrap(await self._encode_batch(list(texts)))

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _encode_batch(self, calls: list[list[str]]) -> list[np.ndarray]:
        return await per_caller(self._encode_joint, calls)

    async def _encode_joint(self, calls: list[list[str]]) -> list[np.ndarray]:
        flat = [t for texts in calls for t in texts]
        vectors = await asyncio.to_thread(self.embedder.encode, flat)
        return split_by_sizes(vectors, [len(texts) for texts in calls])
