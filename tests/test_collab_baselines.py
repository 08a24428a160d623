"""HiCoMER's baselines and the gold replay the evaluation harness builds on (real bundled embedder)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memgraft.collab.bank import MemoryBank
from memgraft.collab.evaluate.baselines import (DenseRetriever, HybridRetriever, RecencyRetriever, RelevanceRecencyImportance,
                                       RerankRetriever, tokens)
from memgraft.collab.data.generator import generate
from memgraft.collab.evaluate.harness import build_bank, retrieval_scores, split_teams, updater_scores
from memgraft.collab.types import MemoryGroup, MemoryQuestion
from memgraft.models.reranker import CosineReranker

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)


def group(i: int, *memories: tuple[str, str]) -> MemoryGroup:
    return MemoryGroup(team="lab", group_id=f"g{i}", time=T0 + timedelta(days=i), memories=[
        {"memory_id": f"g{i}-m{j}", "type": kind, "author": "ana", "content": text}
        for j, (kind, text) in enumerate(memories)])


@pytest.fixture()
def bank(tmp_path, embedder):
    b = MemoryBank(tmp_path / "bank.sqlite", embedder)
    b.apply_group(group(0, ("team", "Protocol: every member uses qPCR as the primary assay."),
                        ("individual", "Log: restocked the pipette tips in room 4.")))
    b.apply_group(group(1, ("individual", "Observation: the centrifuge in room 2 makes a rattling noise."),
                        ("individual", "Log: calibrated the plate reader.")))
    b.apply_group(group(2, ("team", "Protocol change: the primary assay is now Western blot."),
                        ("individual", "Log: ordered more agarose gel.")))
    yield b
    b.close()


def ids(ranked):
    return [r.memory.memory_id for r in ranked]


def test_dense_ranks_the_assay_memories_first_and_respects_as_of(bank):
    got = ids(DenseRetriever(bank).retrieve("lab", "Which primary assay does the team use?", 2))
    assert set(got) == {"g0-m0", "g2-m0"}
    early = ids(DenseRetriever(bank).retrieve("lab", "Which primary assay does the team use?", 6, T0 + timedelta(hours=1)))
    assert set(early) == {"g0-m0", "g0-m1"}  # nothing written later is visible as of day 0


def test_hybrid_fuses_bm25_and_dense(bank):
    got = ids(HybridRetriever(bank).retrieve("lab", "centrifuge rattling", 3))
    assert got[0] == "g1-m0"
    assert tokens("Western-blot, qPCR's 2.5") == ["western", "blot", "qpcr's", "2.5"]


def test_rerank_reorders_dense_candidates(bank, embedder):
    r = RerankRetriever(bank, CosineReranker(embedder), top_n=6)
    got = r.retrieve("lab", "plate reader calibration", 2)
    assert got[0].memory.memory_id == "g1-m1" and got[0].score >= got[1].score


def test_rerank_reorders_the_hybrid_candidates_not_only_the_dense_ones(bank, embedder):
    q = "2"  # BM25 finds "room 2"; dense alone ranks another memory first
    hybrid, dense = ids(HybridRetriever(bank, depth=1).retrieve("lab", q, 1)), ids(DenseRetriever(bank).retrieve("lab", q, 1))
    assert hybrid == ["g1-m0"] and dense != hybrid  # the case that tells the two apart
    assert ids(RerankRetriever(bank, CosineReranker(embedder), top_n=1).retrieve("lab", q, 1)) == hybrid


def test_recency_window_sees_only_the_last_groups(bank):
    got = ids(RecencyRetriever(bank, window=1).retrieve("lab", "Which primary assay does the team use?", 5))
    assert set(got) == {"g2-m0", "g2-m1"}


def test_relevance_recency_importance_prefers_the_newer_team_memory(bank):
    got = RelevanceRecencyImportance(bank).retrieve("lab", "Which primary assay does the team use?", 3)
    assert got[0].memory.memory_id == "g2-m0"  # as relevant as g0-m0, newer, and a team memory


def test_gold_replay_reproduces_the_generator_labels(tmp_path, embedder, settings):
    data = generate(seed=3, teams=2, groups=6)
    bank, info = build_bank(tmp_path / "gold.sqlite", data, embedder, "gold", settings)
    try:
        scores = updater_scores(bank, data.gold)
        assert scores["decided"] == len(data.gold)
        assert scores["maintenance_accuracy"] == 1.0 and scores["conflict_f1"] == 1.0
        final = {m["memory_id"]: m for m in data.memories}
        for team in bank.teams():
            for m in bank.memories(team):
                assert m.maintained == final[m.memory_id]["maintained"]
                assert m.valid == (final[m.memory_id]["outdated_at"] is None)
    finally:
        bank.close()
    raw, _ = build_bank(tmp_path / "raw.sqlite", data, embedder, "raw", settings)
    try:
        assert updater_scores(raw, data.gold)["decided"] == 0
        assert all(m.valid and m.maintained == m.original for t in raw.teams() for m in raw.memories(t))
    finally:
        raw.close()


def test_split_and_retrieval_scores():
    qs = [MemoryQuestion(id=f"q{i}", team=f"t{i % 4}", question="?") for i in range(8)]
    train, test = split_teams(qs, 0.5, seed=0)
    assert len(train) == len(test) == 2 and not train & test
    assert split_teams(qs[:1], 0.5, 0)[0] == split_teams(qs[:1], 0.5, 0)[1] == {"t0"}
    q = MemoryQuestion(id="q", team="t", question="?", valid=["a", "b"], outdated=["x"])
    s = retrieval_scores(["x", "a", "c"], q, team_ids={"a"}, k=10)
    assert s["orr@5"] == pytest.approx(1 / 3) and s["crr@5"] == 1.0
    assert s["ndcg@10"] == pytest.approx((1 / 1.5849625) / (1 + 1 / 1.5849625))
