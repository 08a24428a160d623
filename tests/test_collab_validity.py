"""HiCoMER's validity scorer: its features, its pairwise loss, training on gold pairs, and its file."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
import torch

from memgraft.collab.data.generator import generate
from memgraft.collab.types import Memory
from memgraft.collab.retrieve.validity import (
    ValidityPairs,
    ValidityScorer,
    build_pairs,
    load_scorer,
    normalised_time,
    pair_accuracy,
    pairwise_loss,
    save_scorer,
    train_step,
    train_validity,
    validity_features,
)
from memgraft.config import HiCoMERSettings
from tests.collab_banks import bank_from_gold

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)


def memory(mid: str, typ: str, maintained_at: datetime) -> Memory:
    return Memory(memory_id=mid, team="t", group_id="g", type=typ, author="a", original="x", maintained="x",
                  time=T0, relation=None, action=None, valid=True, maintained_at=maintained_at)


def test_normalised_time_is_the_share_of_the_timeline_clipped():
    now = T0 + timedelta(days=10)
    assert normalised_time(T0, T0, now) == 0.0
    assert normalised_time(T0 + timedelta(days=4), T0, now) == pytest.approx(0.4)
    assert normalised_time(now, T0, now) == 1.0
    assert normalised_time(T0 + timedelta(days=12), T0, now) == 1.0  # maintained after the as-of time: clipped
    assert normalised_time(T0 - timedelta(days=1), T0, now) == 0.0
    assert normalised_time(T0, T0, T0) == 1.0  # a one-group timeline: everything is as new as it gets
    naive = datetime(2025, 1, 11, 9, 0)  # naive times are UTC, as everywhere in the bank
    assert normalised_time(naive, T0, now) == pytest.approx(0.5)


def test_features_and_forward_shapes():
    ms = [memory("a", "team", T0 + timedelta(days=5)), memory("b", "individual", T0)]
    is_team, norm = validity_features(ms, T0, T0 + timedelta(days=10))
    assert is_team.tolist() == [1, 0] and is_team.dtype == torch.long
    assert norm.tolist() == pytest.approx([0.5, 0.0])
    scorer = ValidityScorer(16, hidden=8, type_dim=4)
    out = scorer(torch.randn(2, 16), torch.randn(2, 16), is_team, norm)
    assert out.shape == (2,)
    s = ValidityScorer.from_settings(16, HiCoMERSettings(validity_hidden=32, validity_type_dim=3))
    assert (s.config.hidden, s.config.type_dim, s.mlp[0].in_features) == (32, 3, 2 * 16 + 3 + 1)


def test_pairwise_loss_by_hand():
    s_pos, s_neg = torch.tensor([2.0, 0.0, -1.0]), torch.tensor([0.0, 1.0, -1.0])
    by_hand = [-math.log(math.exp(p) / (math.exp(p) + math.exp(n))) for p, n in zip(s_pos.tolist(), s_neg.tolist())]
    assert pairwise_loss(s_pos, s_neg).item() == pytest.approx(sum(by_hand) / 3, abs=1e-6)
    assert pairwise_loss(s_pos, s_neg).item() == pytest.approx((0.126928 + 1.313262 + math.log(2)) / 3, abs=1e-5)
    # no overflow far from zero
    assert pairwise_loss(torch.tensor([1000.0]), torch.tensor([-1000.0])).item() == 0.0
    assert pairwise_loss(torch.tensor([-1000.0]), torch.tensor([1000.0])).item() == pytest.approx(2000.0)


def random_pairs(n: int, dim: int, seed: int) -> ValidityPairs:
    g = torch.Generator().manual_seed(seed)
    unit = lambda: torch.nn.functional.normalize(torch.randn(n, dim, generator=g), dim=-1)  # noqa: E731
    return ValidityPairs(h_q=unit(), pos_h=unit(), pos_type=torch.randint(0, 2, (n,), generator=g),
                         pos_time=torch.rand(n, generator=g), neg_h=unit(), neg_type=torch.randint(0, 2, (n,), generator=g),
                         neg_time=torch.rand(n, generator=g), question_ids=[f"q{i}" for i in range(n)],
                         neg_kinds=["outdated"] * n)


def test_one_training_step_lowers_the_loss_on_its_batch():
    torch.manual_seed(0)
    scorer = ValidityScorer(32, hidden=16, type_dim=4, dropout=0.0)
    batch = random_pairs(16, 32, seed=1)
    before = pairwise_loss(*batch.scores(scorer)).item()
    returned = train_step(scorer, torch.optim.SGD(scorer.parameters(), lr=0.1), batch)
    after = pairwise_loss(*batch.scores(scorer)).item()
    assert returned == pytest.approx(before, abs=1e-6)  # the loss of the batch the step was taken on
    assert after < before


def test_save_and_load_round_trip(tmp_path):
    torch.manual_seed(3)
    scorer = ValidityScorer(24, hidden=10, type_dim=2, dropout=0.2)
    path = save_scorer(scorer, tmp_path / "scorer" / "validity.pt")
    loaded = load_scorer(path)
    assert loaded.config == scorer.config and not loaded.training
    batch = random_pairs(5, 24, seed=4)
    assert torch.equal(torch.stack(batch.scores(loaded)), torch.stack(batch.scores(scorer)))
    (tmp_path / "other.pt").write_bytes(b"")
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a saved validity scorer"):
        load_scorer(tmp_path / "other.pt")


@pytest.fixture(scope="module")
def gold_bank(embedder, tmp_path_factory):
    data = generate(seed=1, teams=4, groups=14, questions_per_type=3)
    bank = bank_from_gold(data, tmp_path_factory.mktemp("validity") / "bank.sqlite", embedder)
    yield data, bank
    bank.close()


def test_pairs_hold_valid_gold_against_invalid_memories_as_of_the_question(gold_bank, embedder):
    data, bank = gold_bank
    pairs = build_pairs(bank, data.questions, embedder, negatives_per_positive=2, seed=0)
    assert len(pairs) > 100 and pairs.h_q.shape == pairs.pos_h.shape == pairs.neg_h.shape == (len(pairs), embedder.dim)
    assert set(pairs.neg_kinds) == {"outdated", "neighbour"}
    asked = {q["id"]: q for q in data.questions}
    assert set(pairs.question_ids) <= set(asked)
    assert ((pairs.pos_time >= 0) & (pairs.pos_time <= 1) & (pairs.neg_time >= 0) & (pairs.neg_time <= 1)).all()
    # every positive is a gold-valid memory as of its question: 2 rows per positive
    per_question = {qid: pairs.question_ids.count(qid) for qid in set(pairs.question_ids)}
    assert all(n == 2 * len(asked[qid]["valid"]) for qid, n in per_question.items())
    again = build_pairs(bank, data.questions, embedder, negatives_per_positive=2, seed=0)
    assert torch.equal(again.neg_h, pairs.neg_h)  # seeded


def test_training_on_gold_pairs_ranks_held_out_questions_better(gold_bank, embedder):
    data, bank = gold_bank
    train_q = [q for i, q in enumerate(data.questions) if i % 3]
    held_q = [q for i, q in enumerate(data.questions) if i % 3 == 0]
    train, held = build_pairs(bank, train_q, embedder, seed=0), build_pairs(bank, held_q, embedder, seed=1)
    assert not set(train.question_ids) & set(held.question_ids)
    torch.manual_seed(0)
    scorer = ValidityScorer.from_settings(embedder.dim, HiCoMERSettings())
    before = pair_accuracy(scorer, held)
    losses = train_validity(scorer, train, epochs=30, lr=1e-3, batch_size=64, seed=0)
    after = pair_accuracy(scorer, held)
    print(f"held-out pair accuracy {before:.3f} -> {after:.3f} ({len(train)} train / {len(held)} held-out pairs); "
          f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    assert len(losses) == 30 and losses[-1] < losses[0] / 2
    assert after > before and after >= 0.9
