"""SituatedQA conversion: plain questions become timelines whose labels agree with the stream."""

from __future__ import annotations

import json

import pytest

from memgraft.collab.data import read_jsonl
from memgraft.collab.data import situatedqa as sqa
from tests.collab_data_helpers import assert_consistent

TRAIN, DEV = sqa.DATA / "temp.train.jsonl", sqa.DATA / "temp.dev.jsonl"
needs_data = pytest.mark.skipif(not TRAIN.exists(), reason="../shared/data/situatedqa-train is missing")


def _rows(qid, question, start=(), sampled=(), orig=None):
    def row(date, kind, answer):
        return {"question": question, "id": qid, "edited_question": f"{question} as of {date}", "date": str(date),
                "date_type": kind, "answer": [answer], "any_answer": [answer]}  # fmt: skip

    rows = [row(d, "start", a) for d, a in start] + [row(d, "sampled_year", a) for d, a in sampled]
    return rows + ([row(orig[0], "orig", orig[1])] if orig else [])


def _hand_made():
    return (
        _rows(1, "who is the president of india", start=[(2012, "Pranab Mukherjee"), (2017, "Ram Nath Kovind")],
              sampled=[(2015, "Pranab Mukherjee"), (2019, "Narendra Modi"), (2010, "Pratibha Patil")])
        + _rows(2, "who is the president of france", start=[(2012, "François Hollande"), ("May 14, 2019", "Emmanuel Macron")])
        + _rows(3, "who wrote shadow of the day", orig=(2018, "Linkin Park"))
        + _rows(4, "who is the tallest man", start=[(2009, "Sultan Kösen")])
    )  # fmt: skip


def test_parse_when():
    assert sqa.parse_when("1984") == "1984-01-01T00:00:00"
    assert sqa.parse_when("March 09, 2021") == "2021-03-09T00:00:00"
    assert sqa.parse_when("sometime") is None


def test_hand_made_rows_give_exact_labels():
    data, counts = sqa.convert(_hand_made(), subjects_per_team=0, static_fraction=1.0, confirm_notes=0)
    assert_consistent(data)
    assert counts["questions_changing"] == 2 and counts["questions_static_kept"] == 1
    assert counts["questions_skipped_one_dated_answer"] == 1
    assert (counts["subjects"], counts["teams"], counts["groups"]) == (3, 1, 4)
    assert counts["asof_skipped_answer_disagrees"] == counts["asof_skipped_before_first_record"] == 1
    mems = {m["memory_id"]: m for m in data.memories}
    by = {(m["subject"], m["value"], m["role"]): m["memory_id"] for m in data.memories}
    kovind, pranab = by[("sqa-1", "Ram Nath Kovind", "record")], by[("sqa-1", "Pranab Mukherjee", "record")]
    stale = by[("sqa-1", "Pranab Mukherjee", "stale")]
    hollande, static = by[("sqa-2", "François Hollande", "record")], by[("sqa-3", "Linkin Park", "record")]
    assert mems[stale]["type"] == "individual" and mems[stale]["time"] == mems[kovind]["time"] == "2017-01-01T00:00:00"
    labels = {(d["group_id"][-4:], d["memory_id"]): (d["level"], d["relation"], d["action"]) for d in data.gold}
    assert labels[("g001", stale)] == ("intra", "contradiction", "revise")
    assert labels[("g001", pranab)] == ("inter", "contradiction", "revise")
    assert labels[("g001", hollande)] == ("inter", "neutral", "keep")  # same attribute, other country
    assert mems[pranab]["superseded_by"] == mems[stale]["superseded_by"] == kovind
    assert mems[hollande]["superseded_by"] == by[("sqa-2", "Emmanuel Macron", "record")]
    assert mems[hollande]["outdated_at"] == "2019-05-14T00:00:00"
    assert mems[static]["outdated_at"] is None
    assert not [d for d in data.gold if d["memory_id"] == static and d["relation"] != "neutral"]
    (q2015,) = [q for q in data.questions if q["asked"] == "as_of"]
    assert q2015["question"] == "who is the president of india as of 2015" and q2015["time"] == "2015-01-01T00:00:00"
    assert q2015["valid"] == [pranab] and q2015["outdated"] == [] and q2015["answer"] == "Pranab Mukherjee"
    now = {q["subject"]: q for q in data.questions if q["asked"] == "now"}
    assert now["sqa-1"]["time"] == "2019-05-14T00:00:00" and now["sqa-1"]["valid"] == [kovind]
    assert sorted(now["sqa-1"]["outdated"]) == sorted([pranab, stale])
    assert now["sqa-3"]["valid"] == [static] and now["sqa-3"]["outdated"] == []


def test_static_fraction_and_seed_choose_distractors():
    rows = _hand_made() + [r for i in range(10, 20) for r in _rows(i, f"who wrote song {i}", orig=(2018, f"Band {i}"))]
    assert sqa.convert(rows, static_fraction=0)[1]["questions_static_kept"] == 0
    assert sqa.convert(rows, static_fraction=2.5)[1]["questions_static_kept"] == 5


@needs_data
@pytest.mark.parametrize("path, limit", [(TRAIN, 300), (DEV, 200)])
def test_real_slices_convert_consistently(path, limit):
    data, counts = sqa.convert(sqa.load_rows(path, limit))
    assert_consistent(data)
    assert counts["question_ids"] == limit and counts["questions_changing"] > 0
    assert counts["questions_now"] == counts["subjects"] and counts["questions_as_of"] > 0
    assert counts["stale_memories"] == counts["record_memories"] - counts["subjects"]
    judged = [(d["group_id"], d["memory_id"]) for d in data.gold]
    assert len(judged) == len(set(judged)), "a memory is judged once per group"
    texts = [m["original"] for m in data.memories if m["type"] == "team"]
    assert sum(t.startswith("Q: ") for t in texts) and sum(t.startswith(("Record from", "As of")) for t in texts)
    assert sum(" is " in t and "?" not in t for t in texts)  # declarative statements
    mems = {m["memory_id"]: m for m in data.memories}
    for q in data.questions:
        assert all(mems[m]["time"] <= q["time"] for m in q["valid"] + q["outdated"])


@needs_data
def test_cli_is_deterministic(tmp_path, capsys):
    args = ["--input", str(TRAIN), "--limit", "120", "--subjects-per-team", "10"]
    assert sqa.main(args + ["--out", str(tmp_path / "a")]) == 0
    assert sqa.main(args + ["--out", str(tmp_path / "b")]) == 0
    assert sqa.main(args + ["--out", str(tmp_path / "c"), "--seed", "1"]) == 0
    summary = json.loads(capsys.readouterr().out.split("\n}\n")[0] + "\n}")
    for name in ("stream.jsonl", "questions.jsonl", "gold.jsonl", "memories.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "stream.jsonl").read_bytes() != (tmp_path / "c" / "stream.jsonl").read_bytes()
    assert len(list(read_jsonl(tmp_path / "a" / "stream.jsonl"))) == summary["counts"]["groups"]
