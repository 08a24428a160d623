"""The memory bank itself: its database (``backend``), its embedder binding, group transactions and reads.

Why one connection behind one lock: the bank is shared between a process's threads
(the service, the ingest workers), and the database serialises a team's writers
anyway (SQLite: the file's write lock; PostgreSQL: a lock per team); a group's write
is one short transaction, so readers elsewhere never see half a group. Search and
vectors come from ``BankSearch``; the SQL here runs unchanged on both databases.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from memgraft.collab.bank.backend import Backend
from memgraft.collab.bank.connect import connect
from memgraft.collab.bank.errors import BankError, EmbedderMismatch, already_applied, out_of_order
from memgraft.collab.bank.index import TeamIndex, want_team_of
from memgraft.collab.bank.schema import (AS_OF_SQL, DECISION_COLUMNS, LIVE_COLUMNS, SCHEMA_VERSION, iso,
                                         parse_time, row_to_decision, row_to_memory)
from memgraft.collab.bank.search import BankSearch
from memgraft.collab.bank.team_rows import TeamRows
from memgraft.collab.bank.transaction import GroupTransaction, belongs, new_rows, pending_after, revised_vectors
from memgraft.collab.data import rewords
from memgraft.collab.types import Decision, Memory, MemoryGroup, MemoryType, as_utc
from memgraft.models.embedder import Embedder


class MemoryBank(BankSearch):
    """A HiCoMER memory bank, safe to share between threads of one process.

    ``location`` is a path (a SQLite file in WAL mode), a ``postgresql://`` URL
    (PostgreSQL with pgvector; see ``postgres``) or an open ``Backend``; ``team``
    binds the bank to that one team (others are refused). ``embedder`` may be
    omitted to read a bank or search it with vectors; writing to a bank that stores
    embeddings, and text queries, need the same embedder (by name and dim) the bank
    was built with.
    """

    def __init__(self, location: str | Path | Backend, embedder: Embedder | None = None, *, team: str | None = None):
        self._db = location if isinstance(location, Backend) else connect(location, team)
        self.path, self.where = self._db.location, self._db.where
        self.embedder = embedder
        self.embedder_name: str | None = None
        self.dim: int | None = None
        self._lock = threading.RLock()  # one connection per bank: every use of it holds this lock
        self._tx: GroupTransaction | None = None
        self._indexes: dict[str, TeamIndex] = {}
        self._rows_held: dict[str, TeamRows] = {}  # PostgreSQL: beside a cached matrix, for as-of search
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        try:
            self.embedder_name, self.dim = self._bind_embedder()
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._tx is not None:
                raise BankError("close() inside an open group transaction")
            self._db.close()

    def __enter__(self) -> "MemoryBank":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    @property
    def journal_mode(self) -> str | None:
        """SQLite's journal mode (``wal``); None on PostgreSQL."""
        with self._lock:
            return self._db.journal_mode

    def _team_db(self, team: str) -> Backend:
        """The connection, set to see ``team``'s rows (PostgreSQL's row-level security); hold ``_lock``."""
        self._db.use_team(team)
        return self._db

    def _bind_embedder(self) -> tuple[str | None, int | None]:
        """Record the embedder on first use; refuse a different one later (its vectors would not compare)."""
        meta = self._meta()
        if meta.get("schema_version") != SCHEMA_VERSION:
            from memgraft.collab.bank.migrate import upgrade  # each released schema's step, in order

            meta = upgrade(self, meta)
        if self.embedder is None:
            return meta.get("embedder"), (int(meta["dim"]) if "dim" in meta else None)
        name, dim = self.embedder.name, int(self.embedder.dim)
        if "embedder" not in meta:
            with self.transaction() as db:
                db.lock_schema()  # two processes opening a new bank at once: the second waits, then reads
                meta = self._meta()  # another process may have bound it meanwhile
                if "embedder" not in meta:
                    db.executemany("INSERT INTO meta VALUES (?, ?)", [("embedder", name), ("dim", str(dim))])
                    db.bind_dim(dim)
                    self.embedder_name, self.dim = name, dim
                    self._backfill()
                    return name, dim
        if (meta["embedder"], int(meta["dim"])) != (name, dim):
            raise EmbedderMismatch(
                f"{self.where} was embedded with {meta['embedder']!r} ({meta['dim']} dims); "
                f"it cannot be used with {name!r} ({dim} dims). Open it with the same embedder, "
                f"or rebuild the bank from its stream.")
        return name, dim

    def _upgrade_from_1(self) -> dict[str, str]:
        """Schema 1 had no ``original_embedding``: add it, filled where the stored vector is the original's
        (the text was never revised); the other rows' as-of texts are embedded when searched, as before."""
        with self.transaction() as db:
            db.lock_schema()
            meta = self._meta()  # another process may have upgraded it meanwhile
            if meta.get("schema_version") == "1":
                dim = int(meta["dim"]) if "dim" in meta else None
                db.execute(f"ALTER TABLE memories ADD COLUMN original_embedding {db.vector_type(dim)}")
                if dim is not None:
                    db.bind_dim(dim)  # PostgreSQL: where each vector is stored, before the rows are rewritten
                for team in self.teams():  # row-level security on PostgreSQL: one team at a time
                    self._team_db(team).execute("UPDATE memories SET original_embedding = embedding "
                                                "WHERE team = ? AND maintained = original", (team,))
                db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        return self._meta()

    def _meta(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def _backfill(self) -> None:
        """Embed rows written while the bank had no embedder (first open with one), team by team."""
        for team in self.teams():
            db = self._team_db(team)
            rows = db.execute("SELECT memory_id, maintained, original FROM memories WHERE team = ? "
                              "AND embedding IS NULL", (team,)).fetchall()
            if rows:
                texts = list(dict.fromkeys([r[1] for r in rows] + [r[2] for r in rows]))
                vecs = self._embed(texts)
                assert vecs is not None
                vec = dict(zip(texts, vecs))
                db.executemany("UPDATE memories SET embedding = ?, original_embedding = ? "
                               "WHERE team = ? AND memory_id = ?",
                               [(db.encode_vec(vec[r[1]]), db.encode_vec(vec[r[2]]), team, r[0]) for r in rows])

    # -- transactions ----------------------------------------------------------
    @contextmanager
    def transaction(self, team: str | None = None) -> Iterator[Backend]:
        """One write transaction: commit at the end, roll back on any exception.

        With ``team``, it sees that team's rows and waits for the team's other writers
        (in any process). Low level: ``group_transaction`` is the way to write. Not re-entrant.
        """
        with self._lock:
            if self._db.in_transaction:
                raise BankError("a bank transaction is already open")
            try:
                self._db.begin(team)  # may refuse the team (a bound bank) after BEGIN: rolled back below
                yield self._db
                self._db.commit()
            except BaseException:
                if self._db.in_transaction:
                    self._db.rollback()
                raise

    @contextmanager
    def group_transaction(self, group: MemoryGroup) -> Iterator[GroupTransaction]:
        """Apply one group atomically; raises ``GroupAlreadyApplied`` or ``OutOfOrderGroup`` before any write."""
        with self._lock:  # held to the index update, so no thread sees the commit without it
            with self.transaction(group.team) as conn:
                # one statement, not three (a round trip each on PostgreSQL): applied?, the last group's time, the
                # team's version (NULL for a new team)
                applied, last, version = conn.execute(
                    "SELECT (SELECT 1 FROM groups WHERE team = :team AND group_id = :gid), "
                    "(SELECT MAX(time) FROM groups WHERE team = :team), (SELECT version FROM teams WHERE team = :team)",
                    {"team": group.team, "gid": group.group_id}).fetchone()
                if applied:
                    raise already_applied(group.team, group.group_id)
                if last is not None and iso(group.time) < last:
                    raise out_of_order(group.team, group.group_id, iso(group.time), last)
                if self.dim is not None and version is not None and not self._db.ranks_team_in_db(group.team):
                    self._index(group.team, version)  # cache the committed vectors before this group writes any
                # sent with the group's next read (PostgreSQL: no round trip of their own)
                conn.defer("INSERT INTO teams (team, version) VALUES (?, 0) ON CONFLICT DO NOTHING", (group.team,))
                conn.defer("INSERT INTO groups VALUES (?, ?, ?, ?)", (group.team, group.group_id, iso(group.time),
                                                                       iso(datetime.now(timezone.utc))))
                tx = GroupTransaction(self, group)
                self._tx = tx
                try:
                    yield tx
                    version = tx.finish()
                finally:
                    self._tx = None
            self._after_commit(tx.team, tx.pending, version)
            self._db.after_group(group.team, tx.size)

    def team_turn(self, team: str) -> Any:
        """Hold while planning and writing one group of ``team``: other processes' writers of the team wait,
        so none plans against a state about to change (a no-op on SQLite)."""
        return self._db.team_turn(team)

    def apply_group(self, group: MemoryGroup, decisions: Sequence[Decision] = ()) -> None:
        """Add a group's memories and its precomputed decisions in one transaction (on PostgreSQL, one statement:
        ``_write_at_once``)."""
        if self._db.writes_groups_at_once:
            return self._write_at_once(group, list(decisions))
        with self.group_transaction(group) as tx:
            tx.insert_memories()
            tx.record_many(decisions)

    def _write_at_once(self, group: MemoryGroup, decisions: list[Decision]) -> None:
        """``apply_group`` by the backend's one statement (``pg_apply``): the same checks and writes, the texts
        embedded before the transaction begins, the committed group folded into the cached matrix as after
        ``group_transaction``."""
        with self._lock:
            for d in decisions:
                belongs(d, group)
            vecs = self._embed([m.content for m in group.memories])
            vec_of = revised_vectors(self._embed, decisions)
            version, size, types, times = self._db.write_group(group, decisions, vecs,
                                                               [vec_of.get(id(d)) for d in decisions])
            pending = new_rows(group, vecs)
            pending_after(pending, decisions, vec_of, types, times)
            self._after_commit(group.team, pending, version)
            self._db.after_group(group.team, size)

    def is_applied(self, team: str, group_id: str) -> bool:
        with self._lock:
            return self._team_db(team).execute("SELECT 1 FROM groups WHERE team = ? AND group_id = ?",
                                               (team, group_id)).fetchone() is not None

    def applied_at(self, team: str, group_id: str) -> datetime | None:
        """When this group was committed (the writer's clock), or None: tells a commit whose answer a restart
        lost from a group applied before (``outage``)."""
        with self._lock:
            row = self._team_db(team).execute("SELECT applied_at FROM groups WHERE team = ? AND group_id = ?",
                                              (team, group_id)).fetchone()
        return None if row is None else parse_time(row[0])

    # -- reads -----------------------------------------------------------------
    def teams(self) -> list[str]:
        with self._lock:
            teams = [r[0] for r in self._db.execute("SELECT team FROM teams ORDER BY team")]
        bound = self._db.bound_team
        return teams if bound is None else [t for t in teams if t == bound]

    def memory(self, team: str, memory_id: str) -> Memory | None:
        with self._lock:
            row = self._team_db(team).execute(f"SELECT {LIVE_COLUMNS} FROM memories WHERE team = ? AND memory_id = ?",
                                              (team, memory_id)).fetchone()
        return None if row is None else row_to_memory(row)

    def memories(self, team: str, as_of: datetime | None = None, types: Sequence[MemoryType] | None = None,
                 ids: Sequence[str] | None = None) -> list[Memory]:
        """The team's memories in write order: live, or rebuilt from the decision log as of a time."""
        sql, args = (f"SELECT {LIVE_COLUMNS}, rowid FROM memories m WHERE team = :team", {"team": team}) \
            if as_of is None else (AS_OF_SQL.format(time="m.time" if ids is None else f"{self._db.time_no_index}m.time", extra=""),
                                   {"team": team, "as_of": iso(as_of)})
        if want_team_of(types) is not None:
            sql += " AND m.type IN (" + ",".join(f":t{i}" for i in range(len(types))) + ")"
            args.update({f"t{i}": t for i, t in enumerate(types)})
        with self._lock:
            db = self._team_db(team)
            if ids is None:
                rows = db.execute(sql + " ORDER BY m.time, m.rowid", args).fetchall()
            else:  # by primary key, sorted here: an SQL ORDER BY would make SQLite walk the time index
                rows = []
                for cond, id_args in db.id_filters("m.memory_id", list(ids)):
                    rows += db.execute(sql + f" AND {cond}", {**args, **id_args}).fetchall()
                rows.sort(key=lambda r: (r[7], r[12]))
        return [row_to_memory(r) for r in rows]

    def originals_since(self, team: str, rowid: int = 0) -> list[tuple[int, str]]:
        """(write position, original text) of the team's memories written after ``rowid``, in write order."""
        with self._lock:
            return [(int(r[0]), r[1]) for r in self._team_db(team).execute(
                f"SELECT rowid, original FROM memories WHERE {self._db.team_no_index}team = ? AND rowid > ? "
                "ORDER BY rowid", (team, rowid))]

    def as_of_reads(self, team: str, as_of: datetime, ids: Sequence[str]
                    ) -> tuple[list[tuple[Memory, str, np.ndarray | None]], dict[str, Memory]]:
        """Each memory written by ``as_of`` and decided on after it: as it stood then, its text today, and the
        stored vector of its original text where that is the text then and today's differs (else None); and the
        live rows of ``ids`` (an as-of search's guessed hits, whose live row is their row then where they were
        not decided on since), read with it: one round trip on PostgreSQL.

        The log's ids never leave the database: at 100k memories this set is ~19,000 rows, and passing them
        back in as parameters took most of an as-of search.
        """
        args = {"team": team, "as_of": iso(as_of)}
        statements = [(self._db.changed_since_sql.format(time=f"{self._db.time_no_index}m.time"), args)]
        with self._lock:
            db = self._team_db(team)
            statements += [(f"SELECT {LIVE_COLUMNS} FROM memories m WHERE team = :team AND {cond}", {**args, **id_args})
                           for cond, id_args in db.id_filters("m.memory_id", list(ids))] if ids else []
            rows, *live = db.execute_all(statements)
        return self._then_and_now(rows, [r for part in live for r in part])

    def as_of_reads_held(self, held: TeamRows, as_of: datetime, ids: Sequence[str]
                         ) -> tuple[list[tuple[Memory, str, np.ndarray | None]], dict[str, Memory]]:
        """``as_of_reads`` from a team's rows and log held in-process (``team_rows``): no statement."""
        return self._then_and_now(held.changed_since(iso(as_of)), held.live(ids))

    def _then_and_now(self, rows: list[Any], live: Sequence[Any]
                      ) -> tuple[list[tuple[Memory, str, np.ndarray | None]], dict[str, Memory]]:
        current = {m.memory_id: m for m in map(row_to_memory, live)}
        rows.sort(key=lambda r: (r[7], r[12]))
        then = [row_to_memory(r) for r in rows]
        wanted = [i for i, (m, r) in enumerate(zip(then, rows))  # what the search uses (``_search_as_of``)
                  if r[14] is not None and m.maintained == m.original and rewords(m.original, r[13])]
        vecs = self._db.decode_vecs([rows[i][14] for i in wanted], self.dim) if wanted and self.dim else []
        original: dict[int, np.ndarray] = dict(zip(wanted, vecs))
        return [(m, r[13], original.get(i)) for i, (m, r) in enumerate(zip(then, rows))], current

    def decisions(self, team: str, memory_id: str | None = None) -> list[Decision]:
        """The append-only log, in the order decisions were applied."""
        sql = f"SELECT {DECISION_COLUMNS} FROM decisions WHERE team = ?" + (" AND memory_id = ?" if memory_id else "")
        with self._lock:
            rows = self._team_db(team).execute(sql + " ORDER BY seq",
                                               (team, memory_id) if memory_id else (team,)).fetchall()
        return [row_to_decision(r) for r in rows]

    def stats(self, team: str) -> dict[str, Any]:
        with self._lock:
            c = self._team_db(team)
            m = c.execute("SELECT COUNT(*), SUM(CASE WHEN type = 'team' THEN 1 ELSE 0 END), SUM(valid), "
                          "SUM(CASE WHEN maintained <> original THEN 1 ELSE 0 END) "
                          "FROM memories WHERE team = ?", (team,)).fetchone()
            d = c.execute("SELECT COUNT(*), SUM(CASE WHEN action = 'revise' THEN 1 ELSE 0 END) "
                          "FROM decisions WHERE team = ?", (team,)).fetchone()
            g = c.execute("SELECT COUNT(*), MIN(time), MAX(time) FROM groups WHERE team = ?", (team,)).fetchone()
        return {"team": team, "memories": m[0], "team_memories": m[1] or 0, "individual_memories": m[0] - (m[1] or 0),
                "valid": m[2] or 0, "invalid": m[0] - (m[2] or 0), "revised": m[3] or 0, "decisions": d[0],
                "revisions": d[1] or 0, "groups": g[0], "first_time": g[1], "last_time": g[2],
                "embedder": self.embedder_name}

    def time_span(self, team: str, as_of: datetime | None = None) -> tuple[datetime, datetime]:
        """The team's first group time, and ``as_of`` (or its last group time): the span times are normalised over."""
        with self._lock:
            first, last = self._team_db(team).execute("SELECT MIN(time), MAX(time) FROM groups WHERE team = ?",
                                                      (team,)).fetchone()
        if first is None:
            raise BankError(f"team {team!r} has no memories")
        return parse_time(first), (as_utc(as_of) if as_of is not None else parse_time(last))

