"""HiCoMER's validity-aware retriever: S_final by hand, the no-validity baseline, as-of search, batching."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
import torch

from memgraft.collab.bank import MemoryBank
from memgraft.collab.data import unmarked
from memgraft.collab.retrieve.retriever import Hit, ValidityRetriever
from memgraft.collab.types import MemoryGroup
from memgraft.collab.retrieve.validity import ValidityScorer
from memgraft.config import HiCoMERSettings
from memgraft.models.reranker import CosineReranker

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)
QUESTION = "What incubation temperature does the team use?"


def group(gid: str, when: datetime, *memories: tuple[str, str, str]) -> MemoryGroup:
    return MemoryGroup(team="lab", group_id=gid, time=when, memories=[
        {"memory_id": mid, "type": typ, "author": "lead" if typ == "team" else "ana", "content": text}
        for mid, typ, text in memories])


@pytest.fixture(scope="module")
def bank(embedder, tmp_path_factory):
    """Day 0: 37 °C decided and followed; day 1: changed to 30 °C, the old two revised; day 2: a log on 30 °C."""
    b = MemoryBank(tmp_path_factory.mktemp("retriever") / "bank.sqlite", embedder)
    b.apply_group(group("g0", T0, ("m1", "team", "Team decision: the incubation temperature is 37 °C from now on."),
                        ("m2", "individual", "Log: today's experiment used 37 °C as the incubation temperature."),
                        ("m3", "individual", "Observation: freezer 3 was defrosted and restocked.")))
    g1 = group("g1", T0 + DAY, ("m4", "team", "Team decision: from today the incubation temperature is 30 °C "
                                                "instead of 37 °C."))
    with b.group_transaction(g1) as tx:
        tx.add_memories()
        for mid in ("m1", "m2"):
            old = tx.memory(mid).maintained
            tx.decide(mid, level="inter", relation="contradiction", action="revise", decided_by="test",
                      after=f"[Outdated since 2025-01-07: the temperature is 30 °C] {old}", valid_after=False)
    b.apply_group(group("g2", T0 + 2 * DAY,
                        ("m5", "individual", "Log: today's experiment used 30 °C as the incubation temperature.")))
    yield b
    b.close()


def fixed_scorer(dim: int) -> ValidityScorer:
    """S_val = GELU(2·[team] + NormTime) − 1: ignores the vectors, so it can be computed by hand."""
    s = ValidityScorer(dim, hidden=1, type_dim=1, dropout=0.0)
    with torch.no_grad():
        s.type_embedding.weight.copy_(torch.tensor([[0.0], [1.0]]))  # individual 0, team 1
        first, last = s.mlp[0], s.mlp[3]
        first.weight.zero_()
        first.weight[0, 2 * dim] = 2.0  # the type embedding's one unit
        first.weight[0, 2 * dim + 1] = 1.0  # normalised time
        first.bias.zero_()
        last.weight.fill_(1.0)
        last.bias.fill_(-1.0)
    return s


def s_val_by_hand(is_team: bool, norm_time: float) -> float:
    x = 2.0 * is_team + norm_time
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2))) - 1.0


def log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x))


class Counting:
    """Counts calls to a wrapped object's method, passing everything else through."""

    def __init__(self, inner, method: str):
        self.inner, self.method, self.calls = inner, method, []

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if name != self.method:
            return attr

        def counted(*args, **kwargs):
            self.calls.append(args)
            return attr(*args, **kwargs)
        return counted


def test_final_score_is_semantic_plus_lambda_log_sigmoid_validity(bank, embedder):
    reranker = CosineReranker(embedder)
    settings = HiCoMERSettings(candidate_top_n=30, validity_lambda=2.0, cosine_semantic_scale=3.0)
    hits = ValidityRetriever(bank, embedder, reranker, fixed_scorer(embedder.dim), settings).search("lab", QUESTION, k=5)
    assert [type(h) for h in hits] == [Hit] * 5
    # the live query time is the team's latest group (day 2); maintained at: m1, m2, m4 day 1; m3 day 0; m5 day 2
    norm = {"m1": 0.5, "m2": 0.5, "m3": 0.0, "m4": 0.5, "m5": 1.0}
    semantic = dict(zip([h.memory.memory_id for h in hits],  # a cosine S_sem is scaled to a logit's span; a
                        # bi-encoder scores what a memory says, its outdated label set aside (as the bank's vectors)
                        (3.0 * reranker.score(QUESTION, [unmarked(h.memory.maintained) for h in hits])).tolist()))
    for h in hits:
        m = h.memory
        v = s_val_by_hand(m.type == "team", norm[m.memory_id])
        assert h.validity == pytest.approx(v, abs=1e-5)
        assert h.semantic == pytest.approx(semantic[m.memory_id], abs=1e-5)
        assert h.score == pytest.approx(semantic[m.memory_id] + 2.0 * log_sigmoid(v), abs=1e-5)
        assert h.dense == pytest.approx(float(m.embedding @ embedder.encode([QUESTION])[0]), abs=1e-3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.memory.memory_id for h in hits} == set(norm)


def test_without_a_scorer_the_order_is_the_rerankers(bank, embedder):
    reranker = CosineReranker(embedder)
    hits = ValidityRetriever(bank, embedder, reranker, None, HiCoMERSettings()).search("lab", QUESTION, k=5)
    assert all(h.validity is None and h.score == h.semantic for h in hits)
    assert [h.semantic for h in hits] == sorted((h.semantic for h in hits), reverse=True)
    # lambda 0 with a scorer: the same order and scores (the scorer still runs and is reported)
    zero = ValidityRetriever(bank, embedder, reranker, fixed_scorer(embedder.dim),
                             HiCoMERSettings(validity_lambda=0.0)).search("lab", QUESTION, k=5)
    assert [h.memory.memory_id for h in zero] == [h.memory.memory_id for h in hits]
    assert all(h.validity is not None and h.score == pytest.approx(h.semantic) for h in zero)


def test_validity_reorders_what_the_reranker_alone_ranks(bank, embedder):
    """A scorer that trusts team memories lifts them over individual ones the reranker prefers."""
    reranker, asked = CosineReranker(embedder), "What did today's experiment use as the incubation temperature?"
    plain = ValidityRetriever(bank, embedder, reranker, None, HiCoMERSettings()).search("lab", asked, k=5)
    aware = ValidityRetriever(bank, embedder, reranker, fixed_scorer(embedder.dim),
                              HiCoMERSettings(validity_lambda=10.0)).search("lab", asked, k=5)
    assert plain[0].memory.type == "individual"
    assert {h.memory.type for h in aware[:2]} == {"team"}


def test_as_of_search_sees_the_bank_as_it_stood(bank, embedder):
    retriever = ValidityRetriever(bank, embedder, CosineReranker(embedder), fixed_scorer(embedder.dim),
                                  HiCoMERSettings(validity_lambda=1.0))
    when = T0 + timedelta(hours=12)  # after day 0, before the change
    hits = retriever.search("lab", QUESTION, k=10, as_of=when)
    by_id = {h.memory.memory_id: h for h in hits}
    assert set(by_id) == {"m1", "m2", "m3"}  # later memories do not exist yet
    assert by_id["m1"].memory.valid and by_id["m1"].memory.maintained.startswith("Team decision: the incubation")
    # query time = as_of: every memory was maintained at the team's first time, NormTime 0
    assert by_id["m1"].validity == pytest.approx(s_val_by_hand(True, 0.0), abs=1e-5)
    assert by_id["m2"].validity == pytest.approx(s_val_by_hand(False, 0.0), abs=1e-5)
    live = {h.memory.memory_id: h for h in retriever.search("lab", QUESTION, k=10)}
    assert not live["m1"].memory.valid and live["m1"].memory.maintained.startswith("[Outdated since")
    assert live["m1"].validity == pytest.approx(s_val_by_hand(True, 0.5), abs=1e-5)
    # as of day 1 + 12 h: m1 maintained on day 1, timeline day 0 .. day 1.5
    mid = {h.memory.memory_id: h for h in retriever.search("lab", QUESTION, k=10, as_of=T0 + 1.5 * DAY)}
    assert set(mid) == {"m1", "m2", "m3", "m4"}
    assert mid["m4"].validity == pytest.approx(s_val_by_hand(True, 1 / 1.5), abs=1e-5)


def test_one_encode_one_rerank_one_forward_and_the_reranker_named(bank, embedder):
    counted_embedder = Counting(embedder, "encode")
    reranker = Counting(CosineReranker(embedder), "score")
    scorer = fixed_scorer(embedder.dim)
    forwards = []
    scorer.register_forward_hook(lambda module, args, out: forwards.append(args[0].shape[0]))
    retriever = ValidityRetriever(bank, counted_embedder, reranker, scorer, HiCoMERSettings(candidate_top_n=4))
    hits = retriever.search("lab", QUESTION, k=2)
    assert len(hits) == 2
    assert [len(a[0]) for a in counted_embedder.calls] == [1]  # the question, once
    assert len(reranker.calls) == 1 and len(reranker.calls[0][1]) == 4  # one call over the top-N maintained texts
    assert forwards == [4]
    assert retriever.reranker_name == CosineReranker(embedder).name
    assert "cosine" in retriever.reranker_name and "no cross-encoder" in retriever.reranker_name


def test_semantic_from_dense_reuses_the_bank_cosines_without_reranking(bank, embedder):
    reranker = Counting(CosineReranker(embedder), "score")
    settings = HiCoMERSettings(validity_lambda=1.0)
    fast = ValidityRetriever(bank, embedder, reranker, fixed_scorer(embedder.dim), settings, semantic_from_dense=True)
    hits = fast.search("lab", QUESTION, k=5)
    assert reranker.calls == []
    assert all(h.semantic == pytest.approx(settings.cosine_semantic_scale * h.dense) for h in hits)
    assert fast.reranker_name.endswith("via the dense search's stored vectors")
    slow = {h.memory.memory_id: h for h in ValidityRetriever(bank, embedder, reranker, fixed_scorer(embedder.dim),
                                                              settings).search("lab", QUESTION, k=5)}
    for h in hits:  # the same cosine up to the encoder's batch noise (bf16 in the local profile)
        assert h.semantic == pytest.approx(slow[h.memory.memory_id].semantic, abs=0.1)  # 0.02 in cosine

    class CrossEncoder:
        name, is_cross_encoder = "a cross-encoder", True
    with pytest.raises(ValueError, match="is a cross-encoder"):
        ValidityRetriever(bank, embedder, CrossEncoder(), None, settings, semantic_from_dense=True)
    on = HiCoMERSettings(semantic_from_dense=True)  # the setting: on for the cosine fallback, ignored for a cross-encoder
    assert ValidityRetriever(bank, embedder, reranker, None, on).semantic_from_dense
    assert not ValidityRetriever(bank, embedder, CrossEncoder(), None, on).semantic_from_dense


def test_unknown_team_and_mismatched_models(bank, embedder):
    retriever = ValidityRetriever(bank, embedder, CosineReranker(embedder), None, HiCoMERSettings())
    assert retriever.search("nobody", QUESTION) == [] and retriever.search("lab", QUESTION, k=0) == []
    with pytest.raises(ValueError, match="scorer takes 8-dim"):
        ValidityRetriever(bank, embedder, CosineReranker(embedder), ValidityScorer(8), HiCoMERSettings())

    class Other:
        name, dim = "another-model", embedder.dim
    with pytest.raises(ValueError, match="would not compare"):
        ValidityRetriever(bank, Other(), CosineReranker(embedder), None, HiCoMERSettings())
