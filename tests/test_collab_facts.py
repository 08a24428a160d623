"""HiCoMER datasets: the source-independent facts builder's phrasing, and its labels agree with its streams."""

from __future__ import annotations

from memgraft.collab.data import facts
from tests.collab_data_helpers import _renderings, assert_consistent


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
