"""One group applied as one database transaction: its memories, its decisions, and the mark that it is in.

Why: a killed ingest must leave whole groups only, so everything the updater writes
for a group goes through this object while ``MemoryBank.group_transaction`` holds
the write lock; decisions are checked against the state *inside* the transaction
(``StaleDecision``) because another writer may have changed a target since the
updater read it. Writes are kept as a pending overlay so this transaction's own
searches see them before the bank's index does.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Sequence

import numpy as np

from memgraft.collab.bank import errors
from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.schema import DECISION_COLUMNS, iso, to_us
from memgraft.collab.data import rewords
from memgraft.collab.types import Action, Decision, Memory, MemoryGroup, MemoryType, Relation
from memgraft.ids import content_hash

if TYPE_CHECKING:
    from memgraft.collab.bank.backend import Backend


class TransactionBank(Protocol):
    """What a transaction reads and writes through: the bank that opened it (``MemoryBank``).

    A protocol, not the class, so that the bank, which opens transactions, stands on this
    module and not the other way round."""

    _tx: "GroupTransaction | None"

    def _team_db(self, team: str) -> "Backend": ...

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None: ...

    def _query_vector(self, query: str | np.ndarray) -> np.ndarray: ...

    def _search_live(self, team: str, q: np.ndarray, k: int, valid_only: bool, types: Sequence[MemoryType] | None,
                     tx: "GroupTransaction | None" = None, earlier_only: bool = False) -> list[tuple[Memory, float]]: ...

    def memory(self, team: str, memory_id: str) -> Memory | None: ...

    def memories(self, team: str, as_of: datetime | None = None, types: Sequence[MemoryType] | None = None,
                 ids: Sequence[str] | None = None) -> list[Memory]: ...


class GroupTransaction:
    """The updater's view while one group is applied: reads see its own writes; commit is all or nothing.

    Use it through ``MemoryBank.group_transaction``: (1) ``add_memories()`` the
    group, (2) read (``memory``, ``memories``, ``search``) to compute decisions,
    (3) ``record`` or ``decide`` them. Memories not added explicitly are added at
    commit, so an applied group always holds its memories.
    """

    def __init__(self, bank: TransactionBank, group: MemoryGroup):
        self.bank, self.group = bank, group
        self.team = group.team
        self.recorded: list[Decision] = []
        self._added = False
        # memory_id -> (vector or None for "unchanged", valid, is_team, time_us): merged into search now,
        # into the bank's index after commit.
        self.pending: dict[str, tuple[np.ndarray | None, bool, bool, int]] = {}
        self.new_ids: set[str] = set()
        self.size: int | None = None  # the team's memory count at commit (``finish``; PostgreSQL's ``teams.memories``)

    # -- writes ----------------------------------------------------------------
    def add_memories(self) -> list[Memory]:
        """Insert the group's memories: original = maintained = content, valid, maintained at the group time."""
        self.insert_memories()
        return self.memories_of_group()

    def insert_memories(self) -> None:
        """``add_memories`` without reading them back (``apply_group``, ``finish``: a round trip fewer)."""
        self._open()
        if self._added:
            raise BankError(f"group {self.group.group_id!r}: memories already added")
        self._added = True
        g, conn = self.group, self.bank._team_db(self.team)
        ids = [m.memory_id for m in g.memories]
        for cond, args in conn.id_filters("memory_id", ids):
            clash = conn.execute(f"SELECT memory_id FROM memories WHERE team = :team AND {cond}",
                                 {"team": g.team, **args}).fetchall()
            if clash:
                raise errors.clash(g.team, [r[0] for r in clash])
        vecs = self.bank._embed([m.content for m in g.memories])
        t = iso(g.time)
        conn.defer_many(  # sent with the next read (the targets' states) or the version bump
            "INSERT INTO memories (team, memory_id, group_id, type, author, original, maintained, time, "
            "relation, action, valid, maintained_at, embedding, original_embedding) "
            "VALUES (?,?,?,?,?,?,?,?,NULL,NULL,1,?,?,?)",
            [(g.team, m.memory_id, g.group_id, m.type, m.author, m.content, m.content, t, t, *(
              (None, None) if vecs is None else (conn.encode_vec(vecs[i]),) * 2)) for i, m in enumerate(g.memories)])
        self.pending.update(new_rows(g, vecs))
        self.new_ids.update(m.memory_id for m in g.memories)

    def record(self, decision: Decision) -> None:
        """Apply one decision to its target and append it to the log (see ``record_many``)."""
        self.record_many([decision])

    def record_many(self, decisions: Iterable[Decision]) -> None:
        """Apply decisions in order; revised texts are embedded in one batch."""
        self._open()
        decisions = list(decisions)
        # the targets' states inside this transaction, read in one query, then as each decision leaves them
        states = {m.memory_id: m for m in self.bank.memories(self.team, ids=list({d.memory_id for d in decisions}))}
        for d in decisions:
            self._check(d, states)
        vec_of = revised_vectors(self.bank._embed, decisions)
        conn = self.bank._team_db(self.team)
        # two batched statements, in the decisions' order, sent with the version bump (PostgreSQL)
        conn.defer_many(
            "UPDATE memories SET maintained = ?, relation = ?, action = ?, valid = ?, maintained_at = ?, "
            "embedding = COALESCE(?, embedding) WHERE team = ? AND memory_id = ?",
            [(d.after, str(d.relation), str(d.action), int(d.valid_after), iso(d.decided_at),
              None if vec_of.get(id(d)) is None else conn.encode_vec(vec_of[id(d)]), d.team, d.memory_id)
             for d in decisions])
        conn.defer_many(
            f"INSERT INTO decisions ({DECISION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(d.decision_id, d.team, d.memory_id, d.group_id, iso(d.decided_at), d.level, str(d.relation),
              str(d.action), d.before, d.after, int(d.valid_before), int(d.valid_after), d.decided_by, d.reason)
             for d in decisions])
        pending_after(self.pending, decisions, vec_of, [states[d.memory_id].type for d in decisions],
                      [states[d.memory_id].time for d in decisions])
        self.recorded += decisions

    def decide(self, memory_id: str, *, level: str, relation: Relation | str, action: Action | str,
               decided_by: str, after: str | None = None, valid_after: bool | None = None,
               reason: str = "") -> Decision:
        """Build a decision from the target's current state (before, validity, time, id) and record it."""
        current = self.memory(memory_id)
        if current is None:
            raise BankError(f"team {self.team!r} has no memory {memory_id!r}")
        decision = Decision(
            decision_id="dec-" + content_hash(self.team, self.group.group_id, memory_id, level, len(self.recorded)),
            team=self.team, memory_id=memory_id, group_id=self.group.group_id, decided_at=self.group.time,
            level=level, relation=Relation(relation), action=Action(action), before=current.maintained,
            after=current.maintained if after is None else after,
            valid_before=current.valid, valid_after=current.valid if valid_after is None else valid_after,
            decided_by=decided_by, reason=reason)  # type: ignore[arg-type]
        self.record(decision)
        return decision

    def _open(self) -> None:
        """Refuse use after the ``with`` block: a write then would land outside any group transaction."""
        if self.bank._tx is not self:
            raise BankError(f"group {self.group.group_id!r}: its transaction has ended")

    def _check(self, d: Decision, states: dict[str, Memory]) -> None:
        belongs(d, self.group)
        current = states.get(d.memory_id)
        if current is None:
            raise errors.missing_target(d.decision_id, self.team, d.memory_id)
        if current.maintained != d.before or current.valid != d.valid_before:
            raise errors.stale(d.decision_id, d.memory_id)
        states[d.memory_id] = replace(current, maintained=d.after, valid=d.valid_after)

    def finish(self) -> int:
        """Add the memories if the caller did not, bump the team's version; returns the new version."""
        if not self._added:
            self.insert_memories()
        conn = self.bank._team_db(self.team)
        row = conn.execute(f"UPDATE teams SET version = version + 1 WHERE team = ? RETURNING version{conn.team_size}",
                           (self.team,)).fetchone()
        self.size = int(row[1]) if len(row) > 1 else None  # the team's memories, where the backend counts them
        return row[0]

    # -- reads (inside the transaction) ----------------------------------------
    def memory(self, memory_id: str) -> Memory | None:
        return self.bank.memory(self.team, memory_id)

    def memories(self, types: Sequence[MemoryType] | None = None) -> list[Memory]:
        return self.bank.memories(self.team, types=types)

    def memories_of_group(self) -> list[Memory]:
        return self.bank.memories(self.team, ids=[m.memory_id for m in self.group.memories])

    def search(self, query: str | np.ndarray, k: int, *, valid_only: bool = False,
               types: Sequence[MemoryType] | None = None, earlier_only: bool = False) -> list[tuple[Memory, float]]:
        """Dense search over the team as this transaction sees it; ``earlier_only`` leaves out this group."""
        self._open()
        return self.bank._search_live(self.team, self.bank._query_vector(query), k, valid_only, types,
                                      tx=self, earlier_only=earlier_only)


def belongs(d: Decision, g: MemoryGroup) -> None:
    """Refuse a decision of another group (every decision is the group's, at the group's time)."""
    if (d.team, d.group_id) != (g.team, g.group_id) or d.decided_at != g.time:
        raise BankError(f"decision {d.decision_id!r} belongs to ({d.team!r}, {d.group_id!r}, "
                        f"{d.decided_at.isoformat()}), not to this group ({g.team!r}, {g.group_id!r}, "
                        f"{g.time.isoformat()})")


def new_rows(g: MemoryGroup, vecs: np.ndarray | None) -> dict[str, tuple[np.ndarray | None, bool, bool, int]]:
    """The group's new memories as ``GroupTransaction.pending`` holds them: vector, valid, is_team, time (µs)."""
    t_us = to_us(g.time)
    return {m.memory_id: (None if vecs is None else vecs[i], True, m.type == "team", t_us)
            for i, m in enumerate(g.memories)}


def revised_vectors(embed: Callable[[Sequence[str]], np.ndarray | None],
                    decisions: Sequence[Decision]) -> dict[int, np.ndarray | None]:
    """The new vector of each decision that revises what its target says (by ``id``), embedded in one batch; None
    where the bank keeps no vectors. A revision that only labels the text outdated (:func:`~memgraft.collab.data.
    rewords`) keeps its vector: a memory's vector is of what it says, and its validity is the valid flag's."""
    revised = [d for d in decisions if rewords(d.before, d.after)]
    vecs = embed([d.after for d in revised]) if revised else None
    return {id(d): (None if vecs is None else vecs[i]) for i, d in enumerate(revised)}


def pending_after(pending: dict[str, tuple[np.ndarray | None, bool, bool, int]], decisions: Sequence[Decision],
                  vec_of: dict[int, np.ndarray | None], types: Sequence[str], times: Sequence[datetime | str]) -> None:
    """``pending`` (memory id -> vector or None for "unchanged", valid, is_team, time µs) as ``decisions`` leave
    their targets (each target's type and time given in the decisions' order); ``vec_of``: the new vector of each
    decision that revised its target's text (by ``id``)."""
    for d, kind, when in zip(decisions, types, times):
        vec, old = vec_of.get(id(d)), pending.get(d.memory_id)
        pending[d.memory_id] = (vec if vec is not None else (old[0] if old is not None else None), d.valid_after,
                                kind == "team", to_us(when))
