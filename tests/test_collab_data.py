"""HiCoMER datasets: the synthetic generator's labels agree with its streams.

The TimeQA converter's are checked in ``test_collab_timeqa.py``, the facts builder's in ``test_collab_facts.py``.
"""

from __future__ import annotations

import json

import pytest

from memgraft.collab.data import Dataset, read_jsonl
from memgraft.collab.data import generator as gen
from tests.collab_data_helpers import assert_consistent


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
