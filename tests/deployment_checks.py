"""Checks of the model deployments' classes outside Serve, each run in its own interpreter by test_serve_bounds.

``python -m tests.deployment_checks llm|pairs`` prints ``ok <check>`` or fails with an assertion. Called outside
a Serve replica, a ``@serve.batch`` method binds its class-level queue to this process (an event loop, weak
references), after which ``serve.run`` cannot pickle the class: a test process that goes on to run the served
application must not call them, so these run apart.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import numpy as np
import ray.serve.batching as batching

from memgraft.config import load_settings
from memgraft.models.llm.base import ChatRequest, Completion
from serving.settings import Batching

# The queue reads the replica's max_ongoing_requests to log a warning, which needs a running Serve replica.
batching._BatchQueue._warn_if_max_batch_size_exceeds_max_ongoing_requests = lambda self: None


def llm() -> None:
    """Team A's long call holds one batch, team B's short call gets another; a cancelled caller's rows get a
    deadline of now."""
    from serving.llm import LLMDeployment

    release = threading.Event()

    class Held:
        name = "held"

        def generate(self, requests):
            for r in requests:
                while "long" in r.messages[0]["content"] and not release.is_set() and (
                        r.deadline is None or time.time() < r.deadline):
                    time.sleep(0.005)  # a decoding step; the real backend checks the deadline between tokens
            return [Completion("done", 1, 1) for _ in requests]

    deployment = LLMDeployment.func_or_class(load_settings("local"), Batching(max_batch_size=4,
                                                                              batch_wait_timeout_s=0.001),
                                             llm_factory=lambda _s: Held())

    def ask(text: str) -> ChatRequest:
        return ChatRequest([{"role": "user", "content": text}])

    async def run():
        long = asyncio.create_task(deployment.generate([ask("a long task")]))
        await asyncio.sleep(0.05)  # A's batch is decoding
        short = await asyncio.wait_for(deployment.generate([ask("Hi")]), 30)  # one batch at a time: times out
        a_still_held = not long.done()
        cancelled = ask("another long task")
        gone = asyncio.create_task(deployment.generate([cancelled]))
        await asyncio.sleep(0.05)
        gone.cancel()
        await asyncio.sleep(0.01)
        release.set()
        return short, a_still_held, cancelled.deadline, await long

    try:
        short, a_still_held, deadline, long = asyncio.run(run())
    finally:
        release.set()
    assert [c.text for c in short] == ["done"] and a_still_held
    assert deadline == 0.0 and [c.text for c in long] == ["done"]


def pairs() -> None:
    """The embedder deployment's pair_probabilities: two callers in one batch, each its own rows, as the encoder."""
    from memgraft.collab.maintain.pair_encoder import inference_dtype, load_pair_encoder
    from serving.embedder import EmbedderDeployment

    settings = load_settings("local")
    deployment = EmbedderDeployment.func_or_class(settings, Batching(max_batch_size=8, batch_wait_timeout_s=0.001))
    a = ["The primary assay is qPCR.", "Samples are stored at -80 C.", "The lead is Ana."]
    b = ["We use ELISA as the primary assay.", "Samples are kept at -20 C.", "The budget is 3,000 EUR."]

    async def run():
        return await asyncio.gather(deployment.pair_probabilities(a[:2], b[:2]),
                                    deployment.pair_probabilities(a[2:], b[2:]))

    first, second = asyncio.run(run())
    h = settings.hicomer
    encoder = load_pair_encoder(h.judge_encoder, inference_dtype(h.judge_encoder_dtype, settings.cache_path))
    expected = encoder.probabilities(a, b)
    assert first.shape == (2, 3) and second.shape == (1, 3)
    assert np.allclose(np.vstack([first, second]), expected, atol=1e-5)


if __name__ == "__main__":
    check = sys.argv[1]
    {"llm": llm, "pairs": pairs}[check]()
    print(f"ok {check}")
