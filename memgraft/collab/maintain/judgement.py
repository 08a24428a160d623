"""What a judgement is: the target judged, the verdict, and the one rule every verdict passes.

Why its own module: the updater, every policy (rules, LLM, the pair judge, Mem0-style) and
the pair models all speak these types; with them here no policy has to import another
(the factory :func:`~memgraft.collab.maintain.policies.make_policy` stands above them all).
:func:`normalise` is the rule :mod:`.policies` describes; :func:`may_revise` is authority.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

from memgraft.collab.data import revised_text
from memgraft.collab.maintain import rules
from memgraft.collab.types import Action, Level, Memory, Relation, stamp

if TYPE_CHECKING:
    from memgraft.collab.maintain.topic import TeamWords

# The relations a pair model tells apart, in the order of its outputs.
LABELS = (Relation.neutral, Relation.compatible, Relation.contradiction)


@dataclass(frozen=True)
class Target:
    """One memory to judge, and what it is judged against.

    ``intra``: an individual memory of the triggering group against that group's team
    memories. ``inter``: an earlier memory against the maintained triggering group.
    """

    level: Level
    memory: Memory
    against: tuple[Memory, ...]
    at: datetime  # the triggering group's time
    words: "TeamWords | None" = None  # the team's topic-word counts (memgraft.collab.maintain.topic), if read

    def where(self) -> str:
        """The target in words, for errors."""
        m = self.memory
        return (f"{self.level} target {m.memory_id!r} (team {m.team!r}, group {m.group_id!r}) "
                f"judged at {stamp(self.at)}")


@dataclass(frozen=True)
class Judgement:
    relation: Relation
    action: Action
    maintained: str  # the target's maintained text after the decision
    reason: str = ""
    reference: str = ""  # a revision: the id of the memory that supersedes the target


@runtime_checkable
class UpdatePolicy(Protocol):
    name: str  # recorded as Decision.decided_by

    def judge(self, targets: Sequence[Target]) -> list[Judgement]: ...


def reference_for(target: Target) -> Memory | None:
    """The reference a revision most likely means: team memories first, then the most overlapping text."""
    if not target.against:
        return None
    return max(target.against, key=lambda r: (r.type == "team", rules.overlap(target.memory.maintained, r.maintained)[0]))


def normalise(target: Target, relation: Relation | str, action: Action | str, maintained: str, reason: str = "",
              reference: Memory | None = None) -> Judgement:
    """Apply the module's rules to a raw (relation, action, text)."""
    relation, action = Relation(relation), Action(action)
    before = target.memory.maintained
    if action is Action.revise and relation is not Relation.contradiction:
        action = Action.keep
    if action is Action.keep:
        return Judgement(relation, action, before, reason)
    text = maintained.strip()
    ref = reference or reference_for(target)
    if not text or text == before:
        text = revised_text(before, stamp(target.at), ref.memory_id if ref is not None else "a newer memory")
    return Judgement(relation, action, text, reason, ref.memory_id if ref is not None else "")


def may_revise(target: Memory, reference: Memory) -> bool:
    """Authority: a team memory settles a conflict; an individual note settles one with another
    individual note only when it states a change or a prohibition."""
    if reference.type == "team":
        return True
    if target.type == "team":
        return False
    text = reference.maintained
    return rules.has_change_cue(text) or rules.has_prohibition_cue(text)
