"""BatchingEmbedder: concurrent callers share model calls and each gets exactly its own vectors."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memgraft.models.batching import BatchingEmbedder
from tests.doubles import HashEmbedder
from tests.waiting import DEADLINE_S, wait_until


class GatedHashEmbedder(HashEmbedder):
    """The first model call holds the model until ``gate`` is set, so that every other caller queues behind it."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()

    def encode(self, texts):
        assert self.gate.wait(DEADLINE_S)
        return super().encode(texts)


def test_concurrent_calls_are_coalesced_and_answered_exactly():
    inner = GatedHashEmbedder()
    batcher = BatchingEmbedder(inner, max_texts=16)
    texts = [[f"question {i} about river {i % 7}"] * (1 + i % 3) for i in range(60)]
    texts[5] = list(texts[4])  # two callers with identical texts stay two callers
    with ThreadPoolExecutor(len(texts)) as pool:
        futures = [pool.submit(batcher.encode, t) for t in texts]
        wait_until(lambda: len(batcher._queue) == len(texts) - 1, "59 callers queued behind the first")
        inner.gate.set()
        got = [f.result() for f in futures]
    reference = HashEmbedder()
    for mine, vectors in zip(texts, got):
        assert np.array_equal(vectors, reference.encode(mine))
    assert batcher.model_calls == len(inner.calls) < len(texts)  # callers shared model calls
    assert max(len(c) for c in inner.calls) <= 16  # max_texts bounds a call
    assert sum(len(c) for c in inner.calls) == sum(len(t) for t in texts)  # each text encoded once


def test_a_lone_call_is_not_delayed_and_empty_input_skips_the_model():
    inner = HashEmbedder()
    batcher = BatchingEmbedder(inner)
    assert batcher.encode([]).shape == (0, 64) and inner.calls == []
    assert np.array_equal(batcher.encode(["one"]), inner.encode(["one"]))
    assert batcher.name == "hash-64" and batcher.dim == 64


def test_a_model_error_reaches_every_caller_in_the_batch_and_the_next_call_works():
    class Failing(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.gate = threading.Event()
            self.fail = True

        def encode(self, texts):
            assert self.gate.wait(DEADLINE_S)
            if self.fail:
                raise RuntimeError("model broke")
            return super().encode(texts)

    inner = Failing()
    batcher = BatchingEmbedder(inner)
    errors = []

    def call(text):
        try:
            batcher.encode([text])
        except RuntimeError as err:
            errors.append(str(err))

    threads = [threading.Thread(target=call, args=(f"t{i}",)) for i in range(5)]
    for t in threads:
        t.start()
    wait_until(lambda: len(batcher._queue) == 4, "4 callers queued behind the first")
    inner.gate.set()
    for t in threads:
        t.join(DEADLINE_S)
    assert errors == ["model broke"] * 5
    assert batcher.model_calls == 2  # the first alone, then the 4 queued ones in one call
    inner.fail = False
    assert batcher.encode(["fine"]).shape == (1, 64)


def test_the_real_embedder_gives_the_same_vectors_batched(embedder):
    batcher = BatchingEmbedder(embedder)
    queries = ["Who founded the Hanseatic League?", "Where is the river Elbe?", "When did Lübeck join?"]
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda q: batcher.encode([q])[0], queries))
    for q, v in zip(queries, got):
        assert float(v @ embedder.encode([q])[0]) == pytest.approx(1.0, abs=1e-2)  # bf16: padding moves the last digits
