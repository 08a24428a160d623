"""HiCoMER's conflict resolution: who wins a contradiction, in what order, and what survives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memgraft.collab.answer.resolve import Resolution, priority, resolve
from memgraft.collab.retrieve.retriever import Hit
from memgraft.collab.types import Memory
from memgraft.config import HiCoMERSettings

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=10)
S = HiCoMERSettings()  # alpha 1, beta 0.5, gamma 0.25


def mem(mid: str, typ: str = "individual", *, valid: bool = True, day: float = 0, written: float | None = None) -> Memory:
    at = T0 + timedelta(days=day)
    return Memory(memory_id=mid, team="lab", group_id="g", type=typ, author="a", original=mid, maintained=mid,
                  time=T0 + timedelta(days=day if written is None else written), relation=None, action=None,
                  valid=valid, maintained_at=at)


def all_contradict(a: Memory, b: Memory) -> bool:
    return True


def pairs(*ps: tuple[str, str]):
    """A symmetric contradiction relation over the named pairs, recording every question asked."""
    table = {frozenset(p) for p in ps}
    asked: list[tuple[str, str]] = []

    def contradicts(a: Memory, b: Memory) -> bool:
        asked.append((a.memory_id, b.memory_id))
        return frozenset((a.memory_id, b.memory_id)) in table
    contradicts.asked = asked  # type: ignore[attr-defined]
    return contradicts


def ids(items) -> list[str]:
    return [(x if isinstance(x, Memory) else x.memory).memory_id for x in items]


def run(items, contradicts, settings=S) -> Resolution:
    return resolve(items, contradicts, settings=settings, t0=T0, t_now=NOW)


def test_priority_is_the_weighted_sum():
    assert priority(mem("a", "team", valid=True, day=5), t0=T0, t_now=NOW, settings=S) == pytest.approx(1 + 0.5 + 0.125)
    assert priority(mem("b", valid=False, day=10), t0=T0, t_now=NOW, settings=S) == pytest.approx(0.25)
    custom = HiCoMERSettings(priority_alpha=2, priority_beta=3, priority_gamma=4)
    assert priority(mem("c", "team", day=2.5), t0=T0, t_now=NOW, settings=custom) == pytest.approx(2 + 3 + 1)


def test_team_beats_individual_even_when_older():
    team, ind = mem("t", "team", day=1), mem("i", day=9)
    r = run([ind, team], all_contradict)
    assert ids(r.kept) == ["t"] and [(ids([d.item])[0], ids([d.beaten_by])[0]) for d in r.dropped] == [("i", "t")]
    assert r.dropped[0].reason.startswith("priority")


def test_valid_beats_outdated_of_the_same_type_even_when_older():
    r = run([mem("old-valid", day=1), mem("new-outdated", valid=False, day=9)], all_contradict)
    assert ids(r.kept) == ["old-valid"] and ids([r.dropped[0].item]) == ["new-outdated"]


def test_newer_maintenance_beats_older():
    r = run([mem("older", day=2), mem("newer", day=6)], all_contradict)
    assert ids(r.kept) == ["newer"]


def test_ties_break_team_valid_maintenance_write_then_id():
    flat = HiCoMERSettings(priority_alpha=0, priority_beta=0, priority_gamma=0)  # every priority is 0
    cases = [
        ((mem("i", day=5), mem("t", "team", day=1)), "t", "team over individual"),
        ((mem("o", valid=False, day=5), mem("v", day=1)), "v", "valid over outdated"),
        ((mem("a", day=1), mem("b", day=2)), "b", "later maintenance"),
        ((mem("a", day=2, written=0), mem("b", day=2, written=1)), "b", "later write"),
        ((mem("b", day=2), mem("a", day=2)), "a", "smaller memory_id"),
    ]
    for items, winner, rule in cases:
        for order in (items, items[::-1]):  # the outcome never depends on the input order
            r = run(list(order), all_contradict, flat)
            assert ids(r.kept) == [winner] and r.dropped[0].reason == rule, (items, rule)


def test_a_dropped_memory_cannot_knock_out_another():
    # T (team) contradicts I1; I1 (newer) would beat I2, but I1 is dropped first, so I2 stays.
    t, i1, i2 = mem("T", "team", day=1), mem("I1", day=8), mem("I2", day=3)
    contradicts = pairs(("T", "I1"), ("I1", "I2"))
    r = run([i2, i1, t], contradicts)
    assert ids(r.kept) == ["I2", "T"]  # retrieval order of the survivors
    assert [(ids([d.item])[0], ids([d.beaten_by])[0]) for d in r.dropped] == [("I1", "T")]
    assert all("I1" != a for a, _ in contradicts.asked)  # I1 was never asked about as a winner
    assert all(a != b for a, b in contradicts.asked)


def test_no_contradictions_keep_everything_in_order():
    items = [mem("c", day=3), mem("a", "team", day=1), mem("b", valid=False, day=2)]
    contradicts = pairs()
    r = run(items, contradicts)
    assert ids(r.kept) == ["c", "a", "b"] and r.dropped == []
    assert len(contradicts.asked) == 3  # every pair asked once, the higher-precedence side first
    assert ("a", "c") in contradicts.asked and ("c", "b") in contradicts.asked


def test_hits_are_resolved_by_their_memories_and_stay_hits():
    hits = [Hit(mem("i", day=9), dense=0.9, semantic=0.9, validity=None, score=0.9),
            Hit(mem("x", day=2), dense=0.8, semantic=0.8, validity=None, score=0.8),
            Hit(mem("t", "team", day=1), dense=0.5, semantic=0.5, validity=None, score=0.5)]
    r = run(hits, pairs(("i", "t")))
    assert all(isinstance(h, Hit) for h in r.kept) and ids(r.kept) == ["x", "t"]
    assert isinstance(r.dropped[0].beaten_by, Hit)
    assert run([], all_contradict).kept == []
