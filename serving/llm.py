"""The in-process LLM deployment (transformers locally): requests from every caller decoded in batches.

The backend's ``generate(list[ChatRequest])`` already decodes a batch at once;
``@serve.batch`` fills that batch from concurrent questions (HGMem steps, team
answers, chat calls) up to ``llm_batching.max_batch_size``. On the cluster
profile (``models.llm_backend: vllm``) this deployment is replaced by
``ray.serve.llm`` (:mod:`serving.vllm`). A batch that fails is decoded again
request by request, so one caller's bad request fails that caller alone.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from ray import serve

from memgraft.config import Settings
from memgraft.models.llm.base import LLM, ChatRequest, Completion
from serving.isolate import per_caller, unwrap
from serving.settings import Batching

LLMFactory = Callable[[Settings], LLM]
CONCURRENT_BATCHES = 2


@serve.deployment(name="llm")
class LLMDeployment:
    def __init__(self, settings: Settings, batching: Batching, llm_factory: LLMFactory | None = None):
        if llm_factory is None:
            from memgraft.models.llm.factory import load_llm as llm_factory
        self.llm = llm_factory(settings)
        batching.configure(self._generate_batch)

    def info(self) -> dict:
        return {"name": self.llm.name, "context_tokens": getattr(self.llm, "context_tokens", None)}

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        try:
            return [unwrap(c) for c in await asyncio.gather(*(self._generate_batch(r) for r in requests))]
        except asyncio.CancelledError:  # the caller is gone (disconnected, timed out): stop decoding its rows
            for r in requests:
                r.deadline = 0.0
            raise

    # Two batches at once: a short call decodes beside a long one instead of queueing behind it for minutes.
    @serve.batch(max_batch_size=4, batch_wait_timeout_s=0.02, max_concurrent_batches=CONCURRENT_BATCHES)
    async def _generate_batch(self, requests: list[ChatRequest]) -> list[Completion]:
        return await per_caller(self._generate_joint, requests)

    async def _generate_joint(self, requests: list[ChatRequest]) -> list[Completion]:
        return await asyncio.to_thread(self.llm.generate, requests)
