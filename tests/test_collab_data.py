"""HiCoMER datasets: the generator's, the facts builder's and the TimeQA converter's labels agree with their streams."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from memgraft.collab.data import Dataset, read_jsonl, revised_text
from memgraft.collab.data import facts
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


def _page(questions, entity="X"):
    return {"index": f"/wiki/{entity}#P1", "type": "P1", "link": f"/wiki/{entity}", "paras": [entity], "questions": questions}


def _renderings(templates, question, value, time):
    p = facts.Phrase.of(question, value, time)
    return {t(p) for t in templates}


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


# -- facts: the source-independent builder ------------------------------------------------


def _line(subject, question, values, asked=()):
    return facts.Timeline(subject, question, [(f"{y}-01-01T00:00:00", [a]) for y, a in values],
                          asked=[(q, f"{y}-01-01T00:00:00", [a]) for q, y, a in asked])  # fmt: skip


def test_phrase_statement_and_label():
    p = facts.Phrase.of("who is the president of india", "Ram Nath Kovind", "2017-01-01T00:00:00")
    assert p.statement() == "The president of india is Ram Nath Kovind."
    assert p.label() == "President of india" and p.question == "Who is the president of india?"
    assert facts.Phrase.of("Who was the owner of The Fifer?", "Durand-Ruel", "1872-01-01T00:00:00").statement() == (
        "The owner of The Fifer was Durand-Ruel."
    )
    assert facts.Phrase.of("where was the usa sevens held", "Las Vegas", "2010-01-01T00:00:00").np is None
    assert facts.normalise_values([("2", ["b"]), ("1", ["a"]), ("3", ["B."]), ("1", ["a2"])]) == [("1", ["a", "a2"]), ("2", ["b"])]


def test_facts_cross_subject_records_get_only_neutral_decisions():
    fifer = _line("fifer", "Who was the owner of The Fifer?", [(1866, "Manet"), (1872, "Durand-Ruel")],
                  asked=[("Who owned The Fifer in 1870?", 1870, "Manet"), ("Who owned it in 1860?", 1860, "Manet"),
                         ("Who owned The Fifer in 1880?", 1880, "Manet")])  # fmt: skip
    arnolfini = _line("arnolfini", "Who was the owner of Arnolfini Portrait?", [(1850, "Hay"), (1880, "National Gallery")])
    data = facts.build([fifer, arnolfini], source="art", author="museum", subjects_per_team=0, confirm_notes=0)
    assert_consistent(data)
    assert [g["time"][:4] for g in data.groups] == ["1850", "1866", "1872", "1880"]
    assert {g["team"] for g in data.groups} == {"art-00"}
    mems = {m["memory_id"]: m for m in data.memories}
    for d in data.gold:  # a decision other than neutral is always about the group's own subject
        judged_against = {mems[c["memory_id"]]["subject"] for c in d["against"]}
        assert judged_against == {mems[d["memory_id"]]["subject"]} or d["relation"] == "neutral"
    hay = next(m for m in data.memories if m["value"] == "Hay")
    on_hay = [(d["time"][:4], d["relation"]) for d in data.gold if d["memory_id"] == hay["memory_id"]]
    assert on_hay == [("1866", "neutral"), ("1872", "neutral"), ("1880", "contradiction")]
    stale = next(m for m in data.memories if m["role"] == "stale" and m["subject"] == "fifer")
    assert stale["value"] == "Manet" and stale["time"][:4] == "1872" and stale["author"].startswith("agent-")
    assert stale["original"] in _renderings(facts.STALE_NOTES, "Who was the owner of The Fifer?", "Manet", stale["time"])
    (intra,) = [d for d in data.gold if d["memory_id"] == stale["memory_id"]]
    assert (intra["level"], intra["relation"], intra["action"]) == ("intra", "contradiction", "revise")
    assert [mems[c["memory_id"]]["value"] for c in intra["against"]] == ["Durand-Ruel"]
    # as-of questions: the then-valid record, nothing written later; disagreeing and too early ones skipped
    as_of = [q for q in data.questions if q["asked"] == "as_of"]
    assert [q["question"] for q in as_of] == ["Who owned The Fifer in 1870?"]
    assert [mems[m]["value"] for m in as_of[0]["valid"]] == ["Manet"] and as_of[0]["outdated"] == []
    counts = data.info["counts"]
    assert counts["asof_skipped_answer_disagrees"] == counts["asof_skipped_before_first_record"] == 1
    now = {q["subject"]: q for q in data.questions if q["asked"] == "now"}
    assert {k: q["time"][:4] for k, q in now.items()} == {"fifer": "1880", "arnolfini": "1880"}
    assert [mems[m]["value"] for m in now["fifer"]["valid"]] == ["Durand-Ruel"]


def test_facts_confirming_notes_are_compatible_and_stay_valid():
    line = _line("s", "who is the president of india", [(2012, "Pranab Mukherjee"), (2017, "Ram Nath Kovind")])
    data = facts.build([line], source="t", confirm_notes=1.0)
    assert_consistent(data)
    confirms = [m for m in data.memories if m["role"] == "confirm"]
    assert len(confirms) == 2 and [c["value"] for c in confirms] == ["Pranab Mukherjee", "Ram Nath Kovind"]
    intra = {d["memory_id"]: (d["relation"], d["action"]) for d in data.gold if d["level"] == "intra"}
    assert intra[confirms[1]["memory_id"]] == ("compatible", "keep")
    assert confirms[0]["outdated_at"] == "2017-01-01T00:00:00" and confirms[1]["outdated_at"] is None
    (now,) = [q for q in data.questions if q["asked"] == "now"]
    assert confirms[1]["memory_id"] in now["valid"] and confirms[0]["memory_id"] in now["outdated"]


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
