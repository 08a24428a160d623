"""The updater's prompt and the JSON schema one maintenance decision is decoded under.

One request per target memory: the target, the memories it is judged against, the
time, and the rules of the game (team memories outrank individual ones; only a
contradiction is revised; how a revision is written). The schema is four short
fields with length caps, so a 135M model under a grammar finishes in a few dozen
tokens and the SFT/GRPO training (the training issue) learns exactly this shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from memgraft.collab.types import Memory, stamp
from memgraft.models.llm.base import Message

if TYPE_CHECKING:
    from memgraft.collab.maintain.judgement import Target

MAX_MAINTAINED_CHARS = 600
MAX_REASON_CHARS = 160


class MaintenanceJudgement(BaseModel):
    """One decision about one target memory."""

    relation: Literal["compatible", "neutral", "contradiction"]
    action: Literal["keep", "revise"]
    maintained: str = Field(max_length=MAX_MAINTAINED_CHARS,
                            description='the revised text when action is "revise", else ""')
    reason: str = Field(max_length=MAX_REASON_CHARS, description="a few words")


SYSTEM = (
    "You keep a team's shared memory up to date. Team memories (decisions, protocols, instructions) "
    "are authoritative; individual memories (logs, observations, attempts) record what one member did "
    "or saw. You judge whether one memory still holds in the light of other memories. "
    "Reply only with JSON that matches the requested schema."
)

_CONTEXT = {
    "intra": "These team memories were written at the same time ({at}) as the target and take precedence over it:",
    "inter": "These memories were written later, at {at}, and reflect the team's newer state:",
}

JUDGE = """Target memory ({type}, written {time}):
"{text}"

{context}
{references}

Decide:
- relation: "contradiction" if a memory above is about the same thing as the target and says something \
different, so the target no longer holds; "compatible" if one is about the same thing and agrees with it; \
"neutral" if none is about the same thing.
- action: "revise" only for a contradiction that a memory above has the authority to settle (a team memory, \
or a newer note that states a change); otherwise "keep".
- maintained: when revising, the target's text behind a note of what replaced it, exactly like
  [Outdated since {at}; superseded by <the id of the memory that replaced it>] {text}
  and "" when keeping.
- reason: a few words.
Answer as JSON: {{"relation": "...", "action": "...", "maintained": "...", "reason": "..."}}"""


def _line(i: int, m: Memory) -> str:
    return f'{i}. [{m.memory_id}, {m.type}, {stamp(m.time)}] "{m.maintained}"'


def judge_messages(target: "Target") -> list[Message]:
    """The chat for one target: system rules, then the target and what it is judged against."""
    m, at = target.memory, stamp(target.at)
    refs = "\n".join(_line(i, r) for i, r in enumerate(target.against, 1)) or "(none)"
    user = JUDGE.format(type=m.type, time=stamp(m.time), text=m.maintained, at=at,
                        context=_CONTEXT[target.level].format(at=at), references=refs)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
