"""Checks shared by the HiCoMER dataset tests: a dataset's labels agree with its stream, and a fact's renderings."""

from __future__ import annotations

from datetime import datetime

from memgraft.collab.data import Dataset, facts, revised_text


def assert_consistent(data: Dataset) -> None:
    """Every label points into the stream and agrees with the memories' states over time."""
    stream: dict[str, dict] = {}
    group_of: dict[str, dict] = {}
    last_time: dict[str, str] = {}
    for g in data.groups:
        assert set(g) == {"team", "group_id", "time", "memories"}
        datetime.fromisoformat(g["time"])
        assert g["time"] >= last_time.get(g["team"], ""), "a team's groups are in time order"
        last_time[g["team"]] = g["time"]
        assert g["memories"], g["group_id"]
        for m in g["memories"]:
            assert set(m) == {"memory_id", "type", "author", "content"}
            assert m["type"] in ("team", "individual") and m["content"]
            assert m["memory_id"] not in stream
            stream[m["memory_id"]] = m
            group_of[m["memory_id"]] = g

    states = {m["memory_id"]: m for m in data.memories}
    assert set(states) == set(stream)
    for mid, s in states.items():
        g = group_of[mid]
        assert (s["team"], s["group_id"], s["time"], s["type"]) == (g["team"], g["group_id"], g["time"], stream[mid]["type"])
        assert s["original"] == stream[mid]["content"]

    # replay the gold decisions in order: each target is valid when judged, revised at most once
    replay: dict[str, str | None] = {mid: None for mid in stream}
    groups = {g["group_id"]: g for g in data.groups}
    for d in data.gold:
        mid, g = d["memory_id"], groups[d["group_id"]]
        assert mid in stream and d["team"] == g["team"] == group_of[mid]["team"] and d["time"] == g["time"]
        assert replay[mid] is None, f"{mid} judged after it was outdated"
        for c in d["against"]:
            assert c["memory_id"] in stream and group_of[c["memory_id"]]["team"] == d["team"]
        if d["level"] == "intra":
            assert group_of[mid]["group_id"] == d["group_id"] and stream[mid]["type"] == "individual"
            assert all(c["type"] == "team" and group_of[c["memory_id"]] is g for c in d["against"])
        else:
            assert group_of[mid]["time"] < d["time"], "inter targets are earlier memories"
        assert (d["relation"] == "contradiction") == (d["action"] == "revise") == (not d["valid"])
        if d["action"] == "revise":
            replay[mid] = d["time"]
            by = states[mid]["superseded_by"]
            assert d["maintained"] == revised_text(stream[mid]["content"], d["time"], by)
        else:
            assert d["maintained"] == stream[mid]["content"]
    assert replay == {mid: s["outdated_at"] for mid, s in states.items()}

    for mid, s in states.items():  # every outdated memory has a superseding team memory, same team
        if s["outdated_at"] is None:
            assert s["superseded_by"] is None and s["maintained"] == s["original"]
            continue
        by = states[s["superseded_by"]]
        assert by["team"] == s["team"] and by["type"] == "team"
        assert by["time"] == s["outdated_at"] >= s["time"]
        if by["time"] == s["time"]:  # same-time conflict: the group's team memory wins
            assert by["group_id"] == s["group_id"] and s["type"] == "individual"

    def valid_at(mid: str, t: str) -> bool:
        s = states[mid]
        return s["time"] <= t and (s["outdated_at"] is None or t < s["outdated_at"])

    ids = set()
    for q in data.questions:
        assert {"id", "team", "question", "time", "valid", "outdated", "answer"} <= set(q)
        assert q["id"] not in ids and q["question"] and q["answer"]
        ids.add(q["id"])
        assert q["valid"], q["id"]
        for mid in q["valid"] + q["outdated"]:
            assert mid in stream and group_of[mid]["team"] == q["team"]
        assert all(valid_at(m, q["time"]) for m in q["valid"])
        assert all(states[m]["outdated_at"] is not None and states[m]["outdated_at"] <= q["time"] for m in q["outdated"])


def _renderings(templates, question, value, time):
    p = facts.Phrase.of(question, value, time)
    return {t(p) for t in templates}
