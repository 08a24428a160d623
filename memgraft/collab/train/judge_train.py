"""Training the pair judge: plain torch on the CPU, one function a Ray Train worker calls.

Cross-entropy over (neutral, compatible, contradiction), both orders of every pair,
classes weighted by inverse frequency (neutral pairs outnumber contradictions about 3:1
on the real conversions, and a missed contradiction leaves a stale memory valid).
Seconds per epoch on 2 cores: the inputs are the bank's embedding vectors plus the judge's
word-level features, never an encoder pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from memgraft.collab.maintain.features import pair_features
from memgraft.collab.maintain.judge import LABELS, PairJudge
from memgraft.collab.train.judge_data import Pair, encode_pairs, symmetric


@dataclass
class JudgeData:
    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)


def featurise(pairs: Sequence[Pair], embedder) -> JudgeData:
    u, v = encode_pairs(pairs, embedder)
    return JudgeData(pair_features([p.a for p in pairs], [p.b for p in pairs], u, v),
                     torch.tensor([p.label for p in pairs], dtype=torch.long))


def training_data(pairs: Sequence[Pair], embedder) -> JudgeData:
    return featurise(symmetric(pairs), embedder)


def train_judge(judge: PairJudge, data: JudgeData, *, epochs: int = 30, lr: float = 1e-3, batch_size: int = 128,
                weight_decay: float = 5e-2, seed: int = 0) -> list[float]:
    """Fit in place; returns the mean loss per epoch."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    counts = torch.bincount(data.y, minlength=len(LABELS)).float().clamp(min=1.0)
    weight = counts.sum() / (len(LABELS) * counts)
    opt = torch.optim.AdamW(judge.parameters(), lr=lr, weight_decay=weight_decay)
    losses: list[float] = []
    judge.train()
    for _ in range(epochs):
        order = torch.randperm(len(data), generator=gen)
        total, n = 0.0, 0
        for i in range(0, len(order), batch_size):
            idx = order[i:i + batch_size]
            loss = nn.functional.cross_entropy(judge(data.x[idx]), data.y[idx], weight=weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            n += len(idx)
        losses.append(total / max(1, n))
    judge.eval()
    return losses


def pair_scores(judge: PairJudge, data: JudgeData, threshold: float = 0.5,
                probabilities: np.ndarray | None = None) -> dict[str, float]:
    """Pair-level accuracy and contradiction precision/recall/F1 (the policy's threshold rule), of the
    judge's own ``probabilities`` when given (e.g. blended with the pair encoder's)."""
    if not len(data):
        return {"pairs": 0}
    p = judge.probabilities(data.x) if probabilities is None else probabilities
    pred = np.where(p[:, 2] >= threshold, 2, np.where(p[:, 1] > p[:, 0], 1, 0))
    y = data.y.numpy()
    tp = int(((pred == 2) & (y == 2)).sum())
    fp = int(((pred == 2) & (y != 2)).sum())
    fn = int(((pred != 2) & (y == 2)).sum())
    prec, rec = tp / max(1, tp + fp), tp / max(1, tp + fn)
    return {"pairs": int(len(y)), "accuracy": float((pred == y).mean()), "precision": prec, "recall": rec,
            "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}
