"""Evaluation of HGMem runs: the LLM judges (on a scripted LLM), NoCha's pair rule, and the NoCha,
NarrativeQA and LongBench scorers with numbers worked out by hand."""

import json

import pytest

from memgraft.eval import scoring
from memgraft.eval.judges import (
    CLAIM, CORRECTNESS, OUTPUT_MODELS, PAIRWISE, RATING, AnswerVerdict, read_claim_verdict,
)
from memgraft.models.llm.base import ChatRequest
from tests.eval_helpers import _nocha_rows, judge_of, user


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
