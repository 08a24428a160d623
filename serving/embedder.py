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
        batching.configure(self._pairs_batch)
        self._pairs, self._pairs_path = None, settings.hicomer.judge_encoder or "bundled"
        self._pairs_dtype, self._cache_path = settings.hicomer.judge_encoder_dtype, settings.cache_path

    def info(self) -> dict:
        return {"name": self.embedder.name, "dim": int(self.embedder.dim)}

    # -- the pair judge's second opinion (hicomer.judge_encoder), beside the model it is a LoRA of ---------
    # Every ingress's writes ask it about the pairs in doubt; run in the ingress it took 23 of a 16-memory
    # group's 25 s there, unbatched. Loaded on the first call: a service on the rules updater never asks.

    async def pair_probabilities(self, a: list[str], b: list[str]) -> np.ndarray:
        return unwrap(await self._pairs_batch((list(a), list(b))))

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _pairs_batch(self, calls: list[tuple[list[str], list[str]]]) -> list[np.ndarray]:
        return await per_caller(self._pairs_joint, calls)

    async def _pairs_joint(self, calls: list[tuple[list[str], list[str]]]) -> list[np.ndarray]:
        a = [t for texts, _ in calls for t in texts]
        b = [t for _, texts in calls for t in texts]
        probs = await asyncio.to_thread(self._pair_encoder().probabilities, a, b)
        return split_by_sizes(np.asarray(probs, np.float32), [len(texts) for texts, _ in calls])

    def _pair_encoder(self):
        if self._pairs is None:
            from memgraft.collab.maintain.pair_encoder import inference_dtype, load_pair_encoder

            self._pairs = load_pair_encoder(self._pairs_path, inference_dtype(self._pairs_dtype, self._cache_path))
        return self._pairs

    async def encode(self, texts: list[str]) -> np.ndarray:
        return unwrap(await self._encode_batch(list(texts)))

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _encode_batch(self, calls: list[list[str]]) -> list[np.ndarray]:
        return await per_caller(self._encode_joint, calls)

    async def _encode_joint(self, calls: list[list[str]]) -> list[np.ndarray]:
        flat = [t for texts in calls for t in texts]
        vectors = await asyncio.to_thread(self.embedder.encode, flat)
        return split_by_sizes(vectors, [len(texts) for texts in calls])
