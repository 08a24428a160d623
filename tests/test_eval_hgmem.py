"""Evaluation of HGMem runs: the LLM judges (on a scripted LLM), NoCha's pair rule, the
dataset loaders on hand-made files, and `score` on a hand-made run folder with numbers
worked out by hand."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memgraft.config import GenerationSettings
from memgraft.eval import datasets, report, scoring
from memgraft.eval.__main__ import app
from memgraft.eval.judges import (
    CLAIM, CORRECTNESS, OUTPUT_MODELS, PAIRWISE, RATING, AnswerVerdict, Judge, read_claim_verdict,
)
from memgraft.models.llm.base import ChatRequest
from tests.doubles import ScriptedLLM


def judge_of(script, **kw) -> tuple[Judge, ScriptedLLM]:
    llm = ScriptedLLM(script)
    return Judge.from_llm(llm, GenerationSettings(json_retries=2), **kw), llm


def user(request: ChatRequest) -> str:
    return request.messages[-1]["content"]


def verdict(correct: bool, reason: str = "r") -> str:
    return json.dumps({"reason": reason, "correct": correct})


# -- judges ---------------------------------------------------------------------------------------


def test_every_judge_schema_is_a_json_object_schema():
    for model in OUTPUT_MODELS:
        schema = model.model_json_schema()
        assert schema["type"] == "object" and "reason" in schema["properties"]
    # the answer judge gives the two fields it is asked for
    assert set(AnswerVerdict.model_json_schema()["properties"]) == {"correct", "reason"}


def test_correctness_judge_sees_references_and_decodes_under_its_schema():
    judge, llm = judge_of([verdict(True, "same person"), verdict(False, "another city")])
    out = judge.correctness([("Who?", ["G. Stanley Hall", "Stanley Hall"], "Hall, the psychologist"),
                             ("Where?", ["Paris"], "Lyon")])
    assert [o.value.correct for o in out] == [True, False] and out[0].value.reason == "same person"
    first = user(llm.requests[0])
    assert "- G. Stanley Hall\n- Stanley Hall" in first and "Hall, the psychologist" in first
    assert llm.requests[0].json_schema == AnswerVerdict.model_json_schema()
    assert llm.requests[0].temperature == 0.0 and llm.requests[0].max_new_tokens == 512
    assert len(llm.calls) == 1  # both questions in one batch
    assert judge.session.usage.calls == 2


def test_a_judge_that_stays_malformed_is_a_recorded_failure_not_a_guess():
    judge, llm = judge_of(["not json", '{"correct": "maybe"}', '{"reason": "x"}', verdict(True)])
    [bad] = judge.correctness([("Q?", ["a"], "a")])
    assert not bad.ok and bad.value is None and bad.attempts == 3
    assert "correctness judge: no valid AnswerVerdict after 3 attempts" in bad.error
    assert judge.failures == [bad.error] and judge.session.usage.calls == 3
    # a reply that turns valid on a retry is a success
    judge, _ = judge_of(["{", verdict(False)])
    [ok] = judge.correctness([("Q?", ["a"], "b")])
    assert ok.ok and ok.value.correct is False and ok.attempts == 2 and judge.failures == []


def test_a_candidate_missing_is_shown_to_the_judge_as_no_answer():
    judge, llm = judge_of([verdict(False)])
    judge.correctness([("Q?", ["a"], None)])
    assert "Candidate answer: (no answer)" in user(llm.requests[0])


@pytest.mark.parametrize("reply, expected", [
    ("True.", "true"), ("true", "true"), ("Yes, the claim holds.", "true"), ("**True** because", "true"),
    ("The claim is false: she never left.", "false"), ("False", "false"), ("No. He died first.", "false"),
    ("Answer: FALSE", "false"), ("It's true", "true"), ("Incorrect, it was Bob.", "false"),
    ("Not true.", None), ("Partly true", None), ("The book says he left.", None), ("", None), (None, None),
    ("true-ish", None),
])
def test_reading_a_claim_verdict_without_the_llm(reply, expected):
    assert read_claim_verdict(reply) == expected


def test_claim_judge_asks_the_llm_only_about_replies_it_cannot_read():
    def script(req: ChatRequest) -> str:
        text = user(req)
        if "never sailed" in text:
            return "garbage"  # stays invalid on every retry
        return json.dumps({"reason": "it calls the claim accurate", "verdict": "true"})

    judge, llm = judge_of(script)
    out = judge.claims([
        ("Ahab hunts the whale.", "True. He does."),
        ("Ahab hunts the whale.", "The novel supports this claim entirely."),
        ("Ishmael never sailed.", "It depends on the chapter."),
        ("Queequeg is a harpooner.", None),
    ])
    assert [(o.verdict, o.source) for o in out] == [("true", "parsed"), ("true", "llm"), (None, "llm"), ("unclear", "no answer")]
    assert out[2].error.startswith("claim judge: no valid ClaimVerdict after 3 attempts")
    assert len(llm.requests) == 1 + 3  # one reply judged once, one three times; none for the others
    assert "Claim: Ahab hunts the whale." in user(llm.requests[0]) and "supports this claim" in user(llm.requests[0])


def test_rating_judges_name_their_criterion():
    judge, llm = judge_of([json.dumps({"reason": "covers most", "score": 8}),
                           json.dumps({"reason": "x", "score": 11}) , json.dumps({"reason": "x", "score": 0}),
                           json.dumps({"reason": "one angle", "score": 3})])
    [c] = judge.rate("comprehensiveness", [("Why?", "Because A, B and C.")])
    assert c.value.score == 8 and "Comprehensiveness: how much of what the question asks" in user(llm.requests[0])
    [d] = judge.rate("diversity", [("Why?", "Because A.")])  # 11 and 0 are out of range: retried
    assert d.value.score == 3 and d.attempts == 3 and "Diversity: how many distinct" in user(llm.requests[1])


def test_pairwise_comparison_asks_both_orders():
    def prefers_rich(req: ChatRequest) -> str:
        text = user(req)
        a = text.split("Answer A: ")[1].split("\n\nAnswer B: ")[0]
        b = text.split("Answer B: ")[1].split("\n\n")[0]
        winner = "tie" if ("rich" in a) == ("rich" in b) else ("A" if "rich" in a else "B")
        return json.dumps({"reason": "", "winner": winner})

    judge, llm = judge_of(prefers_rich)
    out = judge.compare("diversity", [("Q?", "a rich answer", "plain"), ("Q?", "plain", "a rich answer"),
                                      ("Q?", "plain", "plain too")])
    assert [o.score for o in out] == [1.0, 0.0, 0.5]
    assert len(llm.requests) == 6
    first, mirrored = user(llm.requests[0]), user(llm.requests[3])
    assert "Answer A: a rich answer" in first and "Answer B: a rich answer" in mirrored

    judge, _ = judge_of(lambda req: json.dumps({"reason": "", "winner": "A"}))  # always picks the first shown
    assert [o.score for o in judge.compare("comprehensiveness", [("Q?", "x", "y")])] == [0.5]
    judge, _ = judge_of([json.dumps({"reason": "", "winner": "A"}), "bad", "bad", "bad"])
    [failed] = judge.compare("comprehensiveness", [("Q?", "x", "y")])
    assert failed.score is None and "comprehensiveness comparison" in failed.error


def test_prompt_templates_fill_without_leftover_fields():
    for template, fields in ((CORRECTNESS, dict(question="q", references="r", candidate="c")),
                             (CLAIM, dict(claim="c", reply="r")),
                             (RATING, dict(criterion="k", question="q", answer="a")),
                             (PAIRWISE, dict(criterion="k", question="q", answer_a="a", answer_b="b"))):
        assert "{" not in template.format(**fields)


# -- NoCha: a pair counts only when both claims are right ----------------------------------------------


def test_pair_accuracy_by_hand():
    pairs = {"p1": ["p1/true", "p1/false"], "p2": ["p2/true", "p2/false"], "p3": ["p3/true", "p3/false"],
             "p4": ["p4/true", "p4/false"], "p5": ["p5/true"]}
    correct = {"p1/true": True, "p1/false": True,     # both right: counts
               "p2/true": True, "p2/false": False,    # one wrong: does not
               "p3/true": True, "p3/false": None,     # a judge failure, nothing wrong: left out
               "p4/true": None, "p4/false": False,    # a judge failure, but already wrong: counts as wrong
               "p5/true": True}                       # half a pair: wrong
    acc, counted, left_out = scoring.pair_accuracy(correct, pairs)
    assert (acc, counted, left_out) == (pytest.approx(1 / 4), 4, 1)
    # a claim never answered counts as wrong
    assert scoring.pair_accuracy({"a/true": True}, {"a": ["a/true", "a/false"]})[0] == 0.0


def _nocha_rows():
    rows = []
    for pair, (t_reply, f_reply) in {"p1": ("True, she does.", "False."),
                                     "p2": ("True.", "True, I think."),
                                     "p3": ("Yes.", "Hard to say; it may hold.")}.items():
        for label, reply in ((True, t_reply), (False, f_reply)):
            rows.append({"id": f"{pair}/{'true' if label else 'false'}", "question": "Is it true?", "claim": f"claim {pair} {label}",
                         "label": label, "pair_id": pair, "method": "hgmem", "answer": reply, "error": None})
    return rows


def test_score_nocha_counts_a_pair_only_when_both_claims_are_right():
    # p3/false goes to the judge, which reads it as unclear: wrong
    judge, llm = judge_of([json.dumps({"reason": "no verdict", "verdict": "unclear"})])
    metrics, per_q = scoring.score_nocha(_nocha_rows(), judge)
    # claims right: p1/true p1/false p2/true p3/true = 4 of 6; pairs right: p1 only = 1 of 3
    assert metrics["claim_accuracy"] == pytest.approx(4 / 6) and metrics["n_claims"] == 6
    assert metrics["pair_accuracy"] == pytest.approx(1 / 3) and metrics["n_pairs"] == 3
    assert metrics["judge_failures"] == 0 and len(llm.requests) == 1
    assert {q["id"]: q["verdict_from"] for q in per_q}["p3/false"] == "llm"


def test_score_nocha_leaves_out_a_pair_whose_judge_failed():
    rows = _nocha_rows()
    judge, _ = judge_of(["bad"] * 3)
    metrics, _ = scoring.score_nocha(rows, judge)
    # p3/false unjudged and p3/true right: p3 is left out; p1 right, p2 wrong
    assert metrics["pair_accuracy"] == 0.5 and metrics["n_pairs"] == 2 and metrics["pairs_left_out"] == 1
    assert metrics["judge_failures"] == 1 and metrics["claim_accuracy"] == pytest.approx(4 / 5)


# -- NarrativeQA and LongBench scorers -----------------------------------------------------------------


def test_score_narrativeqa_by_hand():
    rows = [
        {"id": "a", "question": "Q1", "answers": ["x"], "answer": "x!", "error": None},
        {"id": "b", "question": "Q2", "answers": ["y"], "answer": "z", "error": None},
        {"id": "c", "question": "Q3", "answers": ["w"], "answer": None, "error": "boom"},  # system failure: wrong, no call
        {"id": "d", "question": "Q4", "answers": ["v"], "answer": "v", "error": None},  # judge fails: left out
    ]

    def script(req):
        text = user(req)
        if "Q4" in text:
            return "nope"
        return verdict("Q1" in text)

    judge, llm = judge_of(script)
    metrics, per_q = scoring.score_narrativeqa(rows, judge)
    assert metrics == {"accuracy": pytest.approx(1 / 3), "n_accuracy": 3, "judge_failures": 1}
    assert len(llm.requests) == 2 + 3
    assert [q.get("correct") for q in per_q] == [True, False, False, None]


def test_score_longbench_ratings_and_wins_against_a_baseline():
    rows = [{"id": "1", "question": "Q1", "answer": "long rich answer", "error": None},
            {"id": "2", "question": "Q2", "answer": "short", "error": None},
            {"id": "3", "question": "Q3", "answer": None, "error": "failed"}]
    base = [{"id": "1", "question": "Q1", "answer": "short", "error": None},
            {"id": "2", "question": "Q2", "answer": None, "error": "failed"},
            {"id": "3", "question": "Q3", "answer": "short", "error": None}]

    def script(req):
        text = user(req)
        if "Rate one answer" in text:
            return json.dumps({"reason": "", "score": 9 if "rich" in text else 4})
        a = text.split("Answer A: ")[1].split("\n\n")[0]
        return json.dumps({"reason": "", "winner": "A" if "rich" in a else "B"})

    judge, llm = judge_of(script)
    metrics, per_q = scoring.score_longbench(rows, judge, base)
    # ratings: 9, 4, and 1 for the failed answer
    assert metrics["comprehensiveness"] == pytest.approx(14 / 3) and metrics["diversity"] == pytest.approx(14 / 3)
    # wins: q1 judged both orders -> 1; q2 baseline failed -> 1; q3 method failed -> 0
    assert metrics["comprehensiveness_win"] == pytest.approx(2 / 3) and metrics["n_diversity_win"] == 3
    assert metrics["judge_failures"] == 0
    assert len(llm.requests) == 2 * 2 + 2 * 2  # 2 ratings x 2 criteria, 1 comparison x 2 orders x 2 criteria
    assert per_q[2]["comprehensiveness"] == 1


# -- loaders -------------------------------------------------------------------------------------


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


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


def _musique(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "mini_corpus.json"
    corpus.write_text(json.dumps([{"title": "A", "text": "first A"}, {"title": "B", "text": "only B"},
                                  {"title": "A", "text": "second A"}]))
    questions = tmp_path / "mini.json"
    questions.write_text(json.dumps([{
        "id": "2hop__1", "question": "Q?", "answer": "x", "answer_aliases": ["y"],
        "paragraphs": [{"title": "A", "paragraph_text": "second A", "is_supporting": True},
                       {"title": "B", "paragraph_text": "only B", "is_supporting": False}],
        "question_decomposition": [{}, {}]}]))
    return questions, corpus


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


def test_real_musique_questions_file(tmp_path):
    data = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "musique" / "musique_train.json"
    if not data.exists():
        pytest.skip("../shared/data/musique is not here")
    qs = datasets.load_dataset("musique", data)
    assert len(qs) == 100 and sum(len(q["supporting_doc_ids"]) for q in qs) == 237
    assert qs[0]["answers"] == ["G. Stanley Hall", "Stanley Hall"]


# -- score on a hand-made run ---------------------------------------------------------------------------


def _graph(tmp_path: Path) -> Path:
    graph = tmp_path / "graph"
    graph.mkdir()
    pq.write_table(pa.table({"chunk_id": ["c1", "c2", "c3", "c4", "c5"], "doc_id": ["D1", "D1", "D2", "D3", "D4"],
                             "text": [""] * 5}), graph / "chunks.parquet")
    return graph


def _write_run(run: Path, rows_and_traces: list[tuple[dict, dict | None]], absolute: bool = False) -> None:
    (run / "traces").mkdir(parents=True, exist_ok=True)
    lines = []
    for row, trace in rows_and_traces:
        if trace is not None:
            path = run / "traces" / f"{row['id']}.{row['method']}.json"
            path.write_text(json.dumps(trace))
            row = {**row, "trace": str(path) if absolute else f"some/old/cwd/traces/{path.name}"}
        else:
            row = {**row, "trace": None}
        lines.append(json.dumps(row))
    (run / "answers.jsonl").write_text("\n".join(lines) + "\n")


GOLD = {"q1": {"answers": ["Paris", "City of Light"], "supporting_doc_ids": ["D1", "D2"]},
        "q2": {"answers": ["1999"], "supporting_doc_ids": ["D3", "D4"]}}


def _row(qid: str, method: str, answer, error=None, prompt=0, completion=0, calls=0, seconds=0.0, steps=1):
    return {"id": qid, "question": f"question {qid}?", "method": method, "answer": answer, "error": error,
            "steps": steps, "llm_calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
            "seconds": seconds, **GOLD[qid]}


def hgmem_trace(*steps: list[list[str]], answer: list[str]) -> dict:
    return {"question": "?", "steps": [{"step": i, "subqueries": [{"chunk_ids": ids} for ids in sq]}
                                       for i, sq in enumerate(steps)], "answer": {"chunk_ids": answer}}


def make_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two run folders (hgmem; naive and graph in one file) and the graph they used."""
    hg, base = tmp_path / "run_hgmem", tmp_path / "run_base"
    _write_run(hg, [
        # q1: "the Paris" -> EM 1, F1 1; chunks c1 c2 c4 (+ answer c1) -> D1 D3: recall 1/2, 2 passages
        (_row("q1", "hgmem", "the Paris", prompt=100, completion=20, calls=4, seconds=1.0, steps=2),
         hgmem_trace([["c1", "c2"], ["c4"]], answer=["c1"])),
        # q2: "in 1999 it was" vs "1999": EM 0, F1 = 2 * (1/4 * 1) / (1/4 + 1) = 0.4;
        # chunks c3, then c4 c5 (+ answer c5) -> D2 D3 D4: recall 2/2, 3 passages
        (_row("q2", "hgmem", "in 1999 it was", prompt=300, completion=40, calls=6, seconds=3.0, steps=3),
         hgmem_trace([["c3"]], [["c4"], ["c5"]], answer=["c5"])),
    ], absolute=True)
    _write_run(base, [
        # naive q1: wrong, retrieved c3 -> D2: recall 1/2; q2 failed, nothing retrieved
        (_row("q1", "naive", "London", prompt=50, completion=10, calls=1, seconds=0.5),
         {"question": "?", "retrieved": {"chunk_ids": ["c3"], "scores": [0.5]}}),
        (_row("q2", "naive", None, error="TimeoutError: slow", seconds=2.5, steps=0), None),
        # graph: q1 right, c1 c3 -> D1 D2: recall 1; q2 first failed, then answered (the last line counts)
        (_row("q1", "graph", "Paris.", prompt=80, completion=10, calls=1, seconds=1.0),
         {"question": "?", "retrieved": {"entity_ids": ["e1"], "chunk_ids": ["c1", "c3"]}}),
        (_row("q2", "graph", None, error="boom"), None),
        (_row("q2", "graph", "1999", prompt=120, completion=10, calls=1, seconds=2.0),
         {"question": "?", "retrieved": {"chunk_ids": ["c5"]}}),
    ])
    return hg, base, _graph(tmp_path)


@pytest.fixture()
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_runs(tmp_path)


def test_trace_chunk_ids_take_everything_retrieved():
    assert report.trace_chunk_ids(hgmem_trace([["c1", "c2"], ["c2", "c4"]], [["c9"]], answer=["c1", "c7"])) == \
        ["c1", "c2", "c4", "c9", "c7"]
    assert report.trace_chunk_ids({"retrieved": {"chunk_ids": ["b", "a", "b"]}}) == ["b", "a"]


def test_score_musique_runs_by_hand(runs):
    hg, base, graph = runs
    result = report.score_runs([hg, base], "musique", graph=str(graph))
    m = result["methods"]
    assert list(m) == ["hgmem", "naive", "graph"]
    assert m["hgmem"]["em"] == 0.5 and m["hgmem"]["f1"] == pytest.approx((1 + 0.4) / 2)
    assert m["hgmem"]["recall"] == pytest.approx((0.5 + 1.0) / 2) and m["hgmem"]["passages/q"] == 2.5
    assert m["hgmem"]["tokens/q"] == (120 + 340) / 2 and m["hgmem"]["llm_calls/q"] == 5
    assert m["hgmem"]["seconds/q"] == 2.0 and m["hgmem"]["steps/q"] == 2.5 and m["hgmem"]["failures"] == 0
    assert m["naive"]["em"] == 0 and m["naive"]["f1"] == 0 and m["naive"]["recall"] == 0.25
    assert m["naive"]["failures"] == 1 and m["naive"]["questions"] == 2 and m["naive"]["passages/q"] == 0.5
    assert m["naive"]["tokens/q"] == 30 and m["naive"]["seconds/q"] == 1.5
    assert m["graph"]["em"] == 1 and m["graph"]["f1"] == 1 and m["graph"]["recall"] == 0.75
    assert m["graph"]["failures"] == 0 and m["graph"]["questions"] == 2
    per_q = {(q["method"], q["id"]): q for q in result["questions"]}
    assert per_q[("hgmem", "q1")]["missed"] == ["D2"] and per_q[("naive", "q2")]["failed"]
    # without the graph, no recall (and a note saying so)
    result = report.score_runs([hg], "musique")
    assert "recall" not in result["methods"]["hgmem"] and "recall" in result["note"]


def test_score_refuses_a_graph_the_run_did_not_use(runs, tmp_path):
    hg, _, _ = runs
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"chunk_id": ["c1"], "doc_id": ["D1"]}), other / "chunks.parquet")
    with pytest.raises(ValueError, match="not in the graph's chunks.parquet"):
        report.score_runs([hg], "musique", graph=str(other))


def test_gold_joined_from_the_dataset_file(tmp_path):
    """A run made straight from MuSiQue's JSON: its lines carry no reference answers."""
    questions, _ = _musique(tmp_path)
    run = tmp_path / "run"
    graph = tmp_path / "g"
    graph.mkdir()
    pq.write_table(pa.table({"chunk_id": ["k1", "k2"], "doc_id": ["A #2", "B"]}), graph / "chunks.parquet")
    _write_run(run, [({"id": "2hop__1", "question": "Q?", "method": "naive", "answer": "Y", "answer_aliases": ["y"],
                       "error": None}, {"retrieved": {"chunk_ids": ["k2", "k1"]}})])
    m = report.score_runs([run], "musique", graph=str(graph), questions=questions)["methods"]["naive"]
    assert m["em"] == 1.0 and m["recall"] == 1.0 and m["passages/q"] == 2
    # the same gold from a questions file written by `questions`
    qfile = tmp_path / "q.jsonl"
    datasets.write_questions(datasets.load_dataset("musique", questions), qfile)
    assert report.score_runs([run], "musique", graph=str(graph), questions=qfile)["methods"]["naive"]["em"] == 1.0


def test_same_method_in_two_folders_is_shown_per_folder(runs, tmp_path):
    hg, _, graph = runs
    again = tmp_path / "again"
    again.mkdir()
    (again / "answers.jsonl").write_text((hg / "answers.jsonl").read_text())
    result = report.score_runs([hg, again], "musique", graph=str(graph))
    assert list(result["methods"]) == ["hgmem (run_hgmem)", "hgmem (again)"]


def test_score_command_prints_the_table_and_writes_json(runs):
    hg, base, graph = runs
    res = CliRunner().invoke(app, ["score", "--run", str(hg), "--run", str(base), "--dataset", "musique",
                                   "--graph", str(graph)])
    assert res.exit_code == 0, res.output
    assert "hgmem" in res.output and "naive" in res.output and "recall" in res.output and "0.750" in res.output
    written = json.loads((hg.parent / "scores.musique.json").read_text())
    assert written["methods"]["graph"]["recall"] == 0.75 and len(written["questions"]) == 6
    res = CliRunner().invoke(app, ["score", "--run", str(hg / "nope"), "--dataset", "musique"])
    assert res.exit_code == 2 and "no answers.jsonl" in res.output


def test_score_runs_with_a_judge_on_nocha(tmp_path):
    run = tmp_path / "run"
    _write_run(run, [(r, None) for r in _nocha_rows()])
    judge, _ = judge_of([json.dumps({"reason": "", "verdict": "unclear"})])
    result = report.score_runs([run], "nocha", judge=judge)
    assert result["methods"]["hgmem"]["pair_accuracy"] == pytest.approx(1 / 3)
    assert result["judge"]["calls"] == 1 and result["judge"]["failures"] == 0
    assert report.columns(result)[:2] == ["pair_accuracy", "claim_accuracy"]
    with pytest.raises(ValueError, match="LLM judge"):
        report.score_runs([run], "nocha")


def test_longbench_baseline_is_one_of_the_methods(tmp_path):
    run = tmp_path / "run"
    rows = [{"id": "1", "question": "Q", "method": m, "answer": a, "error": None}
            for m, a in (("hgmem", "rich answer"), ("naive", "plain"))]
    _write_run(run, [(r, None) for r in rows])

    def script(req):
        text = user(req)
        if "Rate one answer" in text:
            return json.dumps({"reason": "", "score": 7})
        a = text.split("Answer A: ")[1].split("\n\n")[0]
        return json.dumps({"reason": "", "winner": "A" if "rich" in a else "B"})

    judge, _ = judge_of(script)
    result = report.score_runs([run], "longbench", judge=judge, baseline="naive")
    assert result["methods"]["hgmem"]["diversity_win"] == 1.0 and "diversity_win" not in result["methods"]["naive"]
    assert result["methods"]["naive"]["comprehensiveness"] == 7
    with pytest.raises(ValueError, match="must name one"):
        report.score_runs([run], "longbench", judge=judge, baseline="hgmem-nomerge")


def test_hyperedge_size_overall_and_per_question_kind():
    from memgraft.eval.scoring import usage_metrics

    rows = [{"id": "2hop__1", "hyperedge_size": 2.0}, {"id": "2hop__2", "hyperedge_size": 3.0},
            {"id": "4hop1__3", "hyperedge_size": 5.0}, {"id": "4hop1__4", "error": "x", "answer": None}]
    m = usage_metrics(rows)
    assert m["hyperedge_size"] == pytest.approx(10 / 3)
    assert m["hyperedge_size[2hop]"] == 2.5 and m["hyperedge_size[4hop1]"] == 5.0
    assert "hyperedge_size" not in usage_metrics([{"id": "q", "answer": "a"}])  # naive, graph: no memory
