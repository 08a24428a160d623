"""The updater's SFT/GRPO records and the source split (memgraft.collab.train.training_data)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memgraft.collab.data.generator import generate
from memgraft.collab.maintain.policies import target_from_gold
from memgraft.collab.maintain.prompts import MaintenanceJudgement, judge_messages
from memgraft.collab.train.training_data import (balanced, completion_text, gold_judgement, grpo_record, sft_record,
                                           split_by_source)
from memgraft.models.llm.base import schema_for


@pytest.fixture(scope="module")
def gold():
    return [{**r, "source": "generator"} for r in generate(seed=3, teams=4, groups=6).gold]


def test_sft_record_is_the_updaters_prompt_and_the_gold_json(gold):
    for row in gold[:40]:
        rec = sft_record(row)
        assert rec["prompt"] == judge_messages(target_from_gold(row))
        (turn,) = rec["completion"]
        assert turn["role"] == "assistant"
        j = MaintenanceJudgement.model_validate_json(turn["content"])
        assert (j.relation, j.action) == (row["relation"], row["action"])
        assert j.maintained == (row["maintained"] if row["action"] == "revise" else "")


def test_completion_is_what_the_decoding_grammar_writes(gold):
    """The SFT answer must be a string the deployed grammar accepts (compact separators, raw unicode)."""
    import xgrammar as xgr

    grammar = xgr.Grammar.from_json_schema(json.dumps(schema_for(MaintenanceJudgement)), any_whitespace=False)
    revise = next(r for r in gold if r["action"] == "revise" and any(ord(c) > 127 for c in r["maintained"]))
    keep = next(r for r in gold if r["action"] == "keep")
    for row in (revise, keep):
        text = completion_text(row)
        assert "\\u" not in text
        assert xgr.testing._is_grammar_accept_string(grammar, text), text
    assert not xgr.testing._is_grammar_accept_string(grammar, json.dumps(gold_judgement(keep).model_dump(),
                                                                         indent=1))


def test_grpo_record_carries_the_gold_columns(gold):
    row = next(r for r in gold if r["action"] == "revise")
    rec = grpo_record(row)
    assert rec["prompt"] == judge_messages(target_from_gold(row))
    assert (rec["gold_relation"], rec["gold_action"], rec["gold_maintained"]) == (
        row["relation"], row["action"], row["maintained"])


def test_split_keeps_every_source_on_one_side(gold):
    timeqa_like = [{**r, "team": "timeqa-" + r["team"], "source": "timeqa"} for r in gold]
    train, held = split_by_source(gold + timeqa_like, 0.34, seed=0)
    train_teams, held_teams = {r["team"] for r in train}, {r["team"] for r in held}
    assert not train_teams & held_teams
    assert len(train) + len(held) == 2 * len(gold)
    for source in ("generator", "timeqa"):  # both sources on both sides
        assert {r["source"] for r in train} >= {source} and {r["source"] for r in held} >= {source}
    assert split_by_source(gold, 0.34, seed=0) == split_by_source(gold, 0.34, seed=0)


def test_balanced_takes_relations_in_turn(gold):
    picked = balanced(gold, 12, seed=1)
    assert len(picked) == 12
    assert set(Counter(r["relation"] for r in picked).values()) == {4}
    assert len(balanced(gold, 0, seed=1)) == len(gold)
