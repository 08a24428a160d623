"""Maintenance Accuracy with never-retrieved targets, H_t misses, and the validity counts beside P/R."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

import pytest

from memgraft.collab.evaluate.counts import ht_missed, validity_counts
from memgraft.collab.evaluate.harness import updater_scores, validity_state_scores
from memgraft.collab.types import Decision


def _gold(gid: str, mid: str, relation: str, level: str = "inter") -> dict:
    action = "revise" if relation == "contradiction" else "keep"
    return {"group_id": gid, "memory_id": mid, "level": level, "relation": relation, "action": action,
            "valid": action == "keep"}


def _decision(gid: str, mid: str, relation: str, valid_after: bool) -> Decision:
    action = "revise" if relation == "contradiction" else "keep"
    return Decision(decision_id=f"d-{gid}-{mid}", team="t", memory_id=mid, group_id=gid,
                    decided_at=datetime(2024, 1, 1), level="inter", relation=relation, action=action,
                    before="x", after="y" if action == "revise" else "x", valid_before=True, valid_after=valid_after,
                    decided_by="test")


class FakeBank:
    def __init__(self, decisions, memories=()):
        self._d, self._m = list(decisions), list(memories)

    def teams(self):
        return ["t"]

    def decisions(self, team):
        return self._d

    def memories(self, team):
        return self._m


def test_a_revise_target_never_retrieved_is_a_miss_and_counted():
    gold = [_gold("g1", "a", "contradiction"),  # never judged: missed
            _gold("g1", "b", "neutral"),  # never judged: leaving it alone is right
            _gold("g2", "c", "contradiction"),  # judged and revised: right
            _gold("g2", "d", "compatible", level="intra")]  # judged compatible: right
    bank = FakeBank([_decision("g2", "c", "contradiction", False), _decision("g2", "d", "compatible", True)])
    s = updater_scores(bank, gold)
    assert s["maintenance_accuracy"] == pytest.approx(3 / 4)
    assert (s["ht_missed_n"], s["inter_targets"], s["ht_missed"]) == (2, 3, pytest.approx(2 / 3))
    assert (s["ht_missed_revise_n"], s["inter_revise_targets"], s["ht_missed_revise"]) == (1, 2, 0.5)
    assert s["decided"] == 2


def test_ht_missed_ignores_intra_targets_and_handles_no_gold():
    assert ht_missed(set(), [_gold("g", "n", "contradiction", level="intra")])["inter_targets"] == 0
    assert ht_missed(set(), [])["ht_missed"] == 0.0


def _mem(mid: str, subject: str, group: str, outdated: bool) -> dict:
    return {"memory_id": mid, "team": "t", "group_id": group, "subject": subject,
            "outdated_at": "2024-02-01T00:00:00" if outdated else None}


def test_validity_counts_name_who_retired_a_current_memory():
    memories = [_mem("hall", "steele-hall", "g0", False), _mem("veltroni", "veltroni", "g1", False),
                _mem("old", "veltroni", "g0", True), _mem("kept-old", "mond", "g0", True),
                _mem("right", "mond", "g2", False), _mem("mond-new", "mond", "g3", False)]
    flagged = {"hall": False, "veltroni": True, "old": False, "kept-old": True, "right": False, "mond-new": True}
    c = validity_counts(flagged, memories, {"hall": "g1", "old": "g1", "right": "g3"})
    assert (c["wrongly_retired"], c["current"], c["left_valid"], c["outdated"]) == (2, 4, 1, 2)
    assert c["retired_by_other_subject"] == 1  # hall by g1 (Veltroni's group); "right" by a group of its own subject
    assert "retired_by_other_subject" not in validity_counts(flagged, memories)


def test_validity_state_scores_report_the_counts_beside_precision_and_recall():
    from memgraft.collab.data import Dataset

    memories = [_mem("a", "s1", "g0", False), _mem("b", "s2", "g0", False), _mem("c", "s2", "g0", True)]
    data = Dataset(groups=[], questions=[], gold=[], memories=memories)
    bank = FakeBank([_decision("g1", "a", "contradiction", False)],
                    [SimpleNamespace(memory_id="a", valid=False), SimpleNamespace(memory_id="b", valid=True),
                     SimpleNamespace(memory_id="c", valid=True)])
    v = validity_state_scores(bank, data)
    assert v["recall"] == pytest.approx(0.5) and v["precision"] == pytest.approx(0.5)
    assert (v["wrongly_retired"], v["current"], v["left_valid"], v["outdated"]) == (1, 2, 1, 1)
    assert v["retired_by_other_subject"] == 1
