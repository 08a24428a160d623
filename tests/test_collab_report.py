"""The eval's tables: an adapted peer is named for what it is, and Decision F1 is n/a where no question has a type."""

from __future__ import annotations

from memgraft.collab.evaluate.harness import EvalReport
from memgraft.collab.evaluate.report import print_report


def row(**extra):
    base = {"orr@5": 0.1, "crr@5": 0.9, "ndcg@10": 0.9, "p@1": 0.8, "rouge_l": 0.5, "n_rouge_l": 4,
            "decision_f1": float("nan"), "n_decision_f1": 0, "dropped/q": 0.0, "questions": 4, "ms/q": 1.0,
            "updater": "none", "ranking": "dense"}
    return {**base, **extra}


def test_adapted_peers_are_named_for_what_they_are_and_untyped_decision_f1_is_not_applicable(capsys):
    report = EvalReport(methods={"mem0": row(ranking="peer"), "g-memory": row(ranking="peer"),
                                 "dense": row(decision_f1=0.7, n_decision_f1=2)})
    print_report(report, "t")
    out = capsys.readouterr().out
    assert "mem0-style update ops" in out and "g-memory-style groups" in out
    lines = {name: line for line in out.splitlines() for name in ("mem0-style", "dense") if name in line}
    assert "n/a" in lines["mem0-style"] and "0.700" in lines["dense"] and "n/a" not in lines["dense"]
