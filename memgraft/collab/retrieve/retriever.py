"""HiCoMER's validity-aware retrieval: dense candidates, semantic rerank, validity score.

S_final = S_sem + λ·log σ(S_val). The validity term is a log-probability, so it
never raises a memory the reranker thinks irrelevant (it is ≤ 0) but sinks a
relevant memory the scorer believes stale by up to ``-λ·|S_val|``. S_val is a trained
scorer's (:class:`ValidityScorer`) or, by default, the maintained state's
(:class:`StateValidity`: the updater's validity flag as fixed log-odds). Without either
S_final is S_sem: the "HiCoMER without the validity score" baseline.

One search is one query encode (the query vector is what the bank searches with),
one bank search of top-N, one reranker call over the N maintained texts and one
scorer forward over the N candidates.

``semantic_from_dense`` (opt-in, bi-encoder rerankers only): the cosine fallback's
S_sem is the cosine between the query and what the maintained text says (its outdated
label set aside, as the bank's vectors are) under the bank's own embedder, which the dense search has just computed against the stored vector of
that very text. Taking it from there skips re-encoding the N texts, most of a
search's time on a CPU (``bench/collab_search.py``); the two differ only by the
encoder's batch-padding noise. ``hicomer.semantic_from_dense`` turns it on (the
local profile does); it never applies to a cross-encoder.

A cosine S_sem is scaled by ``hicomer.cosine_semantic_scale`` so it spans about as
much as a cross-encoder's logit and the paper's λ keeps its meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import torch
from torch.nn import functional as F

from memgraft.collab.bank import BankError, MemoryBank
from memgraft.collab.data import unmarked
from memgraft.collab.types import Memory
from memgraft.collab.retrieve.validity import StateValidity, ValidityScorer, validity_features
from memgraft.config import HiCoMERSettings
from memgraft.models.embedder import Embedder
from memgraft.models.reranker import Reranker


@dataclass
class Hit:
    """One retrieved memory with every score that ranked it (``validity`` is None without a scorer)."""

    memory: Memory
    dense: float
    semantic: float
    validity: float | None
    score: float


class ValidityRetriever:
    """Searches one team's bank the HiCoMER way; each call is independent (safe to share across threads)."""

    def __init__(self, bank: MemoryBank, embedder: Embedder, reranker: Reranker,
                 scorer: ValidityScorer | StateValidity | None,
                 settings: HiCoMERSettings, *, semantic_from_dense: bool | None = None):
        if scorer is not None and scorer.dim is not None and scorer.dim != int(embedder.dim):
            raise ValueError(f"validity scorer takes {scorer.dim}-dim vectors, the embedder "
                             f"{embedder.name!r} gives {embedder.dim}")
        if (bank.embedder_name, bank.dim) != (embedder.name, int(embedder.dim)):
            raise ValueError(f"bank {bank.path} stores {bank.embedder_name!r} vectors ({bank.dim} dims); "
                             f"queries embedded by {embedder.name!r} ({embedder.dim} dims) would not compare")
        if semantic_from_dense is None:  # the setting, where it can apply
            semantic_from_dense = settings.semantic_from_dense and not reranker.is_cross_encoder
        if semantic_from_dense and reranker.is_cross_encoder:
            raise ValueError(f"semantic_from_dense reuses bi-encoder cosines; {reranker.name!r} is a cross-encoder")
        self.bank, self.embedder, self.reranker, self.scorer = bank, embedder, reranker, scorer
        self.settings = settings
        self.semantic_from_dense = semantic_from_dense
        if scorer is not None:
            scorer.eval()

    @property
    def reranker_name(self) -> str:
        """Where S_sem comes from, e.g. the cosine fallback's self-description when no cross-encoder ships."""
        return self.reranker.name + (" via the dense search's stored vectors" if self.semantic_from_dense else "")

    @property
    def uses_validity(self) -> bool:
        return self.scorer is not None

    def search(self, team: str, question: str, k: int = 10, as_of: datetime | None = None) -> list[Hit]:
        """Top-k by S_final among the dense top-max(k, ``candidate_top_n``), as the bank stood at ``as_of`` (or now).

        Ties keep the dense order. The normalised maintenance time is measured against
        ``as_of``, or the team's latest group time for a live search.
        """
        if k <= 0:
            return []
        try:
            t0, t_now = self.bank.time_span(team, as_of)
        except BankError:  # a team the bank does not hold
            return []
        q = np.asarray(self.embedder.encode([question]), dtype=np.float32)[0]
        n = max(k, self.settings.candidate_top_n)
        candidates = self.bank.search(team, q, n, as_of=as_of)
        if not candidates:
            return []
        memories = [m for m, _ in candidates]
        if self.semantic_from_dense:
            semantic = np.array([s for _, s in candidates], dtype=np.float64)
        else:
            # a bi-encoder scores what a memory says, as the bank's vectors do (an outdated label set aside:
            # ``collab.data.unmarked``); a cross-encoder reads the label too
            texts = [m.maintained if self.reranker.is_cross_encoder else unmarked(m.maintained) for m in memories]
            semantic = np.asarray(self.reranker.score(question, texts), dtype=np.float64)
        if not self.reranker.is_cross_encoder:
            semantic = semantic * self.settings.cosine_semantic_scale
        final = semantic.copy()
        validity: list[float | None] = [None] * len(memories)
        if self.scorer is not None:
            s_val = self._validity(q, memories, t0, t_now)
            final = semantic + self.settings.validity_lambda * F.logsigmoid(s_val).double().numpy()
            validity = [float(v) for v in s_val]
        order = sorted(range(len(memories)), key=lambda i: -final[i])  # stable: ties keep dense order
        return [Hit(memory=memories[i], dense=float(candidates[i][1]), semantic=float(semantic[i]),
                    validity=validity[i], score=float(final[i])) for i in order[:k]]

    def _validity(self, q: np.ndarray, memories: list[Memory], t0: datetime, t_now: datetime) -> torch.Tensor:
        """S_val of every candidate in one forward; h_m is the vector the bank scored the hit with."""
        assert self.scorer is not None
        if isinstance(self.scorer, StateValidity):
            return self.scorer.score_memories(memories)
        h_m = torch.from_numpy(np.stack([m.embedding for m in memories]).astype(np.float32, copy=False))
        h_q = torch.from_numpy(q).unsqueeze(0).expand_as(h_m)
        is_team, norm = validity_features(memories, t0, t_now)
        return self.scorer.score(h_q, h_m, is_team, norm)
