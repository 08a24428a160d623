"""HiCoMER metrics on cases small enough to compute by hand (the arithmetic is in comments)."""

from __future__ import annotations

import math

import pytest

from memgraft.collab.evaluate import metrics as M


# -- Conflict F1 ------------------------------------------------------------------------------


def test_conflict_f1_counts_contradiction_as_positive():
    gold = {"a": "contradiction", "b": "contradiction", "c": "neutral", "d": "compatible"}
    pred = {"a": "contradiction", "b": "neutral", "c": "contradiction", "d": "compatible", "zz": "contradiction"}
    out = M.conflict_f1(pred, gold)
    # TP = a, FP = c, FN = b ("zz" has no gold label and is ignored) -> P = R = F1 = 1/2
    assert out["precision"] == pytest.approx(0.5)
    assert out["recall"] == pytest.approx(0.5)
    assert out["f1"] == pytest.approx(0.5)
    # per relation: contradiction 1/2; neutral TP 0 (FP b, FN c) -> 0; compatible 1 -> macro 1/2
    assert out["macro_f1"] == pytest.approx(0.5)
    assert out["n"] == 4


def test_conflict_f1_missing_prediction_is_a_miss_and_empty_is_zero():
    out = M.conflict_f1({}, {"a": "contradiction", "b": "neutral"})
    assert (out["precision"], out["recall"], out["f1"]) == (0.0, 0.0, 0.0)
    assert out["macro_f1"] == 0.0  # contradiction and neutral both F1 0
    perfect = M.conflict_f1({"a": "contradiction", "b": "neutral"}, {"a": "contradiction", "b": "neutral"})
    assert perfect["f1"] == 1.0 and perfect["macro_f1"] == 1.0
    assert M.conflict_f1({}, {})["f1"] == 0.0


# -- Maintenance Accuracy ---------------------------------------------------------------------


def test_maintenance_accuracy_checks_action_and_revised_state():
    gold = {
        "a": {"action": "revise", "valid": False},
        "b": {"action": "keep", "valid": True},
        "c": {"action": "revise", "valid": False},
        "d": {"action": "keep", "valid": True},
        "e": {"action": "keep", "valid": True},
    }
    pred = {
        "a": {"action": "revise", "valid": False},  # right
        "b": {"action": "keep", "valid": False},  # right: keep does not check validity
        "c": {"action": "revise", "valid": True},  # wrong: revised but left valid
        "d": {"action": "revise", "valid": False},  # wrong action
        # e: missing -> wrong
    }
    assert M.maintenance_accuracy(pred, gold) == pytest.approx(2 / 5)
    assert M.maintenance_correct(None, gold["a"]) is False
    assert M.maintenance_accuracy({}, {}) == 0.0


def test_maintenance_accuracy_needs_relation_and_action_and_reads_unjudged_as_neutral_keep():
    gold = {"a": {"relation": "contradiction", "action": "keep", "valid": True},
            "b": {"relation": "neutral", "action": "keep", "valid": True},
            "c": {"relation": "compatible", "action": "keep", "valid": True}}
    pred = {"a": {"relation": "compatible", "action": "keep", "valid": True}}  # right action, wrong relation
    assert M.maintenance_accuracy(pred, gold) == 0.0
    # b and c were never judged: leaving b alone is its neutral/keep, c needed "compatible"
    assert M.maintenance_accuracy(pred, gold, unjudged={"relation": "neutral", "action": "keep"}) == pytest.approx(1 / 3)


# -- retrieval --------------------------------------------------------------------------------


def test_orr_at_5():
    retrieved = ["m1", "m2", "m3", "m4", "m5", "m6"]
    outdated = {"m2", "m4", "m6"}
    assert M.orr_at_k(retrieved, outdated) == pytest.approx(2 / 5)  # m6 is rank 6, not counted
    assert M.orr_at_k(["m2", "m1"], outdated) == pytest.approx(1 / 2)  # over what was returned
    assert M.orr_at_k([], outdated) == 0.0


def test_crr_at_5():
    retrieved = ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert M.crr_at_k(retrieved, ["m1", "m6", "m9"]) == pytest.approx(1 / 3)
    assert M.crr_at_k(retrieved, ["m1", "m5"]) == 1.0
    assert M.crr_at_k(retrieved, []) is None


def test_ndcg_at_10_binary():
    relevant = {"a", "b", "c"}
    # DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3) + 1/log2(4)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 0.5)
    assert M.ndcg_at_k(["x", "a", "y", "b"], relevant) == pytest.approx(expected)
    assert expected == pytest.approx(0.49819, abs=1e-5)
    assert M.ndcg_at_k(["a", "b", "c", "x"], relevant) == pytest.approx(1.0)
    assert M.ndcg_at_k(["a", "a", "a"], {"a", "b"}) == pytest.approx(1 / (1 + 1 / math.log2(3)))  # once
    assert M.ndcg_at_k(["x"] * 10 + ["a"], relevant) == 0.0  # rank 11 is past the cut
    assert M.ndcg_at_k(["a"], set()) is None


def test_mean_defined_skips_undefined():
    assert M.mean_defined([0.5, None, 1.0]) == (0.75, 2)
    value, n = M.mean_defined([None])
    assert math.isnan(value) and n == 0


# -- answers ----------------------------------------------------------------------------------


def test_rouge_l_lin_examples():
    ref = "police killed the gunman"
    assert M.rouge_l("police kill the gunman", ref) == pytest.approx(3 / 4)  # LCS police the gunman
    assert M.rouge_l("the gunman kill police", ref) == pytest.approx(2 / 4)  # LCS the gunman
    # LCS(the cat sat on the mat, the cat is on the mat) = 5 of 6 on both sides
    assert M.rouge_l("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)


def test_rouge_l_beta_tokens_and_empty():
    # LCS 2, P = 1, R = 1/2: F1 = 2/3; beta 2: 5·1·0.5 / (0.5 + 4·1) = 5/9
    assert M.rouge_l("a b", "a b c d") == pytest.approx(2 / 3)
    assert M.rouge_l("a b", "a b c d", beta=2.0) == pytest.approx(5 / 9)
    assert M.rouge_l("Hello, World!", "hello world") == 1.0
    assert M.rouge_l("", "") == 1.0 and M.rouge_l("x", "") == 0.0 and M.rouge_l("x", "y") == 0.0
    assert M.lcs_length(list("ABCBDAB"), list("BDCABA")) == 4


def test_decision_f1_squad_style():
    # normalised: [use, elisa, for, assay] vs [assay, is, elisa]: 2 shared, P 1/2, R 2/3 -> 4/7
    assert M.decision_f1("Use ELISA for the assay", "The assay is ELISA.") == pytest.approx(4 / 7)
    assert M.decision_f1("The Answer.", "answer") == 1.0
    assert M.decision_f1("qPCR", ["ELISA", "qPCR"]) == 1.0  # best over several gold answers
    assert M.decision_f1("", "") == 1.0 and M.decision_f1("x", "") == 0.0 and M.decision_f1("a b", "c") == 0.0
    assert M.decision_f1("a a b", "a b b") == pytest.approx(2 / 3)  # counts, not sets
