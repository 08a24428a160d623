"""HiCoMER's validity score S_val: a small MLP that says whether a memory still holds for a query.

Dense and semantic scores cannot tell a stale memory from a valid one: "the
release branch is release/2.3" is as similar to the question after the team
moved to 2.4 as before. The scorer sees what can: the maintained text's vector
(a revised memory's text says it was superseded), its interaction with the
query, whether it is a team or an individual memory, and how recently it was
maintained relative to the query's time. It is trained pairwise on gold
questions (a valid memory must outscore an outdated, conflicting or
similar-but-invalid one), so its logit only has to order memories, not be a
calibrated probability; the retriever adds ``λ·log σ(S_val)`` to S_sem.

Everything here is plain torch on the CPU. ``train_step`` is the unit a
distributed trainer (Ray Train, a later issue) wraps; ``train_validity`` is the
single-process loop over it.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from memgraft.collab.bank import BankError, MemoryBank
from memgraft.collab.types import Memory, MemoryQuestion, as_utc
from memgraft.config import HiCoMERSettings
from memgraft.models.embedder import Embedder

TYPE_INDEX = {"individual": 0, "team": 1}
FORMAT = "memgraft.validity-scorer/1"


# -- features ---------------------------------------------------------------------------------


def normalised_time(maintained_at: datetime, t0: datetime, t_now: datetime) -> float:
    """Where a memory's last maintenance falls in its team's timeline, in [0, 1].

    ``(maintained_at - t0) / (t_now - t0)`` clipped to [0, 1], where ``t0`` is the
    team's first group time and ``t_now`` the query time (its as-of time, or the
    team's latest group time). 1 means "maintained as late as the query"; a
    timeline with no length (``t_now <= t0``: one group so far) gives 1.0, since
    everything in it is as recent as it can be. Used by training, retrieval and
    the resolver's priority alike, so the scorer sees at search time exactly the
    feature it was trained on.
    """
    span = (as_utc(t_now) - as_utc(t0)).total_seconds()
    if span <= 0:
        return 1.0
    x = (as_utc(maintained_at) - as_utc(t0)).total_seconds() / span
    return min(1.0, max(0.0, x))


def validity_features(memories: Sequence[Memory], t0: datetime, t_now: datetime) -> tuple[Tensor, Tensor]:
    """The scorer's two non-vector inputs for a batch: type index (LongTensor) and normalised time."""
    is_team = torch.tensor([TYPE_INDEX[m.type] for m in memories], dtype=torch.long)
    norm = torch.tensor([normalised_time(m.maintained_at, t0, t_now) for m in memories], dtype=torch.float32)
    return is_team, norm


# -- model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScorerConfig:
    """Everything needed to rebuild a scorer before loading its weights."""

    dim: int
    hidden: int = 128
    type_dim: int = 8
    dropout: float = 0.1

    @classmethod
    def from_settings(cls, dim: int, settings: HiCoMERSettings) -> "ScorerConfig":
        return cls(dim=dim, hidden=settings.validity_hidden, type_dim=settings.validity_type_dim,
                   dropout=settings.validity_dropout)


class ValidityScorer(nn.Module):
    """MLP over [h_m; h_q ⊙ h_m; type embedding; normalised maintenance time] -> one logit."""

    def __init__(self, dim: int, *, hidden: int = 128, type_dim: int = 8, dropout: float = 0.1):
        super().__init__()
        self.config = ScorerConfig(dim=dim, hidden=hidden, type_dim=type_dim, dropout=dropout)
        self.type_embedding = nn.Embedding(len(TYPE_INDEX), type_dim)
        self.mlp = nn.Sequential(
            nn.Linear(2 * dim + type_dim + 1, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )

    @classmethod
    def from_settings(cls, dim: int, settings: HiCoMERSettings) -> "ValidityScorer":
        return cls(**asdict(ScorerConfig.from_settings(dim, settings)))

    @property
    def dim(self) -> int:
        return self.config.dim

    def forward(self, h_q: Tensor, h_m: Tensor, is_team: Tensor, norm_time: Tensor) -> Tensor:
        """``h_q``, ``h_m``: [B, d]; ``is_team``: [B] long (0 individual, 1 team); ``norm_time``: [B]. -> [B]."""
        x = torch.cat([h_m, h_q * h_m, self.type_embedding(is_team), norm_time.unsqueeze(-1).to(h_m.dtype)], dim=-1)
        return self.mlp(x).squeeze(-1)

    @torch.no_grad()
    def score(self, h_q: Tensor, h_m: Tensor, is_team: Tensor, norm_time: Tensor) -> Tensor:
        """Inference: eval mode (no dropout), no graph; the training mode is restored after."""
        was = self.training
        self.eval()
        try:
            return self(h_q, h_m, is_team, norm_time)
        finally:
            self.train(was)


class StateValidity:
    """S_val read from the maintained state: the updater's validity flag as a fixed log-odds.

    The default when no trained scorer is configured (``hicomer.validity_scorer: state``).
    Why: the updater has already judged every memory against what came after it; a
    search that ignores that verdict is flat retrieval over maintained texts (issue 11:
    with S_final = S_sem the maintained bank ranked no better than doing nothing). A valid
    memory gets ``+margin`` (log σ ≈ 0: its S_sem stands), an outdated one ``-margin``
    (log σ ≈ -margin: with λ = 1 and the cosine scale of 5 it sinks below every valid
    candidate, since cosines span at most 2 × 5). A trained MLP (:class:`ValidityScorer`)
    replaces it where one is given.
    """

    from_state = True
    dim = None  # reads no vectors: fits any embedder

    def __init__(self, margin: float = 12.0):
        self.margin = float(margin)

    def eval(self) -> "StateValidity":
        return self

    def score_memories(self, memories: Sequence[Memory]) -> Tensor:
        return torch.tensor([self.margin if m.valid else -self.margin for m in memories], dtype=torch.float32)


def make_validity(spec: str, margin: float = 12.0) -> "ValidityScorer | StateValidity | None":
    """The S_val a setting names: ``state`` (the maintained flag), ``none`` (S_final = S_sem), or a saved scorer."""
    if spec == "state":
        return StateValidity(margin)
    if spec in ("none", ""):
        return None
    return load_scorer(spec)


def pairwise_loss(s_pos: Tensor, s_neg: Tensor) -> Tensor:
    """Mean of −log(e^{s+} / (e^{s+} + e^{s−})), computed as softplus(s− − s+) (no overflow)."""
    return F.softplus(s_neg - s_pos).mean()


# -- training pairs -----------------------------------------------------------------------------


@dataclass
class ValidityPairs:
    """One row per (query, m+, m−): the tensors both sides of the pairwise loss need.

    ``question_ids`` names the question of each row (to split by question, never by
    row, so a held-out question's memories are never seen in training).
    """

    h_q: Tensor  # [P, d]
    pos_h: Tensor  # [P, d]
    pos_type: Tensor  # [P] long
    pos_time: Tensor  # [P]
    neg_h: Tensor  # [P, d]
    neg_type: Tensor  # [P] long
    neg_time: Tensor  # [P]
    question_ids: list[str]
    neg_kinds: list[str]  # "outdated" (gold) or "neighbour" (dense neighbour invalid then)

    def __len__(self) -> int:
        return len(self.question_ids)

    def subset(self, index: Sequence[int] | Tensor) -> "ValidityPairs":
        idx = torch.as_tensor(index, dtype=torch.long)
        rows = idx.tolist()
        tensors = {f.name: getattr(self, f.name)[idx] for f in fields(self) if f.name not in ("question_ids", "neg_kinds")}
        return ValidityPairs(**tensors, question_ids=[self.question_ids[i] for i in rows],
                             neg_kinds=[self.neg_kinds[i] for i in rows])

    def scores(self, scorer: ValidityScorer, *, train: bool = False) -> tuple[Tensor, Tensor]:
        """(s+, s−) for every row; with ``train`` through the autograd graph in the scorer's current mode."""
        if train:
            return (scorer(self.h_q, self.pos_h, self.pos_type, self.pos_time),
                    scorer(self.h_q, self.neg_h, self.neg_type, self.neg_time))
        return (scorer.score(self.h_q, self.pos_h, self.pos_type, self.pos_time),
                scorer.score(self.h_q, self.neg_h, self.neg_type, self.neg_time))


def _question(row: MemoryQuestion | Mapping[str, Any]) -> MemoryQuestion:
    return row if isinstance(row, MemoryQuestion) else MemoryQuestion.model_validate(dict(row))


def _span(bank: MemoryBank, q: MemoryQuestion) -> tuple[datetime, datetime] | None:
    try:
        return bank.time_span(q.team, q.time)
    except BankError:  # a team the bank does not hold
        return None


def build_pairs(bank: MemoryBank, questions: Iterable[MemoryQuestion | Mapping[str, Any]], embedder: Embedder, *,
                negatives_per_positive: int = 2, neighbours: int = 30, seed: int = 0) -> ValidityPairs:
    """Pairs from gold memory questions, every memory as the bank held it at the question's time.

    m+ is each gold ``valid`` memory of a question. m− is drawn (``negatives_per_positive``
    per m+, seeded, without replacement while the pool lasts) from: the question's gold
    ``outdated`` memories (outdated, or conflicting and revised, by then), and its dense
    top-``neighbours`` in the bank as of the question time that the bank marks invalid
    then and gold does not list as valid (similar but invalid). Questions with no
    ``valid`` memory or an empty pool give no rows.

    Maintained texts are taken as of the question's time (a memory revised after it had
    another text then) and embedded by ``embedder`` in one batch, after one batch of the
    questions; the query time for normalised time is the question's time, or the team's
    latest group time, as in retrieval.
    """
    rng = random.Random(f"validity-pairs:{seed}")
    asked = [(q, span) for q in map(_question, questions) if q.valid for span in [_span(bank, q)] if span]
    q_texts = list(dict.fromkeys(q.question for q, _ in asked))
    q_vec = dict(zip(q_texts, np.asarray(embedder.encode(q_texts), dtype=np.float32))) if q_texts else {}

    plans: list[tuple[MemoryQuestion, datetime, datetime, list[Memory], list[tuple[Memory, str]]]] = []
    for q, (t0, t_now) in asked:
        gold_ids = list(dict.fromkeys([*q.valid, *(q.outdated or [])]))  # type: ignore[misc]
        state = {m.memory_id: m for m in bank.memories(q.team, as_of=t_now, ids=gold_ids)}
        positives = [state[i] for i in q.valid if i in state]  # type: ignore[union-attr]
        pool: dict[str, tuple[Memory, str]] = {i: (state[i], "outdated") for i in (q.outdated or []) if i in state}
        for m, _ in bank.search(q.team, q_vec[q.question], neighbours, as_of=t_now):
            if not m.valid and m.memory_id not in q.valid and m.memory_id not in pool:  # type: ignore[operator]
                pool[m.memory_id] = (m, "neighbour")
        if positives and pool:
            plans.append((q, t0, t_now, positives, list(pool.values())))

    m_texts = list(dict.fromkeys(m.maintained for *_, pos, pool in plans for m in [*pos, *(p for p, _ in pool)]))
    m_vec = dict(zip(m_texts, np.asarray(embedder.encode(m_texts), dtype=np.float32))) if m_texts else {}

    rows: list[tuple[MemoryQuestion, Memory, Memory, str, datetime, datetime]] = []
    for q, t0, t_now, positives, pool in plans:
        for pos in positives:
            picks = rng.sample(pool, min(negatives_per_positive, len(pool)))
            picks += [rng.choice(pool) for _ in range(negatives_per_positive - len(picks))]  # small pool: repeats
            rows += [(q, pos, neg, kind, t0, t_now) for neg, kind in picks]
    if not rows:
        d = int(embedder.dim)
        z, zl = torch.zeros(0, d), torch.zeros(0, dtype=torch.long)
        return ValidityPairs(z, z, zl, torch.zeros(0), z, zl, torch.zeros(0), [], [])

    def side(i: int) -> tuple[Tensor, Tensor, Tensor]:
        mems: list[Memory] = [r[i] for r in rows]  # type: ignore[misc]
        h = torch.from_numpy(np.stack([m_vec[m.maintained] for m in mems]))
        is_team = torch.tensor([TYPE_INDEX[m.type] for m in mems], dtype=torch.long)
        t = torch.tensor([normalised_time(m.maintained_at, r[4], r[5]) for m, r in zip(mems, rows)])
        return h, is_team, t

    pos_h, pos_type, pos_time = side(1)
    neg_h, neg_type, neg_time = side(2)
    return ValidityPairs(h_q=torch.from_numpy(np.stack([q_vec[r[0].question] for r in rows])), pos_h=pos_h,
                         pos_type=pos_type, pos_time=pos_time, neg_h=neg_h, neg_type=neg_type, neg_time=neg_time,
                         question_ids=[r[0].id for r in rows], neg_kinds=[r[3] for r in rows])


# -- training -----------------------------------------------------------------------------------


def train_step(scorer: ValidityScorer, optimizer: torch.optim.Optimizer, batch: ValidityPairs) -> float:
    """One optimiser step on one batch of pairs; returns the batch's loss before the step."""
    scorer.train()
    optimizer.zero_grad()
    loss = pairwise_loss(*batch.scores(scorer, train=True))
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def batches(pairs: ValidityPairs, batch_size: int, generator: torch.Generator) -> Iterator[ValidityPairs]:
    order = torch.randperm(len(pairs), generator=generator)
    for i in range(0, len(pairs), batch_size):
        yield pairs.subset(order[i:i + batch_size])


def train_validity(scorer: ValidityScorer, pairs: ValidityPairs, *, epochs: int = 30, lr: float = 1e-3,
                   batch_size: int = 64, seed: int = 0) -> list[float]:
    """Adam over shuffled mini-batches; returns each epoch's mean batch loss (seeded shuffles)."""
    if len(pairs) == 0:
        raise ValueError("no validity pairs to train on")
    optimizer = torch.optim.Adam(scorer.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # dropout masks
    history = []
    for _ in range(epochs):
        losses = [(train_step(scorer, optimizer, b), len(b)) for b in batches(pairs, batch_size, generator)]
        history.append(sum(l * n for l, n in losses) / len(pairs))
    scorer.eval()
    return history


def pair_accuracy(scorer: ValidityScorer, pairs: ValidityPairs) -> float:
    """Share of pairs the scorer orders right (s+ > s−); ties count as wrong."""
    if len(pairs) == 0:
        return float("nan")
    s_pos, s_neg = pairs.scores(scorer)
    return float((s_pos > s_neg).float().mean())


# -- files ------------------------------------------------------------------------------------


def save_scorer(scorer: ValidityScorer, path: str | Path) -> Path:
    """Config and weights in one ``torch.save`` file (loaded with ``weights_only=True``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": FORMAT, "config": asdict(scorer.config), "state_dict": scorer.state_dict()}, path)
    return path


def load_scorer(path: str | Path) -> ValidityScorer:
    blob = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise ValueError(f"{path} is not a saved validity scorer ({FORMAT})")
    scorer = ValidityScorer(**blob["config"])
    scorer.load_state_dict(blob["state_dict"])
    scorer.eval()
    return scorer
