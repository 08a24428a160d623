"""The updater's training data: gold maintenance decisions as SFT and GRPO records.

Every record's prompt is exactly :func:`~memgraft.collab.maintain.prompts.judge_messages` of the
Target the updater would build for that gold row (:func:`~memgraft.collab.maintain.policies.target_from_gold`),
and the SFT answer is the gold decision as :class:`~memgraft.collab.maintain.prompts.MaintenanceJudgement`
JSON written the way the deployed decoding grammar writes it (fields in schema order, ``", "``
and ``": "`` separators, characters unescaped). So a trained model is used by the real
:class:`~memgraft.collab.maintain.policies.LLMPolicy` unchanged.

Decisions are split by *source* (a generated team, a TimeQA page): every decision of one
team's stream lands on one side, so no document is in both training and evaluation.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Sequence

from pydantic import ValidationError

from memgraft.collab.data import Row
from memgraft.collab.maintain.policies import target_from_gold
from memgraft.collab.maintain.prompts import MaintenanceJudgement, judge_messages
from memgraft.models.llm.base import Message

if TYPE_CHECKING:
    from memgraft.config import TrainingSettings

# Short, fixed reasons: the model learns the decision, not a paraphrase game, and they cost few tokens.
REASONS = {
    ("contradiction", "revise", "intra"): "a team memory of the same time overrules it",
    ("contradiction", "revise", "inter"): "a newer memory replaces it",
    ("contradiction", "keep", "intra"): "conflicts, but cannot be overruled",
    ("contradiction", "keep", "inter"): "conflicts, but cannot be overruled",
    ("compatible", "keep", "intra"): "agrees with a memory above",
    ("compatible", "keep", "inter"): "agrees with a memory above",
    ("neutral", "keep", "intra"): "no memory on the same topic",
    ("neutral", "keep", "inter"): "no memory on the same topic",
}


def load_decisions(training: "TrainingSettings") -> list[Row]:
    """Gold decisions from the generator (``teams`` x ``groups``) plus ``timeqa_pages`` TimeQA pages, each with its ``source``."""
    from memgraft.collab.data.generator import generate

    rows = [{**r, "source": "generator"} for r in generate(seed=training.seed, teams=training.teams,
                                                             groups=training.groups).gold]
    if training.timeqa and training.timeqa_pages:
        from memgraft.collab.data.timeqa import convert, load_pages

        dataset, _ = convert(load_pages(training.timeqa, training.timeqa_pages))
        rows += [{**r, "source": "timeqa"} for r in dataset.gold]
    return [r for r in rows if expressible(r)]


def expressible(row: Row) -> bool:
    """Whether the gold decision fits the schema (a revised text over the schema's length cap does not)."""
    try:
        gold_judgement(row)
    except ValidationError:
        return False
    return True


def split_by_source(rows: Sequence[Row], heldout_fraction: float, seed: int) -> tuple[list[Row], list[Row]]:
    """(train, held-out): within each source, a seeded ``heldout_fraction`` of its teams is held out.

    Each source keeps at least one team on each side when it has two or more.
    """
    by_source: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r["team"] not in by_source[r.get("source", "")]:
            by_source[r.get("source", "")].append(r["team"])
    held: set[str] = set()
    for source, teams in sorted(by_source.items()):
        teams = sorted(teams)
        random.Random(f"split:{seed}:{source}").shuffle(teams)
        n = max(1, round(len(teams) * heldout_fraction))
        if len(teams) > 1:
            n = min(n, len(teams) - 1)
        held.update(teams[:n])
    return [r for r in rows if r["team"] not in held], [r for r in rows if r["team"] in held]


def balanced(rows: Sequence[Row], n: int | None, seed: int) -> list[Row]:
    """Up to ``n`` rows (all when None or 0), seeded, taken round-robin over the gold relations so rare labels show."""
    pools: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        pools[r["relation"]].append(r)
    rng = random.Random(f"balanced:{seed}")
    queues = []
    for rel in sorted(pools):
        pool = list(pools[rel])
        rng.shuffle(pool)
        queues.append(pool)
    out: list[Row] = []
    while any(queues) and (not n or len(out) < n):
        for q in queues:
            if q and (not n or len(out) < n):
                out.append(q.pop())
    return out


def gold_judgement(row: Row) -> MaintenanceJudgement:
    """The gold decision in the updater's schema: the revised text when revising, else ""."""
    revise = row["action"] == "revise"
    return MaintenanceJudgement(relation=row["relation"], action=row["action"],
                                maintained=row["maintained"] if revise else "",
                                reason=REASONS[(row["relation"], row["action"], row["level"])])


def completion_text(row: Row) -> str:
    """The gold answer as the decoding grammar writes JSON (``", "``/``": "``, unescaped characters)."""
    return json.dumps(gold_judgement(row).model_dump(), ensure_ascii=False)


def prompt_messages(row: Row) -> list[Message]:
    return judge_messages(target_from_gold(row))


def sft_record(row: Row) -> dict[str, Any]:
    """A TRL prompt-completion record: the judge chat, and the gold JSON as the assistant turn."""
    return {"prompt": prompt_messages(row), "completion": [{"role": "assistant", "content": completion_text(row)}]}


def grpo_record(row: Row) -> dict[str, Any]:
    """A TRL prompt record with the gold columns the reward functions read."""
    return {"prompt": prompt_messages(row), "gold_relation": row["relation"], "gold_action": row["action"],
            "gold_maintained": row["maintained"]}
