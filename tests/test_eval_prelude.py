"""Evaluation of HGMem runs on PRELUDE: its loader on the shipped fixture and on hand-made files, its
`questions` command, and its scorer with numbers worked out by hand."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memgraft.eval import datasets, report, scoring
from memgraft.eval.__main__ import app
from tests.eval_helpers import _jsonl, _write_run, judge_of


PRELUDE_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "prelude" / "public.jsonl"


def test_prelude_loader_reads_the_parquet_it_ships_as_and_the_fixture(tmp_path):
    records = [json.loads(x) for x in PRELUDE_FIXTURE.read_text().splitlines()]
    parquet = tmp_path / "public.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet)
    from_jsonl, from_parquet = (datasets.load_dataset("prelude", p) for p in (PRELUDE_FIXTURE, parquet))
    assert from_jsonl == from_parquet and len(from_parquet) == 4
    q = from_parquet[1]
    assert q["id"] == "salt-002" and q["label"] is False and q["gold"] == "contradict" and q["type"] == "character"
    assert q["book"] == "The Salt Road" and q["char"] == "Mara Vell" and "prequel" not in q
    assert q["question"].startswith("Is the following claim true or false?") and "Mara Vell" in q["claim"]
    assert q["question"].endswith("Prequel: " + records[1]["prequel"])
    assert [x["label"] for x in from_parquet] == [True, False, True, False]


def test_prelude_columns_by_other_names_and_the_errors_that_name_what_is_there(tmp_path):
    csv_path = tmp_path / "p.csv"
    csv_path.write_text("\ufeffbook_name,character,content,answer\nThe Salt Road,Tobin Ash,He sailed at nine.,Consistent\n",
                        encoding="utf-8")  # with the BOM a spreadsheet writes
    [q] = datasets.load_dataset("prelude", csv_path)  # aliases, no id column: the row number
    assert (q["id"], q["char"], q["label"]) == ("0", "Tobin Ash", True)
    odd = _jsonl(tmp_path / "odd.jsonl", [{"novel": "B", "who": "C", "story": "S", "verdict": "contradict"}])
    with pytest.raises(datasets.DatasetError, match="no column for book .*the file has novel, who, story, verdict"):
        datasets.load_dataset("prelude", odd)
    [q] = datasets.load_dataset("prelude", odd, columns={"book": "novel", "char": "who", "prequel": "story",
                                                         "label": "verdict"})
    assert q["label"] is False and q["question"].endswith("Prequel: S")
    with pytest.raises(datasets.DatasetError, match="column 'tale' .* not in the file"):
        datasets.load_dataset("prelude", odd, columns={"book": "novel", "char": "who", "prequel": "tale"})
    for bad, message in ((1, "neither 'consistent' nor 'contradict'"), ("maybe", "neither")):
        path = _jsonl(tmp_path / "bad.jsonl", [{"book": "B", "char": "C", "prequel": "P", "label": bad}])
        with pytest.raises(datasets.DatasetError, match=message):
            datasets.load_dataset("prelude", path)
    path = _jsonl(tmp_path / "dup.jsonl", [{"id": "x", "book": "B", "char": "C", "prequel": "P", "label": "consistent"}] * 2)
    with pytest.raises(datasets.DatasetError, match="'x' repeats"):
        datasets.load_dataset("prelude", path)
    path = _jsonl(tmp_path / "empty.jsonl", [{"book": "B", "char": "C", "prequel": " ", "label": "consistent"}])
    with pytest.raises(datasets.DatasetError, match="empty prequel"):
        datasets.load_dataset("prelude", path)


def test_prelude_questions_command_with_a_column_named(tmp_path):
    src = _jsonl(tmp_path / "p.jsonl", [{"id": i, "book": "B", "char": "C", "story": f"P{i}", "label": "consistent"}
                                        for i in range(3)])
    out = tmp_path / "q.jsonl"
    res = CliRunner().invoke(app, ["questions", "--dataset", "prelude", "--input", str(src), "--output", str(out),
                                   "--column", "prequel=story"])
    assert res.exit_code == 0 and "wrote 3 prelude questions" in res.output, res.output
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["0", "1", "2"]
    res = CliRunner().invoke(app, ["questions", "--dataset", "prelude", "--input", str(src), "--output", str(out)])
    assert res.exit_code == 2 and "--column prequel=COLUMN" in res.output


def _prelude_rows():
    replies = {"a": (True, "True: it fits the book."), "b": (True, "False."), "c": (False, "False, she never sailed."),
               "d": (False, "It is hard to say."), "e": (False, None)}
    return [{"id": i, "question": "Q", "claim": f"claim {i}", "label": label, "method": "hgmem", "answer": reply,
             "error": None if reply else "boom"} for i, (label, reply) in replies.items()]


def test_score_prelude_accuracy_and_macro_f1_by_hand(tmp_path):
    judge, llm = judge_of([json.dumps({"reason": "no verdict", "verdict": "unclear"})])
    metrics, per_q = scoring.score_prelude(_prelude_rows(), judge)
    # right: a, c. wrong: b (said contradict), d (unclear), e (failed, no answer: unclear)
    assert metrics["accuracy"] == pytest.approx(2 / 5) and metrics["n_accuracy"] == 5
    # consistent: tp 1 (a), fn 1 (b), fp 0 -> 2/3; contradict: tp 1 (c), fp 1 (b), fn 2 (d, e) -> 2/5
    assert metrics["macro_f1"] == pytest.approx((2 / 3 + 2 / 5) / 2)
    assert len(llm.requests) == 1 and {q["id"]: q["verdict_from"] for q in per_q}["e"] == "no answer"
    run = tmp_path / "run"
    _write_run(run, [(r, None) for r in _prelude_rows()])
    judge, _ = judge_of([json.dumps({"reason": "", "verdict": "unclear"})])
    result = report.score_runs([run], "prelude", judge=judge)
    assert result["methods"]["hgmem"]["accuracy"] == pytest.approx(2 / 5)
    assert report.columns(result)[:2] == ["accuracy", "macro_f1"]


def test_prelude_keeps_one_language_from_its_column_or_else_the_prequels_script(tmp_path):
    english = datasets.load_dataset("prelude", PRELUDE_FIXTURE, language="English")
    assert len(english) == 4 and {q["language"] for q in english} == {"en"}
    with pytest.raises(datasets.DatasetError, match=r"holds no zh records \(its languages: en\)"):
        datasets.load_dataset("prelude", PRELUDE_FIXTURE, language="zh")
    with pytest.raises(datasets.DatasetError, match="'fr'.* en \\(English\\) and zh \\(Chinese\\)"):
        datasets.load_dataset("prelude", PRELUDE_FIXTURE, language="fr")
    with pytest.raises(datasets.DatasetError, match="prelude only"):
        datasets.load_dataset("musique", PRELUDE_FIXTURE, language="en")
    rows = [{"id": "a", "book": "红楼梦", "char": "林黛玉", "prequel": "黛玉幼年随父在扬州读书, 母亲早逝。", "label": "consistent"},
            {"id": "b", "book": "Emma", "char": "Emma", "prequel": "Emma ran her father's house at twelve.",
             "label": "contradict"},
            {"id": "c", "book": "三国演义", "char": "Liu Bei (刘备)", "prequel": "刘备少时家贫, 以织席贩履为业 (sold straw sandals).",
             "label": "consistent"}]
    by_script = _jsonl(tmp_path / "mixed.jsonl", rows)
    assert [q["id"] for q in datasets.load_dataset("prelude", by_script, language="zh")] == ["a", "c"]
    assert [q["id"] for q in datasets.load_dataset("prelude", by_script, language="en")] == ["b"]
    assert [q["language"] for q in datasets.load_dataset("prelude", by_script)] == ["zh", "en", "zh"]
    # a column says it outright, under its own names for the two, and wins over the script
    by_column = _jsonl(tmp_path / "col.jsonl", [{**r, "lang": lang} for r, lang in zip(rows, ("Chinese", "ZH", "english"))])
    assert [q["id"] for q in datasets.load_dataset("prelude", by_column, language="zh")] == ["a", "b"]
    assert "lang" not in datasets.load_dataset("prelude", by_column)[0]
    out = tmp_path / "q.jsonl"
    res = CliRunner().invoke(app, ["questions", "--dataset", "prelude", "--input", str(by_script), "--output", str(out),
                                   "--language", "zh"])
    assert res.exit_code == 0 and "wrote 2 prelude questions" in res.output, res.output
