"""A PostgreSQL team's rows and decision log, kept in-process beside its cached matrix, for as-of search.

Why: on PostgreSQL a small team's as-of search was one round trip, but one that sent the log since the past
time and the rows it changed (~100 rows for a ~1,000-memory team): 1.4-1.9 ms against SQLite's in-process
0.6-0.7 (``bench/collab_scale.py`` at 1,000,000 memories), most of it the server's part and the rows. A team
whose matrix this process caches (``stored_index``), up to ``vectors.HELD_MAX_ROWS`` memories, keeps its rows
and log here too: read in one snapshot with the team's version when its matrix is first read, and brought up by
what was written or decided on since when an as-of search finds them behind; the search then reads the version
(one short statement) and rebuilds the past in memory, as SQLite's own query does from its file (at full size:
0.50 ms p50 against SQLite's 0.50). Memory: the rows' texts, beside the team's vectors. The rows are those of
``schema.CHANGED_SINCE_SQL`` and ``LIVE_COLUMNS``, so what the search does with them is the same on both paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from memgraft.collab.bank.schema import LIVE_COLUMNS, REWORDED
from memgraft.collab.bank.stored_index import STATE

if TYPE_CHECKING:
    from memgraft.collab.bank.backend import Backend

_LIVE = f"SELECT {LIVE_COLUMNS}, rowid FROM memories m WHERE team = :team"
_LOG = "SELECT memory_id, decided_at, seq, after, valid_after, relation, action FROM decisions WHERE team = :team"
_ORIGINALS = f"SELECT memory_id, original_embedding FROM memories m WHERE team = :team AND {REWORDED}"
_CHANGED = " AND (rowid > :rowid OR memory_id IN (SELECT memory_id FROM decisions WHERE team = :team AND seq > :seq))"


@dataclass
class TeamRows:
    """One team's memory rows (``LIVE_COLUMNS`` and the write position), each decided-on memory's decisions in
    order, and the original's stored vector of each memory whose text today rewords it; as of ``version``."""

    version: int
    rows: dict[str, tuple] = field(default_factory=dict)
    log: dict[str, list[tuple]] = field(default_factory=dict)  # memory_id -> [(decided_at, seq, after, valid, rel, act)]
    originals: dict[str, Any] = field(default_factory=dict)
    read_to: tuple[int, int] = (0, 0)  # the last write position (rowid) and decision seq read
    forgotten: str | None = None  # the team's forget count when read (``stored_index.STATE``'s last column)

    def changed_since(self, as_of: str) -> list[tuple]:
        """``CHANGED_SINCE_SQL``'s rows for ``as_of`` (ISO text): each memory written by then and decided on after,
        as it stood then, with today's text and the original's vector where the text then is the original."""
        out = []
        for memory_id, decisions in self.log.items():
            if decisions[-1][0] <= as_of:
                continue
            row = self.rows.get(memory_id)
            if row is None or row[7] > as_of:
                continue
            last = None
            for d in decisions:  # in (decided_at, seq) order: the last one by as_of
                if d[0] > as_of:
                    break
                last = d
            then = row[5] if last is None else last[2]
            out.append((row[0], row[1], row[2], row[3], row[4], row[5], then, row[7],
                        None if last is None else last[4], None if last is None else last[5],
                        1 if last is None else last[3], row[7] if last is None else last[0], row[12], row[6],
                        self.originals.get(memory_id) if then == row[5] else None))
        return out

    def live(self, ids: Sequence[str]) -> list[tuple]:
        """The ``LIVE_COLUMNS`` rows of ``ids`` the team holds."""
        return [self.rows[i][:12] for i in ids if i in self.rows]

    def add(self, rows: Sequence[tuple], log: Sequence[tuple], originals: Sequence[tuple]) -> None:
        """Fold rows written or changed, decisions appended and originals read since into what is held."""
        for r in rows:
            self.rows[r[0]] = tuple(r)
        for d in log:
            self.log.setdefault(d[0], []).append(tuple(d[1:]))
        for memory_id in {d[0] for d in log}:
            self.log[memory_id] = sorted(set(self.log[memory_id]), key=lambda d: (d[0], d[1]))
        for memory_id, raw in originals:
            self.originals[memory_id] = raw
        self.read_to = (max([self.read_to[0], *(int(r[12]) for r in rows)]),
                        max([self.read_to[1], *(int(d[2]) for d in log)]))


def load_rows(db: "Backend", team: str) -> TeamRows | None:
    """The team's rows, log and originals with its version, in one snapshot; None where the team is unknown."""
    state, rows, log, originals = db.execute_all([(STATE, {"team": team}), (_LIVE, {"team": team}),
                                                  (_LOG, {"team": team}), (_ORIGINALS, {"team": team})])
    if not state:
        return None
    held = TeamRows(int(state[0][0]), forgotten=state[0][3])
    held.add(rows, log, originals)
    return held


def refresh_rows(db: "Backend", team: str, held: TeamRows) -> bool:
    """Bring ``held`` up by what was written or decided on since it was read, in one snapshot; False where that
    cannot be done (the team is gone, or lost rows: a forget) and the caller reads it again whole."""
    rowid, seq = held.read_to
    args = {"team": team, "rowid": rowid, "seq": seq}
    state, rows, log, originals = db.execute_all([(STATE, {"team": team}), (_LIVE + _CHANGED, args),
                                                  (_LOG + " AND seq > :seq", args),
                                                  (_ORIGINALS + _CHANGED, args)])
    if not state or state[0][3] != held.forgotten:
        return False
    held.add(rows, log, originals)
    held.version = int(state[0][0])
    return len(held.rows) == int(state[0][1])
