"""Banks for the HiCoMER tests: a generated dataset applied with its gold decisions (an oracle updater)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memgraft.collab.bank import MemoryBank
from memgraft.collab.data import Dataset
from memgraft.collab.evaluate.harness import build_bank
from memgraft.config import Settings


class PrecomputedEmbedder:
    """The real embedder's vectors for a known set of texts, encoded in one batch up front.

    A bank embeds each group and each revision as it is applied; with the real model
    that is a hundred small encode calls. Same name, dim and vectors as ``embedder``
    (texts it was not given fall through to it), so the bank is the one the model builds.
    """

    def __init__(self, embedder, texts):
        self.embedder, self.name, self.dim = embedder, embedder.name, embedder.dim
        unique = list(dict.fromkeys(texts))
        self.vectors = dict(zip(unique, embedder.encode(unique)))

    def encode(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.embedder.encode(missing)))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def bank_from_gold(data: Dataset, path: str | Path, embedder) -> MemoryBank:
    """The harness's gold replay (``evaluate.build_bank(..., "gold")``), with every text embedded in one batch."""
    texts = [m["content"] for g in data.groups for m in g["memories"]] + [d["maintained"] for d in data.gold]
    bank, _ = build_bank(Path(path), data, PrecomputedEmbedder(embedder, texts), "gold", Settings())
    return bank
