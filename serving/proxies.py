"""The library's model protocols over Serve deployment handles.

``GraphStore``, HGMem's methods and ``CollabMemory`` take an ``LLM``, an
``Embedder``, a ``Reranker`` and a validity scorer; in the ingress these objects
forward each call to a model deployment, so the library stays the only place
the methods live and the models stay in their own (batched, separately scaled)
replicas. Calls block until the answer comes back: they are made from worker
threads (the ingress runs library code through ``asyncio.to_thread``), never on
the replica's event loop.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from memgraft.models.llm.base import ChatRequest, Completion
from serving.budget import checkpoint


class _Proxy:
    def __init__(self, handle: Any, timeout_s: float | None):
        self.handle, self.timeout_s = handle, timeout_s

    def _call(self, method: str, *args: Any) -> Any:
        return getattr(self.handle, method).remote(*args).result(timeout_s=self.timeout_s)


class LLMProxy(_Proxy):
    """``LLM``: a batch of chat requests, decoded by the LLM deployment (which batches across callers)."""

    def __init__(self, handle: Any, name: str, timeout_s: float | None = None, context_tokens: int | None = None):
        super().__init__(handle, timeout_s)
        self.name, self.context_tokens = name, context_tokens

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        # The deployment stops decoding when this call gives up waiting, instead of generating for nobody.
        deadline = None if self.timeout_s is None else time.time() + self.timeout_s
        sent = [r if r.deadline is not None or deadline is None else replace(r, deadline=deadline) for r in requests]
        return list(self._call("generate", sent))


class EmbedderProxy(_Proxy):
    """``Embedder``: same name and dimension as the deployment's model, so banks and graphs accept it."""

    def __init__(self, handle: Any, name: str, dim: int, timeout_s: float | None = None):
        super().__init__(handle, timeout_s)
        self.name, self.dim = name, dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._call("encode", list(texts)), dtype=np.float32)


class RerankerProxy(_Proxy):
    """``Reranker``: a cross-encoder, or the cosine fallback, which keeps its self-describing name."""

    def __init__(self, handle: Any, name: str, is_cross_encoder: bool, timeout_s: float | None = None):
        super().__init__(handle, timeout_s)
        self.name, self.is_cross_encoder = name, is_cross_encoder

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self._call("score", query, list(texts)), dtype=np.float32)


class ScorerProxy(_Proxy):
    """The validity scorer's inference surface (``dim``, ``eval``, ``score``) as the retriever uses it."""

    def __init__(self, handle: Any, dim: int, source: str, timeout_s: float | None = None):
        super().__init__(handle, timeout_s)
        self.dim, self.source = dim, source

    def eval(self) -> "ScorerProxy":  # the deployment's scorer is always in eval mode
        return self

    def score(self, h_q: Any, h_m: Any, is_team: Any, norm_time: Any) -> Any:
        import torch

        arrays = [np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t)
                  for t in (h_q, h_m, is_team, norm_time)]
        return torch.from_numpy(np.asarray(self._call("score", *arrays), dtype=np.float32))


class PairEncoderProxy(_Proxy):
    """The pair judge's second opinion (``PairEncoder.probabilities``) on the embedder deployment, batched
    across every ingress's writes, so the ingress runs no cross-encoder of its own."""

    def __init__(self, handle: Any, timeout_s: float | None = None):
        super().__init__(handle, timeout_s)

    def probabilities(self, a: Sequence[str], b: Sequence[str], batch_size: int = 64) -> np.ndarray:
        if not len(a):
            return np.zeros((0, 3), dtype=np.float32)
        checkpoint()  # a step of a write's plan: past its budget, stop before asking
        return np.asarray(self._call("pair_probabilities", list(a), list(b)), dtype=np.float32)
