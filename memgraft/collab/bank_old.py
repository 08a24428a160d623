"""HiCoMER's memory bank: one SQLite file, one transaction per group, nothing ever lost.

Why it looks like this:
- A group's new memories, the updater's decisions about them and the mark that
  the group was applied commit together or not at all, so a killed ingest job
  resumes by skipping applied groups (``is_applied``) and never sees half a group.
- ``original`` text is immutable and ``decisions`` is append-only, both enforced
  by SQLite triggers, so the state as of any past time is rebuilt from the log:
  a memory's as-of state is its last decision with ``decided_at <= as_of``
  (``decided_at`` is the triggering group's time, the stream's own clock). Groups
  of a team must arrive in time order, which makes that rebuild at "now" equal
  the live rows.
- The embedding of each memory's *maintained* text is stored with its row
  (float32 BLOB; the embedder's name and dim in ``meta``) and re-embedded when a
  decision revises the text. Per-team numpy matrices are rebuilt from those
  blobs lazily on first use after opening, kept in sync on our own commits, and
  reloaded when another process has written the team (``teams.version``).
- As-of search does not store an embedding per decision: rows untouched since
  ``as_of`` reuse the stored vector, and the few whose as-of text differs from
  today's are re-embedded (LRU-cached). That keeps the bank one vector per memory.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from memgraft.collab.types import Action, Decision, Memory, MemoryGroup, MemoryType, Relation, as_utc
from memgraft.ids import content_hash
from memgraft.models.embedder import Embedder

SCHEMA_VERSION = "1"
EMBED_CACHE_SIZE = 4096
_IN_CHUNK = 500  # ids per SQL IN (...) list

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS teams (team TEXT PRIMARY KEY, version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS groups (
    team TEXT NOT NULL REFERENCES teams(team), group_id TEXT NOT NULL,
    time TEXT NOT NULL, applied_at TEXT NOT NULL,
    PRIMARY KEY (team, group_id));
CREATE TABLE IF NOT EXISTS memories (
    team TEXT NOT NULL, memory_id TEXT NOT NULL, group_id TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('team', 'individual')),
    author TEXT NOT NULL, original TEXT NOT NULL, maintained TEXT NOT NULL, time TEXT NOT NULL,
    relation TEXT CHECK (relation IN ('compatible', 'neutral', 'contradiction')),
    action TEXT CHECK (action IN ('keep', 'revise')),
    valid INTEGER NOT NULL CHECK (valid IN (0, 1)), maintained_at TEXT NOT NULL,
    embedding BLOB,
    PRIMARY KEY (team, memory_id),
    FOREIGN KEY (team, group_id) REFERENCES groups(team, group_id));
CREATE INDEX IF NOT EXISTS memories_by_time ON memories(team, time);
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, decision_id TEXT NOT NULL UNIQUE,
    team TEXT NOT NULL, memory_id TEXT NOT NULL, group_id TEXT NOT NULL, decided_at TEXT NOT NULL,
    level TEXT NOT NULL CHECK (level IN ('intra', 'inter')),
    relation TEXT NOT NULL CHECK (relation IN ('compatible', 'neutral', 'contradiction')),
    action TEXT NOT NULL CHECK (action IN ('keep', 'revise')),
    before TEXT NOT NULL, after TEXT NOT NULL,
    valid_before INTEGER NOT NULL, valid_after INTEGER NOT NULL,
    decided_by TEXT NOT NULL, reason TEXT NOT NULL,
    FOREIGN KEY (team, memory_id) REFERENCES memories(team, memory_id),
    FOREIGN KEY (team, group_id) REFERENCES groups(team, group_id));
CREATE INDEX IF NOT EXISTS decisions_by_memory ON decisions(team, memory_id, decided_at, seq);
CREATE INDEX IF NOT EXISTS decisions_by_time ON decisions(team, decided_at);
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only'); END;
CREATE TRIGGER IF NOT EXISTS memories_no_delete BEFORE DELETE ON memories
    BEGIN SELECT RAISE(ABORT, 'memories are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS memories_keep_original BEFORE UPDATE OF
    team, memory_id, group_id, type, author, original, time ON memories
    BEGIN SELECT RAISE(ABORT, 'a memory''s original text and provenance never change'); END;
CREATE TRIGGER IF NOT EXISTS groups_no_delete BEFORE DELETE ON groups
    BEGIN SELECT RAISE(ABORT, 'applied groups are never forgotten'); END;
"""

_LIVE = ("memory_id, team, group_id, type, author, original, maintained, time, "
         "relation, action, valid, maintained_at")
_AS_OF = """
SELECT m.memory_id, m.team, m.group_id, m.type, m.author, m.original, COALESCE(d.after, m.original),
       m.time, d.relation, d.action, COALESCE(d.valid_after, 1), COALESCE(d.decided_at, m.time), m.rowid
FROM memories m LEFT JOIN decisions d ON d.seq = (
    SELECT d2.seq FROM decisions d2
    WHERE d2.team = m.team AND d2.memory_id = m.memory_id AND d2.decided_at <= :as_of
    ORDER BY d2.decided_at DESC, d2.seq DESC LIMIT 1)
WHERE m.team = :team AND {time} <= :as_of"""
_DECISION = ("decision_id, team, memory_id, group_id, decided_at, level, relation, action, "
             "before, after, valid_before, valid_after, decided_by, reason")


class BankError(RuntimeError):
    """Anything the bank refuses to do, with the reason in words."""


class GroupAlreadyApplied(BankError):
    pass


class OutOfOrderGroup(BankError):
    pass


class EmbedderMismatch(BankError):
    pass


class StaleDecision(BankError):
    """A decision's ``before``/``valid_before`` is not the target's state inside the transaction."""


def _iso(value: datetime) -> str:
    """Fixed-width UTC ISO text: sorts lexically in SQL exactly as the times sort."""
    return as_utc(value).isoformat(timespec="microseconds")


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _us(value: datetime | str) -> int:
    """Microseconds since the epoch: an exact integer for the index's time masks."""
    dt = _time(value) if isinstance(value, str) else as_utc(value)
    return (dt - _EPOCH) // timedelta(microseconds=1)


def _blob(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype="<f4").tobytes()


def _memory(row: Sequence[Any]) -> Memory:
    return Memory(
        memory_id=row[0], team=row[1], group_id=row[2], type=row[3], author=row[4], original=row[5],
        maintained=row[6], time=_time(row[7]), relation=None if row[8] is None else Relation(row[8]),
        action=None if row[9] is None else Action(row[9]), valid=bool(row[10]), maintained_at=_time(row[11]),
    )


def _decision(row: Sequence[Any]) -> Decision:
    return Decision(
        decision_id=row[0], team=row[1], memory_id=row[2], group_id=row[3], decided_at=_time(row[4]),
        level=row[5], relation=Relation(row[6]), action=Action(row[7]), before=row[8], after=row[9],
        valid_before=bool(row[10]), valid_after=bool(row[11]), decided_by=row[12], reason=row[13],
    )


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), _IN_CHUNK):
        yield ids[i:i + _IN_CHUNK]


class _TeamIndex:
    """One team's maintained-text vectors in a growable matrix, with the masks search filters on."""

    def __init__(self, dim: int, version: int, capacity: int = 64):
        self.version = version
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self._vecs = np.zeros((capacity, dim), np.float32)
        self._valid = np.zeros(capacity, bool)
        self._team = np.zeros(capacity, bool)
        self._time = np.zeros(capacity, np.int64)

    @property
    def n(self) -> int:
        return len(self.ids)

    vecs = property(lambda self: self._vecs[:self.n])
    valid = property(lambda self: self._valid[:self.n])
    is_team = property(lambda self: self._team[:self.n])
    time_us = property(lambda self: self._time[:self.n])

    def put(self, memory_id: str, vec: np.ndarray | None, valid: bool, is_team: bool, time_us: int) -> None:
        row = self.row_of.get(memory_id)
        if row is None:
            if self.n == len(self._vecs):  # double: appends stay amortised O(1)
                grow = len(self._vecs)
                self._vecs = np.concatenate([self._vecs, np.zeros_like(self._vecs[:grow])])
                for name in ("_valid", "_team", "_time"):
                    arr = getattr(self, name)
                    setattr(self, name, np.concatenate([arr, np.zeros_like(arr)]))
            row = self.n
            self.row_of[memory_id] = row
            self.ids.append(memory_id)
        if vec is not None:
            self._vecs[row] = vec
        self._valid[row], self._team[row], self._time[row] = valid, is_team, time_us

    def extend(self, ids: list[str], vecs: np.ndarray, valid: np.ndarray, is_team: np.ndarray,
               time_us: np.ndarray) -> None:
        """Bulk load into an empty index (opening a bank): no per-row Python beyond the id map."""
        assert self.n == 0 and len(ids) <= len(self._vecs)
        n = len(ids)
        self._vecs[:n], self._valid[:n], self._team[:n], self._time[:n] = vecs, valid, is_team, time_us
        self.ids = list(ids)
        self.row_of = {m: i for i, m in enumerate(ids)}


class GroupTransaction:
    """The updater's view while one group is applied: reads see its own writes; commit is all or nothing.

    Use it through ``MemoryBank.group_transaction``: (1) ``add_memories()`` the
    group, (2) read (``memory``, ``memories``, ``search``) to compute decisions,
    (3) ``record`` or ``decide`` them. Memories not added explicitly are added at
    commit, so an applied group always holds its memories.
    """

    def __init__(self, bank: "MemoryBank", group: MemoryGroup):
        self.bank, self.group = bank, group
        self.team = group.team
        self.recorded: list[Decision] = []
        self._added = False
        # memory_id -> (vector or None for "unchanged", valid, is_team, time_us): merged into search now,
        # into the bank's index after commit.
        self.pending: dict[str, tuple[np.ndarray | None, bool, bool, int]] = {}
        self.new_ids: set[str] = set()

    # -- writes ----------------------------------------------------------------
    def add_memories(self) -> list[Memory]:
        """Insert the group's memories: original = maintained = content, valid, maintained at the group time."""
        self._open()
        if self._added:
            raise BankError(f"group {self.group.group_id!r}: memories already added")
        self._added = True
        g, conn = self.group, self.bank._conn
        ids = [m.memory_id for m in g.memories]
        for part in _chunks(ids):
            clash = conn.execute(f"SELECT memory_id FROM memories WHERE team = ? AND memory_id IN "
                                 f"({','.join('?' * len(part))})", (g.team, *part)).fetchall()
            if clash:
                raise BankError(f"team {g.team!r} already holds memories {sorted(r[0] for r in clash)}")
        vecs = self.bank._embed([m.content for m in g.memories])
        t, t_us = _iso(g.time), _us(g.time)
        conn.executemany(
            "INSERT INTO memories (team, memory_id, group_id, type, author, original, maintained, time, "
            "relation, action, valid, maintained_at, embedding) VALUES (?,?,?,?,?,?,?,?,NULL,NULL,1,?,?)",
            [(g.team, m.memory_id, g.group_id, m.type, m.author, m.content, m.content, t, t,
              None if vecs is None else _blob(vecs[i])) for i, m in enumerate(g.memories)])
        for i, m in enumerate(g.memories):
            self.pending[m.memory_id] = (None if vecs is None else vecs[i], True, m.type == "team", t_us)
            self.new_ids.add(m.memory_id)
        return self.memories_of_group()

    def record(self, decision: Decision) -> None:
        """Apply one decision to its target and append it to the log (see ``record_many``)."""
        self.record_many([decision])

    def record_many(self, decisions: Iterable[Decision]) -> None:
        """Apply decisions in order; revised texts are embedded in one batch."""
        self._open()
        decisions = list(decisions)
        states: dict[str, Memory] = {}
        for d in decisions:
            self._check(d, states)
        revised = [d for d in decisions if d.after != d.before]
        vecs = self.bank._embed([d.after for d in revised]) if revised else None
        vec_of = {id(d): (None if vecs is None else vecs[i]) for i, d in enumerate(revised)}
        conn = self.bank._conn
        for d in decisions:
            vec = vec_of.get(id(d))
            conn.execute(
                "UPDATE memories SET maintained = ?, relation = ?, action = ?, valid = ?, maintained_at = ?"
                + (", embedding = ?" if vec is not None else "") + " WHERE team = ? AND memory_id = ?",
                (d.after, str(d.relation), str(d.action), int(d.valid_after), _iso(d.decided_at),
                 *([_blob(vec)] if vec is not None else []), d.team, d.memory_id))
            conn.execute(
                f"INSERT INTO decisions ({_DECISION}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (d.decision_id, d.team, d.memory_id, d.group_id, _iso(d.decided_at), d.level, str(d.relation),
                 str(d.action), d.before, d.after, int(d.valid_before), int(d.valid_after), d.decided_by, d.reason))
            old = self.pending.get(d.memory_id)
            target = states[d.memory_id]
            keep_vec = old[0] if old is not None else None
            self.pending[d.memory_id] = (vec if vec is not None else keep_vec, d.valid_after,
                                         target.type == "team", _us(target.time))
            self.recorded.append(d)

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
        g = self.group
        if (d.team, d.group_id) != (g.team, g.group_id) or d.decided_at != g.time:
            raise BankError(f"decision {d.decision_id!r} belongs to ({d.team!r}, {d.group_id!r}, "
                            f"{d.decided_at.isoformat()}), not to this group ({g.team!r}, {g.group_id!r}, "
                            f"{g.time.isoformat()})")
        current = states.get(d.memory_id) or self.memory(d.memory_id)
        if current is None:
            raise BankError(f"decision {d.decision_id!r}: team {self.team!r} has no memory {d.memory_id!r}")
        if current.maintained != d.before or current.valid != d.valid_before:
            raise StaleDecision(f"decision {d.decision_id!r} was made against a different state of "
                                f"{d.memory_id!r} than the bank holds in this transaction")
        states[d.memory_id] = replace(current, maintained=d.after, valid=d.valid_after)

    def finish(self) -> int:
        """Add the memories if the caller did not, bump the team's version; returns the new version."""
        if not self._added:
            self.add_memories()
        conn = self.bank._conn
        conn.execute("UPDATE teams SET version = version + 1 WHERE team = ?", (self.team,))
        return conn.execute("SELECT version FROM teams WHERE team = ?", (self.team,)).fetchone()[0]

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


class MemoryBank:
    """A HiCoMER memory bank in one SQLite file (WAL), safe to share between threads of one process.

    ``embedder`` may be omitted to read a bank or search it with vectors; writing
    to a bank that stores embeddings, and text queries, need the same embedder
    (by name and dim) the bank was built with.
    """

    def __init__(self, path: str | Path, embedder: Embedder | None = None):
        self.path = str(path)
        self.embedder = embedder
        self.embedder_name: str | None = None
        self.dim: int | None = None
        self._lock = threading.RLock()  # one connection per bank: every use of it holds this lock
        self._tx: GroupTransaction | None = None
        self._indexes: dict[str, _TeamIndex] = {}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a power cut may lose the last groups, never corrupt
        self._conn.execute("PRAGMA foreign_keys=ON")
        try:
            self._create_schema()
            self.embedder_name, self.dim = self._bind_embedder()
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._tx is not None:
                raise BankError("close() inside an open group transaction")
            self._conn.close()

    def __enter__(self) -> "MemoryBank":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def journal_mode(self) -> str:
        with self._lock:
            return self._conn.execute("PRAGMA journal_mode").fetchone()[0]

    def _create_schema(self) -> None:
        """Create the tables once; an existing bank is opened without taking the write lock."""
        if self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
            return
        try:
            self._conn.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} INSERT OR IGNORE INTO meta "
                                     f"VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def _bind_embedder(self) -> tuple[str | None, int | None]:
        """Record the embedder on first use; refuse a different one later (its vectors would not compare)."""
        meta = self._meta()
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise BankError(f"{self.path}: bank schema {meta.get('schema_version')}, this code reads {SCHEMA_VERSION}")
        if self.embedder is None:
            return meta.get("embedder"), (int(meta["dim"]) if "dim" in meta else None)
        name, dim = self.embedder.name, int(self.embedder.dim)
        if "embedder" not in meta:
            with self.transaction() as conn:
                meta = self._meta()  # another process may have bound it meanwhile
                if "embedder" not in meta:
                    conn.executemany("INSERT INTO meta VALUES (?, ?)", [("embedder", name), ("dim", str(dim))])
                    self.embedder_name, self.dim = name, dim
                    self._backfill()
                    return name, dim
        if (meta["embedder"], int(meta["dim"])) != (name, dim):
            raise EmbedderMismatch(
                f"{self.path} was embedded with {meta['embedder']!r} ({meta['dim']} dims); "
                f"it cannot be used with {name!r} ({dim} dims). Open it with the same embedder, "
                f"or rebuild the bank from its stream.")
        return name, dim

    def _backfill(self) -> None:
        """Embed rows written while the bank had no embedder (first open with one)."""
        rows = self._conn.execute("SELECT team, memory_id, maintained FROM memories WHERE embedding IS NULL").fetchall()
        if rows:
            vecs = self._embed([r[2] for r in rows])
            assert vecs is not None
            self._conn.executemany("UPDATE memories SET embedding = ? WHERE team = ? AND memory_id = ?",
                                   [(_blob(v), r[0], r[1]) for v, r in zip(vecs, rows)])

    # -- transactions ----------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write-locked SQLite transaction (BEGIN IMMEDIATE): commit at the end, roll back on any exception.

        Low level: ``group_transaction`` is the way to write. Not re-entrant.
        """
        with self._lock:
            if self._conn.in_transaction:
                raise BankError("a bank transaction is already open")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    @contextmanager
    def group_transaction(self, group: MemoryGroup) -> Iterator[GroupTransaction]:
        """Apply one group atomically; raises ``GroupAlreadyApplied`` or ``OutOfOrderGroup`` before any write."""
        with self._lock:  # held to the index update, so no thread sees the commit without it
            with self.transaction() as conn:
                if conn.execute("SELECT 1 FROM groups WHERE team = ? AND group_id = ?",
                                (group.team, group.group_id)).fetchone():
                    raise GroupAlreadyApplied(f"team {group.team!r}: group {group.group_id!r} is already applied")
                last = conn.execute("SELECT MAX(time) FROM groups WHERE team = ?", (group.team,)).fetchone()[0]
                if last is not None and _iso(group.time) < last:
                    raise OutOfOrderGroup(f"team {group.team!r}: group {group.group_id!r} at {_iso(group.time)} comes "
                                          f"before the last applied group ({last}); a team's groups apply in time order")
                if self.dim is not None:
                    self._index(group.team)  # cache the committed vectors before this group writes any
                conn.execute("INSERT OR IGNORE INTO teams (team, version) VALUES (?, 0)", (group.team,))
                conn.execute("INSERT INTO groups VALUES (?, ?, ?, ?)", (group.team, group.group_id, _iso(group.time),
                                                                       _iso(datetime.now(timezone.utc))))
                tx = GroupTransaction(self, group)
                self._tx = tx
                try:
                    yield tx
                    version = tx.finish()
                finally:
                    self._tx = None
            self._after_commit(tx, version)

    def apply_group(self, group: MemoryGroup, decisions: Sequence[Decision] = ()) -> None:
        """Add a group's memories and its precomputed decisions in one transaction."""
        with self.group_transaction(group) as tx:
            tx.add_memories()
            tx.record_many(decisions)

    def is_applied(self, team: str, group_id: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM groups WHERE team = ? AND group_id = ?",
                                      (team, group_id)).fetchone() is not None

    def _after_commit(self, tx: GroupTransaction, version: int) -> None:
        """Fold a committed group into the cached index, or drop it if someone else wrote the team meanwhile."""
        with self._lock:
            idx = self._indexes.get(tx.team)
            if idx is None:
                return
            if idx.version != version - 1 or any(v is None and m not in idx.row_of for m, (v, *_) in tx.pending.items()):
                del self._indexes[tx.team]
                return
            for memory_id, (vec, valid, is_team, t_us) in tx.pending.items():
                idx.put(memory_id, vec, valid, is_team, t_us)
            idx.version = version

    # -- reads -----------------------------------------------------------------
    def teams(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT team FROM teams ORDER BY team")]

    def memory(self, team: str, memory_id: str) -> Memory | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {_LIVE} FROM memories WHERE team = ? AND memory_id = ?",
                                     (team, memory_id)).fetchone()
        return None if row is None else _memory(row)

    def memories(self, team: str, as_of: datetime | None = None, types: Sequence[MemoryType] | None = None,
                 ids: Sequence[str] | None = None) -> list[Memory]:
        """The team's memories in write order: live, or rebuilt from the decision log as of a time."""
        sql, args = (f"SELECT {_LIVE}, rowid FROM memories m WHERE team = :team", {"team": team}) \
            if as_of is None else (_AS_OF.format(time="m.time" if ids is None else "+m.time"),  # by id: the key
                                   {"team": team, "as_of": _iso(as_of)})
        if _want_team(types) is not None:
            sql += " AND m.type IN (" + ",".join(f":t{i}" for i in range(len(types))) + ")"
            args.update({f"t{i}": t for i, t in enumerate(types)})
        with self._lock:
            if ids is None:
                rows = self._conn.execute(sql + " ORDER BY m.time, m.rowid", args).fetchall()
            else:  # by primary key, sorted here: an SQL ORDER BY would make SQLite walk the time index
                rows = []
                for part in _chunks(list(ids)):
                    marks = ",".join(f":i{i}" for i in range(len(part)))
                    rows += self._conn.execute(sql + f" AND m.memory_id IN ({marks})",
                                               {**args, **{f"i{i}": x for i, x in enumerate(part)}}).fetchall()
                rows.sort(key=lambda r: (r[7], r[12]))
        return [_memory(r) for r in rows]

    def decisions(self, team: str, memory_id: str | None = None) -> list[Decision]:
        """The append-only log, in the order decisions were applied."""
        sql = f"SELECT {_DECISION} FROM decisions WHERE team = ?" + (" AND memory_id = ?" if memory_id else "")
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY seq", (team, memory_id) if memory_id else (team,)).fetchall()
        return [_decision(r) for r in rows]

    def stats(self, team: str) -> dict[str, Any]:
        with self._lock:
            c = self._conn
            m = c.execute("SELECT COUNT(*), SUM(type = 'team'), SUM(valid), SUM(maintained != original) "
                          "FROM memories WHERE team = ?", (team,)).fetchone()
            d = c.execute("SELECT COUNT(*), SUM(action = 'revise') FROM decisions WHERE team = ?", (team,)).fetchone()
            g = c.execute("SELECT COUNT(*), MIN(time), MAX(time) FROM groups WHERE team = ?", (team,)).fetchone()
        return {"team": team, "memories": m[0], "team_memories": m[1] or 0, "individual_memories": m[0] - (m[1] or 0),
                "valid": m[2] or 0, "invalid": m[0] - (m[2] or 0), "revised": m[3] or 0, "decisions": d[0],
                "revisions": d[1] or 0, "groups": g[0], "first_time": g[1], "last_time": g[2],
                "embedder": self.embedder_name}

    def time_span(self, team: str, as_of: datetime | None = None) -> tuple[datetime, datetime]:
        """The team's first group time, and ``as_of`` (or its last group time): the span times are normalised over."""
        with self._lock:
            first, last = self._conn.execute("SELECT MIN(time), MAX(time) FROM groups WHERE team = ?",
                                             (team,)).fetchone()
        if first is None:
            raise BankError(f"team {team!r} has no memories")
        return _time(first), (as_utc(as_of) if as_of is not None else _time(last))

    def embeddings(self, team: str, memory_ids: Sequence[str]) -> np.ndarray:
        """Stored vectors of the memories' current maintained texts, one row per id."""
        with self._lock:
            idx = self._index(team)
            if idx is None:
                raise BankError(f"team {team!r} has no memories")
            return np.stack([idx.vecs[idx.row_of[m]] for m in memory_ids]) if memory_ids \
                else np.zeros((0, idx.vecs.shape[1]), np.float32)

    # -- search ----------------------------------------------------------------
    def search(self, team: str, query: str | np.ndarray, k: int, as_of: datetime | None = None,
               valid_only: bool = False, types: Sequence[MemoryType] | None = None) -> list[tuple[Memory, float]]:
        """Top-k of one team's memories by cosine to their maintained text (as of ``as_of`` if given).

        Each hit's ``embedding`` is the vector it was scored with.
        """
        q = self._query_vector(query)
        with self._lock:
            if as_of is None:
                tx = self._tx if self._tx is not None and self._tx.team == team else None
                return self._search_live(team, q, k, valid_only, types, tx=tx)
            if self._tx is not None:
                raise BankError("as-of search inside an open group transaction")
            return self._search_as_of(team, q, k, as_utc(as_of), valid_only, types)

    def _search_live(self, team: str, q: np.ndarray, k: int, valid_only: bool, types: Sequence[MemoryType] | None,
                     tx: GroupTransaction | None = None, earlier_only: bool = False) -> list[tuple[Memory, float]]:
        with self._lock:
            idx = self._index(team)
            overlay: dict[str, tuple[np.ndarray, bool, bool]] = {}
            for memory_id, (vec, valid, is_team, _) in (tx.pending.items() if tx else ()):
                if earlier_only and memory_id in tx.new_ids:  # type: ignore[union-attr]
                    continue
                if vec is None:  # unchanged text: the committed vector still holds
                    if idx is None:
                        raise BankError(f"{self.path} stores no embeddings: open it with an embedder to search")
                    vec = idx.vecs[idx.row_of[memory_id]]
                overlay[memory_id] = (vec, valid, is_team)
            hits = self._rank(idx, q, k, valid_only, types, None, overlay)
            found = {m.memory_id: m for m in self.memories(team, ids=[h[0] for h in hits])}
        return [(_with_vec(found[i], v), s) for i, s, v in hits]

    def _search_as_of(self, team: str, q: np.ndarray, k: int, as_of: datetime, valid_only: bool,
                      types: Sequence[MemoryType] | None) -> list[tuple[Memory, float]]:
        idx = self._index(team)
        if idx is None:
            return []
        when = _iso(as_of)
        changed = [r[0] for r in self._conn.execute(
            "SELECT DISTINCT memory_id FROM decisions WHERE team = ? AND decided_at > ?", (team, when))]
        changed = [m for m in changed if idx.time_us[idx.row_of[m]] <= _us(as_of)]
        past = self.memories(team, as_of=as_of, ids=changed) if changed else []
        now = {m.memory_id: m.maintained for m in self.memories(team, ids=changed)} if changed else {}
        fresh = [m.maintained for m in past if m.maintained != now[m.memory_id]]
        fresh_vecs = dict(zip(fresh, self._embed_cached(fresh))) if fresh else {}
        overlay: dict[str, tuple[np.ndarray, bool, bool]] = {}
        for m in past:  # text as of then: today's vector if unchanged since, else embedded afresh
            vec = fresh_vecs[m.maintained] if m.maintained in fresh_vecs else idx.vecs[idx.row_of[m.memory_id]]
            overlay[m.memory_id] = (vec, m.valid, m.type == "team")
        hits = self._rank(idx, q, k, valid_only, types, _us(as_of), overlay)
        found = {m.memory_id: m for m in self.memories(team, as_of=as_of, ids=[h[0] for h in hits])}
        return [(_with_vec(found[i], v), s) for i, s, v in hits]

    def _rank(self, idx: _TeamIndex | None, q: np.ndarray, k: int, valid_only: bool,
              types: Sequence[MemoryType] | None, until_us: int | None,
              overlay: dict[str, tuple[np.ndarray, bool, bool]]) -> list[tuple[str, float, np.ndarray]]:
        """Score the committed rows (minus those the overlay replaces) and the overlay rows; top-k by score.

        One matmul over the whole matrix and masks, no per-row Python: this is the hot path.
        """
        want_team = _want_team(types)
        base = np.zeros(0, np.float32)
        if idx is not None and idx.n:
            base = idx.vecs @ q
            drop = np.zeros(idx.n, bool)
            if valid_only:
                drop |= ~idx.valid
            if want_team is not None:
                drop |= idx.is_team != want_team
            if until_us is not None:
                drop |= idx.time_us > until_us
            for memory_id in overlay:
                row = idx.row_of.get(memory_id)
                if row is not None:
                    drop[row] = True
            base[drop] = -np.inf
        extra = [(m, v) for m, (v, valid, is_team) in overlay.items()
                 if (valid or not valid_only) and (want_team is None or is_team == want_team)]
        scores = np.concatenate([base, np.stack([v for _, v in extra]) @ q]) if extra else base
        n_live = int(np.isfinite(scores).sum())
        k = min(k, n_live)
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]  # by score, ties by position: deterministic
        nb = len(base)
        return [(idx.ids[i], float(scores[i]), idx.vecs[i]) if i < nb else  # type: ignore[union-attr]
                (extra[i - nb][0], float(scores[i]), extra[i - nb][1]) for i in top]

    # -- vectors ---------------------------------------------------------------
    def _index(self, team: str) -> _TeamIndex | None:
        """The team's vectors, (re)built from the stored blobs when missing or stale."""
        with self._lock:
            row = self._conn.execute("SELECT version FROM teams WHERE team = ?", (team,)).fetchone()
            if row is None:
                return None
            cached = self._indexes.get(team)
            if cached is not None and cached.version == row[0]:
                return cached  # inside a transaction: the committed state; its writes come as an overlay
            if self.dim is None:
                raise BankError(f"{self.path} stores no embeddings: open it with an embedder to search")
            if self._tx is not None and self._tx.team == team:
                # group_transaction cached every existing team first, so this team is the open
                # transaction's own creation: committed, it holds nothing yet.
                self._indexes[team] = _TeamIndex(self.dim, row[0])
                return self._indexes[team]
            rows = self._conn.execute(
                "SELECT memory_id, embedding, valid, type, time FROM memories WHERE team = ? ORDER BY rowid",
                (team,)).fetchall()
            missing = [r[0] for r in rows if r[1] is None or len(r[1]) != 4 * self.dim]
            if missing:
                raise BankError(f"team {team!r}: memories {missing[:5]} have no stored {self.dim}-dim embedding")
            idx = _TeamIndex(self.dim, row[0], capacity=max(64, len(rows)))
            idx.extend([r[0] for r in rows], np.frombuffer(b"".join(r[1] for r in rows), "<f4").reshape(-1, self.dim),
                       np.array([r[2] for r in rows], bool), np.array([r[3] == "team" for r in rows], bool),
                       np.array([_us(r[4]) for r in rows], np.int64))
            self._indexes[team] = idx
            return idx

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for texts about to be stored; None when the bank keeps no embeddings at all."""
        if self.embedder is None:
            if self.dim is not None:
                raise BankError(f"{self.path} stores {self.embedder_name!r} embeddings: open it with that "
                                f"embedder to write or to embed text")
            return None
        if not texts:
            return np.zeros((0, self.dim or self.embedder.dim), np.float32)
        vecs = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise BankError(f"embedder {self.embedder.name!r} returned shape {vecs.shape}, "
                            f"expected ({len(texts)}, {self.dim})")
        return vecs

    def _embed_cached(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = self._embed(missing)
            if vecs is None:
                raise BankError(f"{self.path} stores no embeddings: open it with an embedder to search")
            for t, v in zip(missing, vecs):
                self._cache[t] = v
        out = []
        for t in texts:
            self._cache.move_to_end(t)
            out.append(self._cache[t])
        while len(self._cache) > EMBED_CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    def _query_vector(self, query: str | np.ndarray) -> np.ndarray:
        if isinstance(query, str):
            if self.embedder is None:
                raise BankError("a text query needs an embedder; pass a vector or open the bank with one")
            with self._lock:
                return self._embed_cached([query])[0]
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if self.dim is not None and q.shape[0] != self.dim:
            raise BankError(f"query vector has {q.shape[0]} dims, the bank's embeddings {self.dim}")
        return q


def _want_team(types: Sequence[MemoryType] | None) -> bool | None:
    """None: both kinds; True: team memories only; False: individual only."""
    chosen = set(types or ())
    if chosen - {"team", "individual"}:
        raise ValueError(f"memory types are 'team' and 'individual', not {sorted(chosen)}")
    return None if len(chosen) != 1 else chosen == {"team"}


def _with_vec(memory: Memory, vec: np.ndarray) -> Memory:
    memory.embedding = np.array(vec, dtype=np.float32)
    return memory
