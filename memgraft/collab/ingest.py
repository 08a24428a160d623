"""A memory stream into a bank: read and check the whole stream, then apply each team's groups in time order.

The Ray pipeline (``pipelines/ingest_memories.py``) runs :func:`ingest_team` on actors,
one team at a time each; :func:`ingest_stream` is the same loop in one process.

A bad line stops the run **before anything is written**: every line is validated
first and all errors come back together, each as ``file:line: reason``. Skipping a bad
line instead would leave a hole in its team's timeline that could never be filled
later (a team's groups apply in time order), so a line never silently vanishes.

Resuming is the bank's: a group is committed with its decisions in one transaction,
so a killed run leaves whole groups only, and :meth:`Updater.apply` skips the ones
already applied. A team whose group fails (an LLM answer that stays invalid, say)
stops at that group, with nothing of it written; the other teams go on, and a rerun
starts that team again at the failed group.

A database outage (a PostgreSQL restart) does not stop a team: the group's write is
tried again with backoff for ``bank.outage_retry_s`` (``bank.outage``: safe because a
group commits whole, once, under its ``(team, group_id)`` key); past that the team stops
with one line naming the bank, and a rerun resumes there.

Vectors: the updater embeds each group's texts when it gets there, a call of two or
three short texts per group, where the embedder's fixed cost per call dominates
(measured on 2 cores, all-MiniLM fp32: 49 ms per text in calls of 2, 29 in one call
of 60). A team's texts are all known up front, so :func:`ingest_team` embeds the next
``PREFETCH_GROUPS`` groups' texts in one call into the bank's :class:`MemoEmbedder`,
and each group then finds its vectors there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Sequence

from pydantic import ValidationError

from memgraft.collab.bank import BankError, pool
from memgraft.collab.bank.outage import Outage, ride_out
from memgraft.collab.types import MemoryGroup
from memgraft.collab.maintain.updater import MemoEmbedder, UpdateReport, Updater
from memgraft.models.llm.session import Usage

MAX_ERRORS_SHOWN = 20
PREFETCH_GROUPS = 64  # groups whose texts are embedded in one call (a few hundred short texts)


class StreamError(ValueError):
    """The stream has bad lines; ``errors`` holds every one as ``file:line: reason``."""

    def __init__(self, path: str, errors: list[str]):
        self.path, self.errors = path, errors
        shown = "\n  ".join(errors[:MAX_ERRORS_SHOWN])
        more = f"\n  ... and {len(errors) - MAX_ERRORS_SHOWN} more" if len(errors) > MAX_ERRORS_SHOWN else ""
        super().__init__(f"{path}: {len(errors)} bad line(s); nothing was written:\n  {shown}{more}")


@dataclass
class Stream:
    path: str
    teams: dict[str, list[MemoryGroup]]  # each team's groups in time order (file order among equal times)

    @property
    def n_groups(self) -> int:
        return sum(len(g) for g in self.teams.values())


def _reason(err: ValidationError) -> str:
    e = err.errors()[0]
    where = ".".join(str(p) for p in e.get("loc", ()))
    return f"{where}: {e['msg']}" if where else e["msg"]


def read_stream(path: str | Path) -> Stream:
    """Validate every line as a :class:`MemoryGroup` and group them by team; raises :class:`StreamError`."""
    path = str(path)
    errors: list[str] = []
    teams: dict[str, list[MemoryGroup]] = {}
    group_line: dict[tuple[str, str], int] = {}
    memory_line: dict[tuple[str, str], int] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                g = MemoryGroup.model_validate(json.loads(line))
            except json.JSONDecodeError as err:
                errors.append(f"{path}:{n}: not JSON ({err.msg} at column {err.colno})")
                continue
            except ValidationError as err:
                errors.append(f"{path}:{n}: not a memory group ({_reason(err)})")
                continue
            first = group_line.setdefault((g.team, g.group_id), n)
            if first != n:
                errors.append(f"{path}:{n}: team {g.team!r} group {g.group_id!r} repeats line {first}")
                continue
            for m in g.memories:
                seen = memory_line.setdefault((g.team, m.memory_id), n)
                if seen != n:
                    errors.append(f"{path}:{n}: team {g.team!r} memory {m.memory_id!r} repeats line {seen}")
            teams.setdefault(g.team, []).append(g)
    if errors:
        raise StreamError(path, errors)
    for groups in teams.values():
        groups.sort(key=lambda g: g.time)  # stable: equal times keep file order
    return Stream(path, teams)


@dataclass
class TeamStats:
    """What one team's run did; ``error`` set when a group failed and the team stopped there."""

    team: str
    groups: int = 0  # in the stream
    applied: int = 0
    skipped: int = 0  # already in the bank
    decisions: int = 0
    revisions: int = 0
    history: int = 0  # sum of |H_t|
    seconds: float = 0.0
    retries: int = 0  # writes tried again through a database outage (``outage_retry_s``)
    outage_s: float = 0.0  # seconds waited for the database
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    failed_group: str | None = None

    def add(self, report: UpdateReport) -> None:
        if report.skipped:
            self.skipped += 1
            return
        self.applied += 1
        self.decisions += len(report.decisions)
        self.revisions += report.revisions
        self.history += report.n_history
        if report.usage is not None:
            self.usage.add(report.usage)


def ingest_team(updater: Updater, groups: Sequence[MemoryGroup], *, limit: int | None = None,
                on_group: Callable[[UpdateReport], None] | None = None,
                outage_retry_s: float | None = None) -> TeamStats:
    """Apply one team's groups in order; stop at the first failure (or after ``limit`` applied groups).

    A group's write that meets a database outage is tried again for ``outage_retry_s`` (default: the
    process's ``bank.outage_retry_s``) before the team stops."""
    stats = TeamStats(team=groups[0].team if groups else "", groups=len(groups))
    budget = pool.current().outage_retry_s if outage_retry_s is None else outage_retry_s
    t0 = time.perf_counter()
    for i, g in enumerate(groups):
        if limit is not None and stats.applied >= limit:
            break
        if i % PREFETCH_GROUPS == 0:
            try:
                prefetch_vectors(updater, groups[i:i + PREFETCH_GROUPS])
            except BankError:
                pass  # only a head start: each group embeds its own texts if the memo lacks them
        try:
            report = apply_through_outage(updater, g, budget, stats)
        except Exception as err:  # noqa: BLE001 - recorded, and the team stops: its later groups wait for this one
            stats.error, stats.failed_group = f"{type(err).__name__}: {err}", g.group_id
            break
        stats.add(report)
        if on_group is not None:
            on_group(report)
    stats.seconds = time.perf_counter() - t0
    return stats


def apply_through_outage(updater: Updater, group: MemoryGroup, budget_s: float, stats: TeamStats) -> UpdateReport:
    """``updater.apply(group)``, ridden through an outage (``outage.ride_out``). A retry that finds the group
    applied by this very attempt (a restart lost ``COMMIT``'s answer) reports it applied, decisions read back."""
    bank, outage = updater.bank, Outage()
    started = datetime.now(timezone.utc)
    try:
        report = ride_out(lambda: updater.apply(group), budget_s, bank.where,
                          f"applying team {group.team!r} group {group.group_id!r}", outage)
        if report.skipped and outage.retries:
            at = bank.applied_at(group.team, group.group_id)
            if at is not None and at >= started:  # committed by the attempt whose answer was lost
                report.skipped = False
                report.decisions = [d for d in bank.decisions(group.team) if d.group_id == group.group_id]
        return report
    finally:
        stats.retries += outage.retries
        stats.outage_s += outage.waited_s


def prefetch_vectors(updater: Updater, groups: Sequence[MemoryGroup]) -> int:
    """Embed the texts of the groups not yet applied in one call, into the bank's memo; returns how many.

    Only with a :class:`MemoEmbedder` (anything else would embed them a second time),
    and no more than half its size, so the window's vectors are still there when used.
    """
    memo = updater.bank.embedder
    if not isinstance(memo, MemoEmbedder):
        return 0
    todo = [m.content for g in groups if not updater.bank.is_applied(g.team, g.group_id) for m in g.memories]
    todo = list(dict.fromkeys(todo))[:memo.size // 2]
    if todo:
        memo.encode(todo)
    return len(todo)


def ingest_stream(updater: Updater, stream: Stream, teams: Iterable[str] | None = None) -> list[TeamStats]:
    """Every team of the stream, one after another, in this process (no Ray)."""
    return [ingest_team(updater, stream.teams[t]) for t in (teams if teams is not None else sorted(stream.teams))]
