"""HiCoMER's conflict resolution: of two retrieved memories that contradict, keep the one with priority.

P(m) = α·[team] + β·[valid] + γ·NormTime(maintained_at) (DESIGN.md). With the
default weights (α=1, β=0.5, γ=0.25) a team memory beats any individual one, a
valid memory beats an outdated one of its type, and recency decides the rest.

Tie-breaks when priorities are equal (ours: the paper's Appendix A, which may fix
them, is not available here), in this order: team over individual, valid over
outdated, later maintenance time, later written time, then the smaller
``memory_id`` (only so the outcome never depends on input order).

Memories are taken in priority order (highest first) and each is checked against
the ones already kept, so a memory that is itself dropped never knocks out
another: if A beats B and B would beat C, C survives unless A contradicts it.
Survivors keep their retrieval order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Generic, NamedTuple, Sequence, TypeVar

from memgraft.collab.types import Memory
from memgraft.collab.retrieve.validity import normalised_time
from memgraft.config import HiCoMERSettings

Item = TypeVar("Item")  # a Memory, or anything with a ``.memory`` (a retriever Hit)
Contradicts = Callable[[Memory, Memory], bool]

_RULES = ("priority", "team over individual", "valid over outdated", "later maintenance", "later write",
          "smaller memory_id")


def memory_of(item: object) -> Memory:
    return item if isinstance(item, Memory) else item.memory  # type: ignore[attr-defined]


def priority(memory: Memory, *, t0: datetime, t_now: datetime, settings: HiCoMERSettings) -> float:
    """α·[team] + β·[valid] + γ·NormTime(maintained_at), NormTime as the validity scorer's feature."""
    return (settings.priority_alpha * (memory.type == "team") + settings.priority_beta * memory.valid
            + settings.priority_gamma * normalised_time(memory.maintained_at, t0, t_now))


class Dropped(NamedTuple, Generic[Item]):
    item: Item
    beaten_by: Item
    reason: str


@dataclass
class Resolution(Generic[Item]):
    kept: list[Item] = field(default_factory=list)
    dropped: list[Dropped[Item]] = field(default_factory=list)


def precedence(memory: Memory, *, t0: datetime, t_now: datetime, settings: HiCoMERSettings) -> tuple:
    """The sort key of the module's order: priority, then the tie-breaks; larger wins on every part."""
    return (priority(memory, t0=t0, t_now=t_now, settings=settings), memory.type == "team", memory.valid,
            memory.maintained_at, memory.time, _Smaller(memory.memory_id))


class _Smaller(str):
    """A memory id that compares reversed, so 'larger wins' picks the smaller id."""

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__lt__(self, other)


def _reason(winner: tuple, loser: tuple) -> str:
    for rule, w, l in zip(_RULES, winner, loser):
        if w != l:
            return rule if rule != "priority" else f"priority {w:.3f} > {l:.3f}"
    return "same memory"


def resolve(items: Sequence[Item], contradicts: Contradicts, *, settings: HiCoMERSettings, t0: datetime,
            t_now: datetime) -> Resolution[Item]:
    """Drop the lower-precedence side of every contradicting pair, higher-precedence memories first.

    ``contradicts(higher, lower)`` is asked once per pair it must decide, the higher-
    precedence memory first; it is not asked about a memory already dropped.
    """
    keys = [precedence(memory_of(x), t0=t0, t_now=t_now, settings=settings) for x in items]
    order = sorted(range(len(items)), key=lambda i: keys[i], reverse=True)
    kept: list[int] = []
    dropped: list[Dropped[Item]] = []
    for i in order:
        winner = next((j for j in kept if contradicts(memory_of(items[j]), memory_of(items[i]))), None)
        if winner is None:
            kept.append(i)
        else:
            dropped.append(Dropped(items[i], items[winner], _reason(keys[winner], keys[i])))
    return Resolution(kept=[items[i] for i in sorted(kept)], dropped=dropped)
