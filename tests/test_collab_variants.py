"""The real-team variants (dense, prose, noisy, two teams), the held-out split and the team decisions set."""

from __future__ import annotations

import json
import random
import re

import pytest

from tests.collab_data_helpers import assert_consistent
from memgraft.collab.data import decisions, facts, phrasing, splits, variants

needs_data = pytest.mark.skipif(not (splits.TIMEQA_FILE.exists() and splits.SITUATEDQA_DEV.exists()),
                                reason="../shared/data is missing")
SQ_LIMIT = 80  # question ids of SituatedQA's half: enough for every shape, quick


def _variant(source: str, variant: str, split: str = "test", seed: int = 0):
    return variants.build_variant(source, split, variant, seed=seed, limit=SQ_LIMIT if source == "situatedqa" else None)


def assert_superseded_by_same_subject(data) -> None:
    """Every outdated memory is outdated by a team memory about the same subject in the same team, no earlier."""
    by_id = {m["memory_id"]: m for m in data.memories}
    for m in data.memories:
        if m["outdated_at"] is None:
            continue
        by = by_id[m["superseded_by"]]
        assert (by["team"], by["subject"], by["type"]) == (m["team"], m["subject"], "team")
        assert by["time"] >= m["time"] and by["time"] == m["outdated_at"]


@needs_data
@pytest.mark.parametrize("source", ["timeqa", "situatedqa"])
@pytest.mark.parametrize("variant", variants.VARIANTS)
def test_variant_gold_is_consistent(source, variant):
    data = _variant(source, variant)
    assert_consistent(data)
    assert_superseded_by_same_subject(data)
    assert data.counts()["outdated_memories"] > 0 and data.questions
    teams = {g["team"] for g in data.groups}
    assert len(teams) == (2 if variant == "two-teams" else 1)


@needs_data
def test_dense_puts_every_subject_of_the_split_in_one_team():
    data = variants.build_variant("situatedqa", "test", "dense")
    subjects = {m["subject"] for m in data.memories}
    assert len(subjects) > 200 and {g["team"] for g in data.groups} == {"situatedqa-00"}
    assert "one team of" in variants.title("situatedqa", "test", "dense", data)


def _template_renderings(m) -> set[str]:
    p = m["phrase"]
    return {facts.render(p, t) for t in (*facts.RECORDS, *facts.STALE_NOTES, *facts.CONFIRM_NOTES)}


MARKERS = ("Q: ", " A: ", " = ", "Record from", "As of ", "Note:", "Log:", "Checked again", "Confirmed:",
           "Observation:", "From my notes", "as far as I know", "still")


@needs_data
@pytest.mark.parametrize("source", ["timeqa", "situatedqa"])
def test_prose_uses_none_of_the_template_phrasings(source):
    dense, prose = _variant(source, "dense"), _variant(source, "prose")
    assert [m["memory_id"] for m in dense.memories] == [m["memory_id"] for m in prose.memories]
    for m in prose.memories:
        assert m["original"] not in _template_renderings(m)
        own = (m["phrase"]["question"] + " " + m["phrase"]["value"]).lower()
        for marker in MARKERS:
            assert marker.strip().lower() in own or marker not in m["original"], (marker, m["original"])
    records = [m for m in prose.memories if m["type"] == "team"]
    with_date = sum(m["phrase"]["time"][:4].lstrip("0") in m["original"] for m in records)
    assert with_date == len(records), "every prose record carries its date in the sentence"
    # the gold is the dense stream's, word for word apart from the texts
    key = lambda d: [(g["group_id"], g["memory_id"], g["relation"], g["action"]) for g in d.gold]  # noqa: E731
    assert key(dense) == key(prose)
    assert [(q["id"], q["valid"], q["outdated"]) for q in dense.questions] == \
           [(q["id"], q["valid"], q["outdated"]) for q in prose.questions]


def test_prose_templates_avoid_the_openers_on_a_plain_phrase():
    p = phrasing.Prose("the head coach of Calcio Catania", "who was the head coach of calcio catania",
                       "Claudio Ranieri", "March 1998")
    pools = (*phrasing.NAMED_RECORDS, *phrasing.ASKED_RECORDS, *phrasing.STALE_NOTES, *phrasing.CONFIRM_NOTES)
    texts = {t(p) for t in pools}
    assert len(texts) == len(set(pools)), "every template says it differently"
    for text in texts:
        assert "Claudio Ranieri" in text
        assert not any(mk in text for mk in MARKERS if mk != "As of ") and " is " not in text.replace(p.ask, "")
    named = [t(p) for t in (*phrasing.NAMED_RECORDS, *phrasing.ASKED_RECORDS)]
    assert all("1998" in t for t in named)
    assert sum(not re.search(r"Claudio Ranieri\W*$", t) for t in named) >= len(named) // 2, "value not always last"


@needs_data
def test_noisy_changes_about_a_third_and_keeps_the_gold():
    dense, noisy = _variant("timeqa", "dense"), _variant("timeqa", "noisy")
    changed = [(a, b) for a, b in zip(dense.memories, noisy.memories) if a["original"] != b["original"]]
    assert 0.2 <= len(changed) / len(noisy.memories) <= 0.55
    assert all(b["noise"] for _, b in changed) and all(not b["noise"] for a, b in zip(dense.memories, noisy.memories)
                                                        if a["original"] == b["original"])
    kinds = {k.split(":")[0] for _, b in changed for k in b["noise"]}
    assert {"short", "clause"} <= kinds and kinds & {"typo-value", "typo-name"}
    assert [(g["memory_id"], g["action"]) for g in dense.gold] == [(g["memory_id"], g["action"]) for g in noisy.gold]


def test_noise_helpers():
    rng = random.Random(0)
    for word in ("Ranieri", "Catania", "Society"):
        t = phrasing.typo(word, rng)
        assert t != word and abs(len(t) - len(word)) <= 1 and t[0] == word[0]
    assert phrasing.short_names("Pelican (Fabergé egg)", "owner", note=True) == ["Pelican", "the piece"]
    assert phrasing.short_names("Ludwig Mond", None, note=False) == ["Mond", "L. Mond"]
    assert phrasing.short_names("Calcio Catania", "head coach", note=True)[-1] == "the club"


@needs_data
@pytest.mark.parametrize("source", ["timeqa", "situatedqa"])
def test_two_teams_hold_the_same_subjects_with_other_values_and_never_cross(source):
    data = _variant(source, "two-teams")
    teams = sorted({g["team"] for g in data.groups})
    subjects = {t: {m["subject"] for m in data.memories if m["team"] == t} for t in teams}
    assert subjects[teams[0]] == subjects[teams[1]]
    team_of = {m["memory_id"]: m["team"] for m in data.memories}
    for g in data.gold:
        assert team_of[g["memory_id"]] == g["team"] and all(team_of[a["memory_id"]] == g["team"] for a in g["against"])
    now = {t: {q["subject"]: q["answer"] for q in data.questions if q["team"] == t and q["asked"] == "now"}
           for t in teams}
    differ = sum(now[teams[0]][s] != now[teams[1]].get(s) for s in now[teams[0]])
    assert differ >= len(now[teams[0]]) // 2


@needs_data
@pytest.mark.parametrize("variant", variants.VARIANTS)
def test_variants_are_deterministic_by_seed(variant):
    a, b, c = (_variant("situatedqa", variant, seed=s) for s in (3, 3, 4))
    assert (a.groups, a.gold, a.questions, a.memories) == (b.groups, b.gold, b.questions, b.memories)
    assert a.groups != c.groups


@needs_data
def test_split_is_stable_and_disjoint():
    from memgraft.collab.data import timeqa

    dev, test = splits.timeqa_pages("dev"), splits.timeqa_pages("test")
    val = timeqa.select_split(timeqa.load_pages(splits.TIMEQA_FILE), "val")
    di, ti = {p["index"] for p in dev}, {p["index"] for p in test}
    assert di and ti and not di & ti and di | ti == {p["index"] for p in val}
    train = {p["index"] for p in splits.timeqa_pages("train")}
    assert not train & (di | ti), "the judge's training pages are in neither half"
    sd, st = ({r["id"] for r in splits.situatedqa_rows(s)} for s in ("dev", "test"))
    assert sd and st and not sd & st
    assert 0.35 < len(sd) / (len(sd) + len(st)) < 0.65
    # the halves are fixed by the salted hash, not by run or seed
    assert [splits.half_of(k) for k in ("web-platform", "a", "b", "c")] == ["test", "test", "dev", "test"]
    assert splits.timeqa_pages("test") == test


def test_split_rejects_an_unknown_name():
    with pytest.raises(ValueError, match="split must be one of"):
        splits.timeqa_pages("val")
    with pytest.raises(ValueError, match="variant must be one of"):
        variants.build_variant("timeqa", "test", "shuffled")


def test_decisions_set_gold_and_size():
    data = decisions.build("all")
    assert_consistent(data)
    assert_superseded_by_same_subject(data)
    assert data.info["counts"]["replaced_decisions"] >= 40 and len(data.questions) >= 80
    assert {m["domain"] for m in data.memories} >= {
        "software", "biology lab", "chemistry lab", "product team", "data engineering", "customer support"}
    dev, test = decisions.build("dev"), decisions.build("test")
    assert dev.info["teams"] and test.info["teams"] and not set(dev.info["teams"]) & set(test.info["teams"])
    assert sorted(dev.info["teams"] + test.info["teams"]) == sorted(t.team for t in decisions.TEAMS)


def test_decisions_deploy_regression_case():
    data = decisions.build("all")
    web = [m for m in data.memories if m["subject"] == "web-deploy-day" and m["type"] == "team"]
    assert [m["original"] for m in web] == ["Deploys happen on Tuesdays.",
                                            "Deploys now happen on Thursdays instead of Tuesdays.",
                                            "From now on deploys happen on Fridays instead of Thursdays."]
    assert web[0]["superseded_by"] == web[1]["memory_id"] and web[1]["superseded_by"] == web[2]["memory_id"]
    assert web[2]["outdated_at"] is None
    mobile = next(m for m in data.memories if m["subject"] == "mobile-deploy-day")
    assert mobile["outdated_at"] is None
    assert any(g["memory_id"] == mobile["memory_id"] and g["relation"] == "neutral" for g in data.gold)
    now = next(q for q in data.questions if q["subject"] == "web-deploy-day" and q["asked"] == "now")
    assert now["valid"] == [web[2]["memory_id"]] and web[0]["memory_id"] in now["outdated"]


def test_decisions_stale_note_in_the_group_that_drops_it():
    data = decisions.build("all")
    note = next(m for m in data.memories if m["original"].startswith("Ordered more Compound A"))
    record = next(m for m in data.memories if m["group_id"] == note["group_id"] and m["type"] == "team"
                  and m["subject"] == note["subject"])
    assert record["value"] == "Compound B" and note["outdated_at"] == note["time"]
    gold = next(g for g in data.gold if g["memory_id"] == note["memory_id"])
    assert (gold["level"], gold["relation"], gold["action"]) == ("intra", "contradiction", "revise")
    assert [a["memory_id"] for a in gold["against"]] == [record["memory_id"]]


def test_decisions_reject_a_note_that_restates_no_current_value():
    from memgraft.collab.data.decision_threads import TeamSet, Thread

    thread = Thread("k", "Which?", "decision", (("2024-01-01", "A", "Use A."), ("2024-02-01", "B", "B now.")),
                    notes=(("2024-02-10", "A", "Used A."),))
    bad = TeamSet("t", "x", "lead", ("m",), (thread,))
    with pytest.raises(ValueError, match="restates"):
        decisions.build(teams=[bad])


@needs_data
def test_variants_cli_writes_the_four_files(tmp_path, capsys):
    out = tmp_path / "v"
    assert variants.main(["--source", "situatedqa", "--split", "dev", "--variant", "noisy", "--limit", "30",
                          "--out", str(out)]) == 0
    for name in ("stream.jsonl", "questions.jsonl", "gold.jsonl", "memories.jsonl", "report.json"):
        assert (out / name).exists()
    assert json.loads((out / "report.json").read_text())["teams"] == 1
    assert variants.main(["--source", "decisions", "--split", "test", "--out", str(tmp_path / "d")]) == 0
    assert "SituatedQA dev-dev, noisy" in capsys.readouterr().err


@needs_data
def test_eval_collab_names_the_real_team_rows_by_source_variant_and_split():
    from memgraft.eval.__main__ import _collab_datasets

    rows = _collab_datasets(None, False, 8, 0, None, "val", 6, None, 30, suite="real-team", split="dev")
    titles = [t for t, _ in rows]
    assert len(titles) == 2 * len(variants.VARIANTS) + 1
    assert titles[0].startswith("TimeQA val-dev, dense (one team of") and "SituatedQA dev-dev, two-teams" in titles[7]
    assert titles[-1].startswith("team decisions (dev), 7 teams")
    only = _collab_datasets(None, False, 8, 0, None, "val", 6, None, 30, variant="decisions", split="test")
    assert [t for t, _ in only] == [variants.title("decisions", "test", "dense", decisions.build("test"))]
    with pytest.raises(ValueError, match="unknown real-team rows"):
        _collab_datasets(None, False, 8, 0, None, "val", 6, None, 30, variant="dense,shuffled")


def test_eval_collab_refuses_an_unknown_variant_before_loading_models():
    from typer.testing import CliRunner

    from memgraft.eval.__main__ import app

    res = CliRunner().invoke(app, ["collab", "--variant", "shuffled"])
    assert res.exit_code == 2 and "unknown real-team rows" in res.output


@needs_data
def test_noisy_situatedqa_gets_typos_in_its_questions_words_too():
    data = _variant("situatedqa", "noisy")
    kinds = [k for m in data.memories for k in m["noise"]]
    assert "typo-name" in kinds and "typo-value" in kinds
    assert 0.2 <= sum(bool(m["noise"]) for m in data.memories) / len(data.memories) <= 0.45
