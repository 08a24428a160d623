"""The GRPO reward terms on hand-made completions (memgraft.collab.train.rewards)."""

from __future__ import annotations

import json

import pytest

from memgraft.collab.train.rewards import (GoldDecision, RewardWeights, consistency_reward, format_reward, parse_completion,
                                     revision_reward, total_reward)

TARGET = "Log: today's dispatch used Depot 3 as the returns warehouse."
REF = "Protocol: every member uses Depot 11 as the returns warehouse."
GOLD_TEXT = f"[Outdated since 2025-01-06T09:00:00; superseded by p1] {TARGET}"
REVISE = GoldDecision("contradiction", "revise", GOLD_TEXT)
KEEP = GoldDecision("compatible", "keep", TARGET)


def answer(relation: str, action: str, maintained: str = "", reason: str = "short") -> str:
    return json.dumps({"relation": relation, "action": action, "maintained": maintained, "reason": reason})


@pytest.mark.parametrize("text", [
    "The memory is outdated.",  # prose
    '```json\n{"relation": "contradiction"}\n```',  # fenced, incomplete
    answer("contradiction", "revise", GOLD_TEXT)[:-5],  # truncated
    answer("contradiction", "revise", GOLD_TEXT) + " Hope this helps!",  # text after the object
    "",
])
def test_invalid_output_scores_lowest_on_format(text):
    valid = answer("contradiction", "revise", GOLD_TEXT)
    assert format_reward(valid) == 1.0
    assert format_reward(text) == 0.0 < format_reward(valid)
    assert parse_completion(text) is None
    assert consistency_reward(text, REVISE) == 0.0
    assert revision_reward(text, REVISE) == -1.0  # no parseable answer where a revision was needed: missed
    # an unparseable answer is below every parseable one for the same gold decision
    worst_valid = answer("neutral", "keep")
    assert total_reward(text, REVISE) < total_reward(worst_valid, REVISE)
    assert total_reward(text, KEEP) < total_reward(answer("contradiction", "revise", "x"), KEEP)


def test_off_schema_object_gets_partial_format_credit():
    bad_label = answer("contradicts", "revise", GOLD_TEXT)
    too_long = answer("contradiction", "revise", "x" * 700)
    missing_field = json.dumps({"relation": "contradiction", "action": "revise"})
    assert format_reward(bad_label) == format_reward(too_long) == 0.5
    assert format_reward(missing_field) == 0.0
    assert consistency_reward(bad_label, REVISE) == 0.0  # not a judgement: no credit for the action either


def test_consistency_is_half_relation_half_action():
    assert consistency_reward(answer("contradiction", "revise", GOLD_TEXT), REVISE) == 1.0
    assert consistency_reward(answer("contradiction", "keep"), REVISE) == 0.5
    assert consistency_reward(answer("neutral", "revise", "x"), REVISE) == 0.5
    assert consistency_reward(answer("neutral", "keep"), REVISE) == 0.0


def test_correct_keep_scores_above_unneeded_revise():
    keep = answer("compatible", "keep")
    unneeded = answer("compatible", "revise", GOLD_TEXT)
    assert revision_reward(keep, KEEP) == revision_reward(unneeded, KEEP) == 0.0  # the action's cost is in R_cons
    assert consistency_reward(keep, KEEP) > consistency_reward(unneeded, KEEP)
    assert total_reward(keep, KEEP) > total_reward(unneeded, KEEP)


def test_close_revision_scores_above_long_rewrite_and_missed_revision():
    close = answer("contradiction", "revise", GOLD_TEXT.replace("today's ", ""))
    rewrite = answer("contradiction", "revise",
                     "This log is no longer valid because the team protocol now says that every member has to use "
                     "Depot 11 as the returns warehouse, so the dispatch that used Depot 3 as the returns warehouse "
                     "followed an outdated rule and should be redone with the warehouse the protocol names.")
    missed = answer("contradiction", "keep")
    exact = answer("contradiction", "revise", GOLD_TEXT)
    assert revision_reward(exact, REVISE) == pytest.approx(1.0)
    assert 0.5 < revision_reward(close, REVISE) < 1.0
    assert revision_reward(rewrite, REVISE) < revision_reward(close, REVISE)
    assert revision_reward(missed, REVISE) == -1.0
    assert total_reward(exact, REVISE) > total_reward(close, REVISE) > total_reward(rewrite, REVISE) \
        > total_reward(missed, REVISE)


def test_weights_come_from_the_settings(settings):
    w = RewardWeights.from_settings(settings.hicomer)
    assert (w.consistency, w.revision, w.format) == (settings.hicomer.reward_consistency,
                                                     settings.hicomer.reward_revision, settings.hicomer.reward_format)
    text = answer("contradiction", "revise", GOLD_TEXT)
    only_format = RewardWeights(0.0, 0.0, 1.0)
    assert total_reward(text, REVISE, only_format) == 1.0
    assert total_reward(text, REVISE, w) == pytest.approx(w.consistency + w.revision + w.format)
