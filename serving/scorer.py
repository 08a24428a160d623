"""The validity scorer deployment (S_val): concurrent searches' candidates scored in one forward.

Optional: without ``serving.scorer_path`` the application has no scorer
deployment and searches rank by S_sem alone (HiCoMER without the validity
score), saying so in every response.
"""

from __future__ import annotations

import asyncio

import numpy as np
from ray import serve

from memgraft.models.batching import split_by_sizes
from serving.settings import Batching

Batch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@serve.deployment(name="scorer")
class ScorerDeployment:
    def __init__(self, path: str, batching: Batching):
        from memgraft.collab.retrieve.validity import load_scorer

        self.scorer = load_scorer(path)
        batching.configure(self._score_batch)

    def info(self) -> dict:
        return {"dim": int(self.scorer.dim)}

    async def score(self, h_q: np.ndarray, h_m: np.ndarray, is_team: np.ndarray, norm_time: np.ndarray) -> np.ndarray:
        return await self._score_batch((h_q, h_m, is_team, norm_time))

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def _score_batch(self, calls: list[Batch]) -> list[np.ndarray]:
        return await asyncio.to_thread(self._forward, calls)

    def _forward(self, calls: list[Batch]) -> list[np.ndarray]:
        import torch

        h_q, h_m, is_team, norm = (np.concatenate([c[i] for c in calls]) for i in range(4))
        logits = self.scorer.score(torch.from_numpy(np.ascontiguousarray(h_q, dtype=np.float32)),
                                   torch.from_numpy(np.ascontiguousarray(h_m, dtype=np.float32)),
                                   torch.from_numpy(np.ascontiguousarray(is_team, dtype=np.int64)),
                                   torch.from_numpy(np.ascontiguousarray(norm, dtype=np.float32))).numpy()
        return split_by_sizes(logits, [len(c[1]) for c in calls])
