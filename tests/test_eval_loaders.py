"""Evaluation of HGMem runs: the NarrativeQA, NoCha, LongBench and MuSiQue loaders on hand-made files, and
the `questions` command that writes what they load."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memgraft.eval import datasets
from memgraft.eval.__main__ import app
from tests.eval_helpers import _jsonl, _musique


# -- loaders -------------------------------------------------------------------------------------


def test_narrativeqa_loader(tmp_path):
    path = _jsonl(tmp_path / "nqa.jsonl", [
        {"id": 1, "question": "Who?", "answers": ["Ann", "Ann Smith"], "document_id": "d1"},
        {"id": "2", "question": {"text": "Where?"}, "answers": [{"text": "Rome"}]},
        {"id": "3", "question": "When?", "answer": "1900"},
    ])
    qs = datasets.load_dataset("narrativeqa", path)
    assert qs == [
        {"id": "1", "question": "Who?", "answers": ["Ann", "Ann Smith"], "document_id": "d1"},
        {"id": "2", "question": "Where?", "answers": ["Rome"]},
        {"id": "3", "question": "When?", "answers": ["1900"]},
    ]
    _jsonl(path, [{"id": "1", "question": "Who?"}])
    with pytest.raises(datasets.DatasetError, match="missing 'answers'"):
        datasets.load_dataset("narrativeqa", path)


def test_nocha_loader_makes_two_questions_per_pair(tmp_path):
    path = _jsonl(tmp_path / "nocha.jsonl", [
        {"pair_id": "b1-3", "true_claim": "Ahab loses a leg.", "false_claim": "Ahab loses an arm.", "book_title": "Moby-Dick"},
    ])
    t, f = datasets.load_dataset("nocha", path)
    assert t["id"] == "b1-3/true" and t["label"] is True and t["claim"] == "Ahab loses a leg." and t["pair_id"] == "b1-3"
    assert f["id"] == "b1-3/false" and f["label"] is False and f["claim"] == "Ahab loses an arm."
    assert "'Moby-Dick'" in t["question"] and t["question"].endswith("Claim: Ahab loses a leg.")
    assert t["book_title"] == "Moby-Dick"
    _jsonl(path, [{"pair_id": "x", "true_claim": "a", "false_claim": "b"}] * 2)
    with pytest.raises(datasets.DatasetError, match="repeats"):
        datasets.load_dataset("nocha", path)


def test_longbench_loader_drops_the_context(tmp_path):
    path = tmp_path / "lb.json"
    path.write_text(json.dumps([{"_id": "x1", "input": "What themes?", "context": "very long text", "answers": ["a"],
                                 "dataset": "multifieldqa_en"}]))
    assert datasets.load_dataset("longbench", path) == [
        {"id": "x1", "question": "What themes?", "answers": ["a"], "dataset": "multifieldqa_en"}]


def test_musique_loader_with_and_without_its_corpus(tmp_path):
    questions, corpus = _musique(tmp_path)
    [q] = datasets.load_dataset("musique", questions)  # finds mini_corpus.json beside mini.json
    assert q == {"id": "2hop__1", "question": "Q?", "answers": ["x", "y"], "hops": 2, "supporting_doc_ids": ["A #2"]}
    corpus.rename(tmp_path / "elsewhere.json")
    [q] = datasets.load_dataset("musique", questions)
    assert q["supporting"] == [["A", "second A"]] and "supporting_doc_ids" not in q
    [q] = datasets.load_dataset("musique", questions, corpus=tmp_path / "elsewhere.json")
    assert q["supporting_doc_ids"] == ["A #2"]


def test_write_questions_and_the_questions_command(tmp_path):
    out = tmp_path / "q.jsonl"
    assert datasets.write_questions([{"id": "a", "question": "?"}, {"id": "b", "question": "?"}], out, limit=1) == 1
    assert out.read_text() == '{"id": "a", "question": "?"}\n'
    with pytest.raises(datasets.DatasetError, match="repeats"):
        datasets.write_questions([{"id": "a", "question": "?"}] * 2, out)
    questions, _ = _musique(tmp_path)
    res = CliRunner().invoke(app, ["questions", "--dataset", "musique", "--input", str(questions), "--output", str(out)])
    assert res.exit_code == 0, res.output
    assert "wrote 1 musique questions" in res.output
    assert json.loads(out.read_text())["supporting_doc_ids"] == ["A #2"]
    nocha = _jsonl(tmp_path / "n.jsonl", [{"pair_id": str(i), "true_claim": "t", "false_claim": "f"} for i in range(3)])
    res = CliRunner().invoke(app, ["questions", "--dataset", "nocha", "--input", str(nocha), "--output", str(out),
                                   "--limit", "3"])
    assert res.exit_code == 0 and "wrote 4 nocha questions" in res.output  # whole pairs
    res = CliRunner().invoke(app, ["questions", "--dataset", "hotpot", "--input", str(nocha), "--output", str(out)])
    assert res.exit_code != 0


def test_real_musique_questions_file(tmp_path):
    data = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "musique" / "musique_train.json"
    if not data.exists():
        pytest.skip("../shared/data/musique is not here")
    qs = datasets.load_dataset("musique", data)
    assert len(qs) == 100 and sum(len(q["supporting_doc_ids"]) for q in qs) == 237
    assert qs[0]["answers"] == ["G. Stanley Hall", "Stanley Hall"]
