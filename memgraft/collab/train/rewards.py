"""The updater's GRPO reward, R = λ1·R_cons + λ2·R_rev + λ3·R_fmt (DESIGN.md, HiCoMER).

Each term is a pure function of one completion (the text the model wrote) and the gold
decision of its target, so GRPO, the tests and any offline analysis score the same way.
GRPO samples without the decoding grammar the deployed updater runs under, which is why
the format term exists at all.

* :func:`format_reward` (R_fmt, in {0, 0.5, 1}): 1 when the whole completion is one JSON
  object valid under :class:`~memgraft.collab.maintain.prompts.MaintenanceJudgement`; 0.5 for a JSON
  object that names all four fields but breaks the schema (a label outside the enum, a
  text over its length cap, a wrong type); 0 for anything else (prose, a code fence, text
  around the object, a truncated object).
* :func:`consistency_reward` (R_cons, in [0, 1]): agreement with the gold state, half for
  the relation and half for the action (the validity flag follows the action: a revised
  memory is outdated). 0 for a completion that does not parse.
* :func:`revision_reward` (R_rev, in [-1, 1]): revises when needed, minimally. A needed
  revision scores the ROUGE-L F1 of its maintained text against the gold maintained text
  minus a length penalty, ``min(1, max(0, |pred|/|gold| - 1))`` in tokens, so a faithful
  minimal edit approaches 1 and a rewrite twice the gold length loses a whole point. A
  missing revision (keep, or no parseable answer, where gold revises) scores -1. An
  unneeded revision and a correct keep both score 0 here: R_cons already charges the
  wrong action, and this term only prices the text of revisions.

Under these rules an unparseable completion scores below every parseable one for the
same gold decision, a correct keep above an unneeded revision, and a close revision above
a long rewrite (``tests/test_rewards.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from pydantic import ValidationError

from memgraft.collab.evaluate.metrics import rouge_l, rouge_tokens
from memgraft.collab.maintain.prompts import MaintenanceJudgement

FIELDS = tuple(MaintenanceJudgement.model_fields)


@dataclass(frozen=True)
class GoldDecision:
    """What a completion is scored against: the gold labels and the gold maintained text."""

    relation: str
    action: str
    maintained: str  # the gold maintained text (the original when the gold action is keep)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "GoldDecision":
        """From a gold.jsonl row (``memgraft.collab.data``)."""
        return cls(relation=row["relation"], action=row["action"], maintained=row["maintained"])


@dataclass(frozen=True)
class RewardWeights:
    consistency: float = 1.0  # λ1
    revision: float = 0.5  # λ2
    format: float = 0.2  # λ3

    @classmethod
    def from_settings(cls, hicomer: Any) -> "RewardWeights":
        return cls(hicomer.reward_consistency, hicomer.reward_revision, hicomer.reward_format)


def parse_completion(text: str) -> MaintenanceJudgement | None:
    """The completion as a judgement, or None unless the whole (stripped) text is one valid object."""
    try:
        return MaintenanceJudgement.model_validate_json(text.strip())
    except (ValidationError, ValueError):
        return None


def format_reward(text: str) -> float:
    """R_fmt: 1 schema-valid, 0.5 a JSON object with every field but off-schema, else 0."""
    if parse_completion(text) is not None:
        return 1.0
    try:
        obj = json.loads(text.strip())
    except ValueError:
        return 0.0
    return 0.5 if isinstance(obj, dict) and all(k in obj for k in FIELDS) else 0.0


def consistency_reward(text: str, gold: GoldDecision) -> float:
    """R_cons: 0.5 for the gold relation plus 0.5 for the gold action; 0 when unparseable."""
    j = parse_completion(text)
    if j is None:
        return 0.0
    return 0.5 * (j.relation == gold.relation) + 0.5 * (j.action == gold.action)


def revision_reward(text: str, gold: GoldDecision) -> float:
    """R_rev: similarity of a needed revision to the gold text less a length penalty; -1 for a missed one."""
    j = parse_completion(text)
    needed = gold.action == "revise"
    if j is None or j.action != "revise":
        return -1.0 if needed else 0.0
    if not needed:
        return 0.0
    pred, ref = rouge_tokens(j.maintained), rouge_tokens(gold.maintained)
    if not pred:
        return 0.0
    penalty = min(1.0, max(0.0, len(pred) / max(1, len(ref)) - 1.0))
    return max(-1.0, rouge_l(j.maintained, gold.maintained) - penalty)


def total_reward(text: str, gold: GoldDecision, weights: RewardWeights = RewardWeights()) -> float:
    """R = λ1·R_cons + λ2·R_rev + λ3·R_fmt."""
    return (weights.consistency * consistency_reward(text, gold) + weights.revision * revision_reward(text, gold)
            + weights.format * format_reward(text))
