"""HiCoMER datasets: the TimeQA converter's questions parse, and its labels agree with its streams, on
hand-made pages and on the real ones."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memgraft.collab.data import facts, read_jsonl, timeqa
from tests.collab_data_helpers import _renderings, assert_consistent

TIMEQA = Path(__file__).parents[1].parent / "shared" / "data" / "timeqa-train" / "human_annotated_train.json"


# -- TimeQA: parsing (no data needed) -------------------------------------------------------


@pytest.mark.parametrize(
    "question, start, end",
    [
        ("Who owned the house from 1811 to 1827?", "1811-01-01", "1827-01-01"),
        ("Who led it from Jun 1942 to Sep 1943?", "1942-06-01", "1943-09-01"),
        ("The submarine sunk on May 6, 1944 was commanded by whom from Jun 1942 to Sep 1943?", "1942-06-01", "1943-09-01"),
        ("What was the organisation she joined in May 2016?", "2016-05-01", None),
        ("Who was the coach after 5 december 2016?", "2016-12-05", None),
        ("Who filled the post after december 11, 2017?", "2017-12-11", None),
        ("What shows did he act in between the years 1975 and 1982?", "1975-01-01", "1982-01-01"),
        ("Who was the second owner of the castle, 1346 to 1347?", "1346-01-01", "1347-01-01"),
        ("In the stretch of years from 8 to 9, what was the capital?", "0008-01-01", "0009-01-01"),
        ("Who was host during the period 1975 to dec 1981?", "1975-01-01", "1981-12-01"),
        ("Which locomotive ordered 4 to 4-0 engines from 1913 to Dec 1922?", "1913-01-01", "1922-12-01"),
    ],
)
def test_parse_period(question, start, end):
    p = timeqa.parse_period(question)
    assert p is not None
    assert p.start == start + "T00:00:00"
    assert p.end == (end + "T00:00:00" if end else None)
    assert question[p.span[0] : p.span[1]] == p.text


def test_parse_period_odd_inputs():
    assert timeqa.parse_period("Which organisation did she join in 1?") is None
    assert timeqa.parse_period("What did the planetarium become after renovation?") is None
    with pytest.raises(timeqa.BadDate):
        timeqa.parse_period("Who ruled from Feb 30 2019 to 2020?")
    assert timeqa.detokenize("John F . Kennedy , Jr .") == "John F. Kennedy, Jr."
    p = timeqa.parse_period("In the time period from 1942 to 1947, what was Len employed as?")
    assert timeqa.statement("In the time period from 1942 to 1947, what was Len employed as?", p, ["a tackle"]) == (
        "What was Len employed as? a tackle."
    )


def _page(questions, entity="X"):
    return {"index": f"/wiki/{entity}#P1", "type": "P1", "link": f"/wiki/{entity}", "paras": [entity], "questions": questions}


def test_timeqa_conversion_on_a_hand_made_page():
    span = {"para": 0, "from": 0, "end": 1}
    page = _page(
        [
            ["Who ran X from 1990 to 2000?", [{**span, "answer": "Alpha"}]],
            ["Who ran X from 2000 to 2010?", [{**span, "answer": "Beta"}]],
            ["Who was running X from 1990 to 2000?", [{**span, "answer": "Alpha"}]],  # paraphrase
            ["Who ran X from 2010 to 2012?", [{**span, "answer": "Alpha"}]],  # back to Alpha
            ["Who ran X from 1980 to 1985?", [{**span, "answer": ""}]],  # unanswerable
            ["Who ran X lately?", [{**span, "answer": "Beta"}]],  # no date
            ["Who ran X from 2012 to 2001?", [{**span, "answer": "Beta"}]],  # ends before it starts
            ["broken"],  # malformed
        ]
    )
    data, counts = timeqa.convert([page, {"index": "empty", "questions": None}], confirm_notes=0)
    assert_consistent(data)
    assert counts["pages"] == 2 and counts["pages_converted"] == 1 and counts["pages_malformed"] == 1
    assert counts["questions"] == 8 and counts["questions_converted"] == 4
    assert counts["skipped_no_answer"] == counts["skipped_no_date"] == counts["skipped_bad_range"] == 1
    assert counts["skipped_malformed"] == 1
    assert (counts["subjects"], counts["teams"], counts["groups"]) == (1, 1, 3)
    records = [m for m in data.memories if m["type"] == "team"]
    notes = [m for m in data.memories if m["type"] == "individual"]
    assert [m["value"] for m in records] == ["Alpha", "Beta", "Alpha"]
    assert [(n["time"][:4], n["value"], n["role"]) for n in notes] == [("2000", "Alpha", "stale"), ("2010", "Beta", "stale")]
    r90, r00, r10 = (m["memory_id"] for m in records)
    mems = {m["memory_id"]: m for m in data.memories}
    assert mems[r90]["outdated_at"] == "2000-01-01T00:00:00" and mems[r90]["superseded_by"] == r00
    assert mems[r00]["outdated_at"] == "2010-01-01T00:00:00" and mems[r10]["outdated_at"] is None
    assert mems[r90]["original"] in _renderings(facts.RECORDS, "Who ran X?", "Alpha", "1990-01-01T00:00:00")
    assert all(n["outdated_at"] == n["time"] for n in notes)  # outdated at birth
    # gold: per change, the stale note (intra) and the old record (inter) are contradicted
    got = [(d["level"], d["memory_id"], d["relation"], d["action"]) for d in data.gold]
    n00, n10 = (n["memory_id"] for n in notes)
    assert got == [
        ("intra", n00, "contradiction", "revise"), ("inter", r90, "contradiction", "revise"),
        ("intra", n10, "contradiction", "revise"), ("inter", r00, "contradiction", "revise"),
    ]  # fmt: skip
    assert [c["memory_id"] for c in data.gold[0]["against"]] == [r00]
    by_q = {q["question"]: q for q in data.questions if q["asked"] == "as_of"}
    q2000 = by_q["Who ran X from 2000 to 2010?"]
    assert q2000["valid"] == [r00] and sorted(q2000["outdated"]) == sorted([r90, n00]) and q2000["answer"] == "Beta"
    assert by_q["Who was running X from 1990 to 2000?"]["valid"] == [r90]
    assert by_q["Who was running X from 1990 to 2000?"]["outdated"] == []
    (now,) = [q for q in data.questions if q["asked"] == "now"]
    assert now["question"] == "Who ran X?" and now["time"] == "2010-01-01T00:00:00" and now["valid"] == [r10]
    assert sorted(now["outdated"]) == sorted([r90, r00, n00, n10])


def test_timeqa_split_questions_and_pages_split():
    span = {"para": 0, "from": 0, "end": 1}
    page = _page([["Which team did X play for from 1990 to 2000?", [{**span, "answer": "Reds"}]],
                  ["Which position did X hold from 1995 to 2000?", [{**span, "answer": "Captain"}]]])  # fmt: skip
    assert timeqa.convert([page])[1]["subjects"] == 1
    data, counts = timeqa.convert([page], split_questions=True)
    assert counts["subjects"] == 2 and not any(d["action"] == "revise" for d in data.gold)
    pages = [{"index": f"/wiki/P{i}#P1", "questions": []} for i in range(200)]
    train, val = timeqa.select_split(pages, "train"), timeqa.select_split(pages, "val")
    assert len(train) + len(val) == 200 and not {id(p) for p in train} & {id(p) for p in val}
    assert 20 <= len(val) <= 60 and timeqa.select_split(pages, "val") == val


# -- TimeQA: real pages ---------------------------------------------------------------------

needs_timeqa = pytest.mark.skipif(not TIMEQA.exists(), reason="../shared/data/timeqa-train is missing")


@needs_timeqa
def test_timeqa_real_pages_convert_consistently(tmp_path):
    pages = timeqa.load_pages(TIMEQA, limit=6)
    data, counts = timeqa.convert(pages)
    assert_consistent(data)
    # pages 5 and 6 ask only unanswerable questions; every answered question has a date
    assert counts["pages"] == 6 and counts["pages_converted"] == 4 and counts["pages_without_questions"] == 2
    answered = sum(1 for p in pages for _, spans in p["questions"] if any(s["answer"].strip() for s in spans))
    assert counts["questions_converted"] == answered == 14 == counts["questions_as_of"]
    assert counts["subjects"] == counts["questions_now"] == 4 and counts["teams"] == 1
    # the first page: the Newton D. Baker House changes hands over time
    q = next(q for q in data.questions if q["question"].startswith("Who owned the Newton D. Baker House") and "1916" in q["question"])
    mems = {m["memory_id"]: m for m in data.memories}
    assert q["time"].startswith("1916") and q["answer"] == "Newton D. Baker"
    assert [mems[m]["value"] for m in q["valid"] if mems[m]["type"] == "team"] == ["Newton D. Baker"]
    assert {mems[m]["value"] for m in q["outdated"]} == {"George Peter"}
    assert all(mems[m]["time"] <= q["time"] for m in q["valid"] + q["outdated"])
    # the CLI writes the same dataset
    assert timeqa.main(["--input", str(TIMEQA), "--out", str(tmp_path), "--limit", "6"]) == 0
    assert list(read_jsonl(tmp_path / "stream.jsonl")) == data.groups
    assert json.loads((tmp_path / "report.json").read_text())["questions_converted"] == counts["questions_converted"]


@pytest.fixture(scope="module")
def timeqa_full():
    return timeqa.convert(timeqa.load_pages(TIMEQA))


@needs_timeqa
def test_timeqa_full_file_converts_without_crashing(timeqa_full):
    data, counts = timeqa_full
    assert_consistent(data)
    assert counts["pages"] == 320 and counts["pages_converted"] >= 300
    skipped = sum(v for k, v in counts.items() if k.startswith("skipped_"))
    assert counts["questions_converted"] + skipped == counts["questions"]
    assert counts["superseded"] > 0 and counts["teams"] == -(-counts["subjects"] // 40)
    assert counts["stale_memories"] == counts["record_memories"] - counts["subjects"]
    judged = [(d["group_id"], d["memory_id"]) for d in data.gold]
    assert len(judged) == len(set(judged)), "a memory is judged once per group"


@needs_timeqa
def test_timeqa_records_come_in_several_phrasings(timeqa_full):
    data, _ = timeqa_full
    forms = Counter()
    for m in data.memories:
        if m["type"] == "team":
            text = m["original"]
            forms["qa" if text.startswith("Q: ") else "dated" if text.startswith(("Record from", "As of")) else
                  "question" if "?" in text else "other"] += 1  # fmt: skip
    assert len(forms) == 4 and min(forms.values()) > 0.05 * sum(forms.values())
    with_year = sum(m["original"].startswith(("Record from", "As of")) for m in data.memories if m["type"] == "team")
    assert 0 < with_year < 0.5 * sum(m["type"] == "team" for m in data.memories)


@needs_timeqa
def test_timeqa_is_deterministic_by_seed(tmp_path):
    pages = timeqa.load_pages(TIMEQA, limit=40)
    a = timeqa.convert(pages, seed=3)[0].write(tmp_path / "a")
    b = timeqa.convert(pages, seed=3)[0].write(tmp_path / "b")
    c = timeqa.convert(pages, seed=4)[0].write(tmp_path / "c")
    for key in ("stream", "questions", "gold", "memories"):
        assert a[key].read_bytes() == b[key].read_bytes(), key
    assert a["stream"].read_bytes() != c["stream"].read_bytes()
