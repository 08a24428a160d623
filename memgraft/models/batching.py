"""Coalesce concurrent ``encode`` calls from many threads into one model call.

A driver worker answers dozens of questions at once in threads, and each asks
for one short query embedding at a time. One text per forward pass costs the
model's fixed overhead every time (about 5 ms for MiniLM on one CPU thread,
against under 2 ms per text in a batch of 16), so calls that arrive while the
model is busy are queued and encoded together by the next caller to find it
free. Nothing waits on a timer: a lone call runs at once, as it would unwrapped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from memgraft.models.embedder import Embedder


def split_by_sizes(rows: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Rows computed for several callers' inputs at once, back to each caller: ``sizes[i]`` rows for caller i."""
    return np.split(rows, np.cumsum(sizes)[:-1])


@dataclass(eq=False)  # queued calls are told apart by identity, never by their texts
class _Call:
    texts: list[str]
    vectors: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass
class BatchingEmbedder:
    """An :class:`Embedder` that many threads may share; same vectors as ``inner``, fewer model calls.

    ``max_texts`` bounds one model call (a caller's own texts are never split).
    """

    inner: Embedder
    max_texts: int = 64
    model_calls: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _queue: list[_Call] = field(default_factory=list, repr=False)
    _busy: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __getattr__(self, attr: str):  # max_seq_length, dtype, ...: the inner model's
        if attr.startswith("_") or attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        call = _Call(list(texts))
        if not call.texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._cond:
            self._queue.append(call)
            while self._busy and not call.done:
                self._cond.wait()
            if call.done:
                return self._result(call)
            # The model is free and this call is still queued: encode the queue, this call first.
            self._busy = True
            self._queue.remove(call)
            batch, n = [call], len(call.texts)
            while self._queue and n + len(self._queue[0].texts) <= self.max_texts:
                batch.append(self._queue.pop(0))
                n += len(batch[-1].texts)
        try:
            vectors = self.inner.encode([t for c in batch for t in c.texts])
            error = None
        except BaseException as err:  # every caller in the batch sees the model's error
            vectors, error = None, err
        with self._cond:
            parts = split_by_sizes(vectors, [len(c.texts) for c in batch]) if error is None else [None] * len(batch)
            for c, part in zip(batch, parts):
                c.vectors, c.error, c.done = part, error, True
            self.model_calls += 1
            self._busy = False
            self._cond.notify_all()
        return self._result(call)

    @staticmethod
    def _result(call: _Call) -> np.ndarray:
        if call.error is not None:
            raise call.error
        assert call.vectors is not None
        return call.vectors
