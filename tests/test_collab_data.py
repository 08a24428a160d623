"""HiCoMER datasets: the generator's and the TimeQA converter's labels agree with their streams."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from memgraft.collab.data import Dataset, read_jsonl, revised_text
from memgraft.collab.data import generator as gen
from memgraft.collab.data import timeqa

TIMEQA = Path(__file__).parents[1].parent / "shared" / "data" / "timeqa-train" / "human_annotated_train.json"


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


# -- generator --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated() -> Dataset:
    return gen.generate(seed=0, teams=4, groups=12)


def test_generator_labels_match_stream(generated):
    assert_consistent(generated)
    teams = {g["team"] for g in generated.groups}
    assert teams == {"lab-0", "release-1", "ward-2", "logistics-3"}
    assert len(generated.groups) == 4 * 12
    for g in generated.groups:
        assert any(m["type"] == "team" for m in g["memories"])


def test_generator_injects_both_conflict_kinds_and_distractors(generated):
    revise = [d for d in generated.gold if d["action"] == "revise"]
    same_time = [d for d in revise if d["level"] == "intra"]
    cross_time = [d for d in revise if d["level"] == "inter"]
    assert same_time and cross_time
    assert any(d["level"] == "inter" and d["memory_type"] == "team" for d in cross_time)
    relations = {d["relation"] for d in generated.gold}
    assert relations == {"compatible", "neutral", "contradiction"}
    # every individual memory is judged once against its own group's team memories
    individual = [m["memory_id"] for m in generated.memories if m["type"] == "individual"]
    intra = [d["memory_id"] for d in generated.gold if d["level"] == "intra"]
    assert sorted(intra) == sorted(individual)
    # distractors assert nothing and are never outdated
    distractors = [m for m in generated.memories if m["topic"] is None]
    assert distractors and all(m["outdated_at"] is None for m in distractors)


def test_generator_outdated_memories_assert_a_superseded_value(generated):
    states = {m["memory_id"]: m for m in generated.memories}
    for m in generated.memories:
        if m["outdated_at"] is not None:
            by = states[m["superseded_by"]]
            assert by["topic"] == m["topic"] and by["value"] != m["value"]
        elif m["topic"] is not None:  # still valid: agrees with the team's latest value on it
            latest = [s for s in generated.memories if s["team"] == m["team"] and s["type"] == "team" and s["topic"] == m["topic"]]
            assert latest[-1]["value"] == m["value"]


def test_generator_questions_cover_six_types(generated):
    assert {q["qtype"] for q in generated.questions} == set(gen.QUESTION_TYPES)
    states = {m["memory_id"]: m for m in generated.memories}
    for q in generated.questions:
        team_valid = [m for m in q["valid"] if states[m]["type"] == "team"]
        assert len(team_valid) == 1  # one team memory rules a topic at a time
        assert states[team_valid[0]]["value"] in q["answer"]
        if q["qtype"] in ("conflict_diagnosis", "risk_warning"):
            assert q["outdated"]


def test_generator_is_deterministic_by_seed(tmp_path):
    a = gen.generate(seed=7, teams=3, groups=6).write(tmp_path / "a")
    b = gen.generate(seed=7, teams=3, groups=6).write(tmp_path / "b")
    c = gen.generate(seed=8, teams=3, groups=6).write(tmp_path / "c")
    for key in ("stream", "questions", "gold", "memories"):
        assert a[key].read_bytes() == b[key].read_bytes(), key
    assert a["stream"].read_bytes() != c["stream"].read_bytes()


def test_generator_cli_writes_four_files(tmp_path, capsys):
    assert gen.main(["--seed", "0", "--teams", "2", "--groups", "5", "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["groups"] == 10
    rows = list(read_jsonl(tmp_path / "stream.jsonl"))
    assert len(rows) == 10 and [r["time"] for r in rows] == sorted(r["time"] for r in rows)
    data = Dataset(
        groups=rows,
        questions=list(read_jsonl(tmp_path / "questions.jsonl")),
        gold=list(read_jsonl(tmp_path / "gold.jsonl")),
        memories=list(read_jsonl(tmp_path / "memories.jsonl")),
    )
    assert_consistent(data)


def test_generator_single_group_is_fine():
    data = gen.generate(seed=3, teams=1, groups=1)
    assert_consistent(data)
    assert not any(q["qtype"] in ("conflict_diagnosis", "risk_warning") for q in data.questions)


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


def _page(questions):
    return {"index": "/wiki/X#P1", "type": "P1", "link": "/wiki/X", "paras": ["X", "Alpha ran X . Beta ran X ."], "questions": questions}


def test_timeqa_conversion_on_a_hand_made_page():
    span = {"para": 1, "from": 0, "end": 5}
    page = _page(
        [
            ["Who ran X from 1990 to 2000?", [{**span, "answer": "Alpha"}]],
            ["Who ran X from 2000 to 2010?", [{**span, "from": 12, "end": 16, "answer": "Beta"}]],
            ["Who was running X from 1990 to 2000?", [{**span, "answer": "Alpha"}]],  # paraphrase
            ["Who ran X from 2010 to 2012?", [{**span, "answer": "Alpha"}]],  # back to Alpha
            ["Who ran X from 1980 to 1985?", [{**span, "answer": ""}]],  # unanswerable
            ["Who ran X lately?", [{**span, "answer": "Beta"}]],  # no date
            ["Who ran X from 2012 to 2001?", [{**span, "answer": "Beta"}]],  # ends before it starts
            ["broken"],  # malformed
        ]
    )
    data, counts = timeqa.convert([page, {"index": "empty", "questions": None}])
    assert_consistent(data)
    assert counts["pages"] == 2 and counts["pages_converted"] == 1 and counts["pages_malformed"] == 1
    assert counts["questions"] == 8 and counts["questions_converted"] == 4
    assert counts["skipped_no_answer"] == counts["skipped_no_date"] == counts["skipped_bad_range"] == 1
    assert counts["skipped_malformed"] == 1 and counts["questions_sharing_a_memory"] == 1
    mems = {m["memory_id"]: m for m in data.memories}
    assert [m["value"] for m in data.memories] == ["Alpha", "Beta", "Alpha"]
    g0, g1, g2 = "timeqa-000-g000-m01", "timeqa-000-g001-m01", "timeqa-000-g002-m01"
    assert mems[g0]["outdated_at"] == "2000-01-01T00:00:00" and mems[g0]["superseded_by"] == g1
    assert mems[g1]["outdated_at"] == "2010-01-01T00:00:00" and mems[g2]["outdated_at"] is None
    assert mems[g0]["original"] == "Who ran X? Alpha."
    by_q = {q["question"]: q for q in data.questions}
    q2000 = by_q["Who ran X from 2000 to 2010?"]
    assert q2000["valid"] == [g1] and q2000["outdated"] == [g0] and q2000["answer"] == "Beta"
    assert by_q["Who was running X from 1990 to 2000?"]["valid"] == [g0]
    assert by_q["Who ran X from 2010 to 2012?"]["outdated"] == [g0, g1]
    assert [d["relation"] for d in data.gold] == ["contradiction", "contradiction"]


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
    assert counts["questions_converted"] == answered == 14
    # the first page: the Newton D. Baker House changes hands over time
    q = next(q for q in data.questions if q["question"].startswith("Who owned the Newton D. Baker House") and "1916" in q["question"])
    mems = {m["memory_id"]: m for m in data.memories}
    assert q["time"].startswith("1916") and q["answer"] == "Newton D. Baker"
    assert [mems[m]["value"] for m in q["valid"]] == ["Newton D. Baker"]
    assert [mems[m]["value"] for m in q["outdated"]] == ["George Peter"]
    # the CLI writes the same dataset
    assert timeqa.main(["--input", str(TIMEQA), "--out", str(tmp_path), "--limit", "6"]) == 0
    assert list(read_jsonl(tmp_path / "stream.jsonl")) == data.groups
    assert json.loads((tmp_path / "report.json").read_text())["questions_converted"] == counts["questions_converted"]


@needs_timeqa
def test_timeqa_full_file_converts_without_crashing():
    data, counts = timeqa.convert(timeqa.load_pages(TIMEQA))
    assert_consistent(data)
    assert counts["pages"] == 320 and counts["pages_converted"] >= 300
    skipped = sum(v for k, v in counts.items() if k.startswith("skipped_"))
    assert counts["questions_converted"] + skipped == counts["questions"]
    assert counts["superseded"] > 0
