"""One shared LLM engine for many concurrent questions, as a Ray actor.

Questions run in worker actors and each sends its LLM requests here; the
engine gathers requests that arrive close together (up to ``llm_batch_size``,
waiting at most ``batch_wait_ms``) and decodes them as one batch, so questions
batch with each other. A caller that times out cancels its call, and the
engine drops that call's requests before they are decoded. Used for the in-process backends (transformers,
vLLM); an OpenAI-compatible server already batches, so workers call it
directly.
"""

from __future__ import annotations

import asyncio
from typing import Sequence

import ray

from memgraft.config import Settings
from memgraft.models.llm import load_llm
from memgraft.models.llm.base import LLM, ChatRequest, Completion


@ray.remote
class LLMEngine:
    def __init__(self, settings: Settings, batch_wait_ms: float = 20.0, llm: LLM | None = None):
        self.llm = llm if llm is not None else load_llm(settings)
        self.batch_size = max(1, settings.models.llm_batch_size)
        self.wait_s = batch_wait_ms / 1000
        self.queue: asyncio.Queue | None = None
        self.loop_task: asyncio.Task | None = None
        self.batches = 0
        self.requests = 0

    def name(self) -> str:
        return self.llm.name

    def stats(self) -> dict[str, float]:
        return {"batches": self.batches, "requests": self.requests,
                "mean_batch": self.requests / self.batches if self.batches else 0.0}

    async def close(self) -> None:
        """Stop the batching loop (an actor killed with it running prints "Task was destroyed")."""
        if self.loop_task is not None:
            self.loop_task.cancel()

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if self.queue is None:
            self.queue = asyncio.Queue()
            self.loop_task = asyncio.get_running_loop().create_task(self._loop())
        futures = []
        for r in requests:
            fut = asyncio.get_running_loop().create_future()
            await self.queue.put((r, fut))
            futures.append(fut)
        return list(await asyncio.gather(*futures))

    async def _loop(self) -> None:
        assert self.queue is not None
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            deadline = loop.time() + self.wait_s
            while len(batch) < self.batch_size:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self.queue.get(), timeout))
                except asyncio.TimeoutError:
                    break
            batch = [(r, fut) for r, fut in batch if not fut.done()]  # drop what a timed-out caller cancelled
            if not batch:
                continue
            self.batches += 1
            self.requests += len(batch)
            try:
                outs = await loop.run_in_executor(None, self.llm.generate, [r for r, _ in batch])
                for (_, fut), out in zip(batch, outs):
                    if not fut.done():  # its caller may have given up while the batch ran
                        fut.set_result(out)
            except Exception as err:  # every waiting question hears what went wrong
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)


class EngineClient:
    """The :class:`~memgraft.models.llm.base.LLM` protocol over an engine actor (picklable)."""

    def __init__(self, handle: "ray.actor.ActorHandle", name: str, timeout_s: float | None = None):
        self.handle = handle
        self.name = name
        self.timeout_s = timeout_s

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        ref = self.handle.generate.remote(list(requests))
        try:
            return ray.get(ref, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            # Cancel the call so the engine drops the requests it has not started decoding
            # (a batch already decoding runs to its end; its answers for us are discarded).
            ray.cancel(ref)
            raise TimeoutError(f"the LLM engine did not answer {len(requests)} request(s) within "
                               f"models.llm_timeout_s={self.timeout_s} s; they were cancelled") from None
