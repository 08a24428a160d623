"""The baselines HiCoMER is compared with: retrieval strategies over one team's memories.

Each strategy ranks a team's memories for a question as of a time and returns the top
``k`` as :class:`Ranked` (memory plus the score it was ranked by), so the evaluation
harness scores every method by the same metrics. They read the bank only; which bank
(one without maintenance, or one an updater maintained) is the method's choice.

* ``DenseRetriever``: flat dense RAG, cosine of the question to the maintained text.
* ``HybridRetriever``: BM25 (``bm25s``) and dense, fused by reciprocal rank.
* ``RerankRetriever``: dense top-N, reordered by the reranker backend.
* ``RecencyRetriever``: only the newest memories (a window of the last groups), by relevance.
* ``RelevanceRecencyImportance``: the generative-agents score: relevance + recency decay +
  importance. Importance here is the memory's kind (team memories are authoritative),
  not an LLM rating, so the baseline stays deterministic and cheap; that is our choice.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, Sequence

import bm25s
import numpy as np

from memgraft.collab.bank import MemoryBank
from memgraft.collab.types import Memory
from memgraft.models.reranker import Reranker

_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
RRF_K = 60  # the usual reciprocal-rank-fusion constant


@dataclass
class Ranked:
    memory: Memory
    score: float


class MemoryRetriever(Protocol):
    """Ranks one team's memories for a question, as the bank stood at ``as_of`` (None: now)."""

    name: str

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]: ...


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _top(memories: Sequence[Memory], scores: np.ndarray, k: int) -> list[Ranked]:
    order = np.argsort(-scores, kind="stable")[:k]
    return [Ranked(memories[i], float(scores[i])) for i in order]


class DenseRetriever:
    name = "dense"

    def __init__(self, bank: MemoryBank):
        self.bank = bank

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        return [Ranked(m, s) for m, s in self.bank.search(team, question, k, as_of=as_of)]


class HybridRetriever:
    """BM25 over the maintained texts plus dense, fused by reciprocal rank (each list's top ``depth``)."""

    name = "hybrid"

    def __init__(self, bank: MemoryBank, depth: int = 30):
        self.bank, self.depth = bank, depth

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        memories = self.bank.memories(team, as_of=as_of)
        if not memories:
            return []
        index = bm25s.BM25()
        index.index([tokens(m.maintained) for m in memories], show_progress=False)
        q = tokens(question)
        fused: dict[str, float] = {}
        if q:
            n = min(self.depth, len(memories))
            docs, scores = index.retrieve([q], k=n, show_progress=False)
            for rank, (i, s) in enumerate(zip(docs[0], scores[0])):
                if s > 0:  # BM25 gives 0 to a memory sharing no word with the question: no vote
                    fused[memories[int(i)].memory_id] = 1.0 / (RRF_K + rank + 1)
        for rank, (m, _) in enumerate(self.bank.search(team, question, self.depth, as_of=as_of)):
            fused[m.memory_id] = fused.get(m.memory_id, 0.0) + 1.0 / (RRF_K + rank + 1)
        by_id = {m.memory_id: m for m in memories}
        best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
        return [Ranked(by_id[i], s) for i, s in best]


class RerankRetriever:
    """The hybrid (BM25 + dense) top-N, reordered by the reranker (a cross-encoder, or the cosine fallback):
    the paper's Rerank RAG reranks the hybrid candidates."""

    def __init__(self, bank: MemoryBank, reranker: Reranker, top_n: int = 30):
        self.bank, self.reranker, self.top_n = bank, reranker, top_n
        self.hybrid = HybridRetriever(bank, depth=top_n)
        self.name = "rerank"

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        candidates = [r.memory for r in self.hybrid.retrieve(team, question, self.top_n, as_of=as_of)]
        if not candidates:
            return []
        return _top(candidates, np.asarray(self.reranker.score(question, [m.maintained for m in candidates])), k)


class RecencyRetriever:
    """Only memories from the team's last ``window`` groups (as of the question), ranked by dense relevance."""

    name = "recency"

    def __init__(self, bank: MemoryBank, window: int = 3):
        self.bank, self.window = bank, window

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        memories = self.bank.memories(team, as_of=as_of)
        times = sorted({m.time for m in memories})[-self.window:]
        if not times:
            return []
        hits = self.bank.search(team, question, len(memories), as_of=as_of)
        return [Ranked(m, s) for m, s in hits if m.time >= times[0]][:k]


class RelevanceRecencyImportance:
    """score = w_rel·cosine + w_rec·decay^(hours since written) + w_imp·importance (team 1, individual 0.5)."""

    name = "relevance+recency+importance"

    def __init__(self, bank: MemoryBank, *, decay_per_hour: float = 0.995,
                 weights: tuple[float, float, float] = (1.0, 1.0, 1.0), top_n: int = 100):
        self.bank = bank
        self.decay, self.weights, self.top_n = decay_per_hour, weights, top_n

    def retrieve(self, team: str, question: str, k: int, as_of: datetime | None = None) -> list[Ranked]:
        hits = self.bank.search(team, question, self.top_n, as_of=as_of)
        if not hits:
            return []
        memories = [m for m, _ in hits]
        now = as_of or max(m.time for m in memories)
        relevance = np.array([s for _, s in hits])
        hours = np.array([max((now - m.time).total_seconds() / 3600, 0.0) for m in memories])
        recency = np.power(self.decay, hours)
        importance = np.array([1.0 if m.type == "team" else 0.5 for m in memories])
        w_rel, w_rec, w_imp = self.weights
        return _top(memories, w_rel * _minmax(relevance) + w_rec * _minmax(recency) + w_imp * importance, k)


def _minmax(x: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] per question, as the generative-agents score does, so no term dominates by units."""
    lo, hi = float(x.min()), float(x.max())
    return np.zeros_like(x) if math.isclose(lo, hi) else (x - lo) / (hi - lo)
