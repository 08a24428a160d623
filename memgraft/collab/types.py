"""The HiCoMER records: stream input at the boundary (pydantic), bank rows inside (dataclasses).

Input lines are validated once, where they enter, so a malformed stream fails
loudly before it touches the bank; inside the library plain dataclasses keep the
hot paths (search, as-of rebuilds) free of validation cost.

Times: every datetime is timezone-aware UTC inside the library. A naive time in
the input (``"2024-03-01T09:00:00"``) is taken to be UTC, never local time, so the
same stream gives the same bank on every machine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator, model_validator

MemoryType = Literal["team", "individual"]
Level = Literal["intra", "inter"]


def as_utc(value: datetime) -> datetime:
    """Aware UTC; a naive time is read as UTC (the stream format's rule)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def stamp(at: datetime) -> str:
    """Times as the datasets write them (UTC, ``YYYY-MM-DDTHH:MM:SS``), so revised texts match the gold ones."""
    return as_utc(at).replace(tzinfo=None).isoformat(timespec="seconds")


class Relation(StrEnum):
    """How a target memory relates to the memory that triggered its review."""

    compatible = "compatible"
    neutral = "neutral"
    contradiction = "contradiction"


class Action(StrEnum):
    """What the updater did to the target's maintained text."""

    keep = "keep"
    revise = "revise"


class _Boundary(BaseModel):
    # Extra fields (a generator's gold labels, a question's type) ride along
    # untouched so evaluators downstream still see them.
    model_config = ConfigDict(extra="allow")


class StreamMemory(_Boundary):
    """One memory as written in the stream: team (authoritative) or individual."""

    memory_id: str
    type: MemoryType
    author: str
    content: str


class MemoryGroup(_Boundary):
    """One time-aligned group G_t of a team's stream: one line of the stream JSONL."""

    team: str
    group_id: str
    time: datetime
    memories: list[StreamMemory]

    @field_validator("time")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return as_utc(v)

    @model_validator(mode="after")
    def _unique_ids(self) -> "MemoryGroup":
        ids = [m.memory_id for m in self.memories]
        if len(ids) != len(set(ids)):
            raise ValueError(f"group {self.group_id!r} repeats a memory_id")
        return self


class MemoryQuestion(_Boundary):
    """A question to a team's memory, optionally as of a time, with gold memory ids and answer."""

    id: str
    team: str
    question: str
    time: datetime | None = None
    valid: list[str] | None = None
    outdated: list[str] | None = None
    answer: str | None = None

    @field_validator("time")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else as_utc(v)


@dataclass
class Memory:
    """A bank row: the original text forever, the maintained text as the updater left it."""

    memory_id: str
    team: str
    group_id: str
    type: MemoryType
    author: str
    original: str
    maintained: str
    time: datetime  # when it was written: its group's time
    relation: Relation | None
    action: Action | None
    valid: bool
    maintained_at: datetime  # the group time of its last maintenance decision (or of its own group)
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def revised(self) -> bool:
        return self.maintained != self.original

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view (no embedding): what the CLI and answer prompts show."""
        row = asdict(self)
        row.pop("embedding")
        row["time"] = self.time.isoformat()
        row["maintained_at"] = self.maintained_at.isoformat()
        row["relation"] = None if self.relation is None else str(self.relation)
        row["action"] = None if self.action is None else str(self.action)
        return row


@dataclass(frozen=True)
class Decision:
    """One maintenance decision, as appended to the bank's never-rewritten log.

    ``decided_at`` is the time of the group whose update triggered it (not the wall
    clock), so as-of views follow the stream's own timeline.
    """

    decision_id: str
    team: str
    memory_id: str
    group_id: str
    decided_at: datetime
    level: Level
    relation: Relation
    action: Action
    before: str
    after: str
    valid_before: bool
    valid_after: bool
    decided_by: str  # the policy or model that decided
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "decided_at", as_utc(self.decided_at))
        object.__setattr__(self, "relation", Relation(self.relation))
        object.__setattr__(self, "action", Action(self.action))
        if self.level not in ("intra", "inter"):
            raise ValueError(f"decision level must be 'intra' or 'inter', not {self.level!r}")
        if self.action is Action.keep and self.after != self.before:
            raise ValueError(f"decision {self.decision_id!r}: action 'keep' must leave the maintained text unchanged")
