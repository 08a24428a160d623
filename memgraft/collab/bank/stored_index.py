"""A team's index read from the rows a backend stores (SQLite's blobs, PostgreSQL's top-N rows).

Apart from :mod:`.index` so that the in-memory matrix knows nothing of databases: the
backends stand on the index (PostgreSQL's top-N comes back as one), and this reads
through a backend, above both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.index import TeamIndex
from memgraft.collab.bank.schema import to_us

if TYPE_CHECKING:
    from memgraft.collab.bank.backend import Backend


# The team's version, memory count and last decision, read before its rows (one statement, one snapshot): rows
# read after are at least as new, so what they add is never missed, only possibly read again next time.
FORGOTTEN = "forgotten:"  # + team: a ``meta`` key counting the team's forgets (``forget.forget_team``)
STATE = ("SELECT version, (SELECT COUNT(*) FROM memories WHERE team = :team), "
         "(SELECT COALESCE(MAX(seq), 0) FROM decisions WHERE team = :team), "
         f"(SELECT value FROM meta WHERE key = '{FORGOTTEN}' || :team) FROM teams WHERE team = :team")
ROW = "SELECT memory_id, embedding, valid, type, time, rowid FROM memories"
# Rows written since ``rowid`` and rows a decision since ``seq`` changed: the only way a stored memory changes is a
# decision (``record_many``), which appends to the log, so the log's seq says what changed; a forget (rows gone)
# shows in its count (``FORGOTTEN``), or as a memory count the index no longer matches, and is read again whole. Duplicates (a new row also decided on) are
# folded by ``TeamIndex.put``.
SINCE = (f"{ROW} WHERE {{no_index}}team = :team AND rowid > :rowid UNION ALL "
         f"{ROW} WHERE team = :team AND memory_id IN (SELECT memory_id FROM decisions WHERE team = :team AND seq > :seq) "
         "ORDER BY 6")


def load_index(db: "Backend", team: str, dim: int, version: int) -> TeamIndex:
    """A team's index from its stored vectors, in write order, marked with what it read (``refresh_index``)."""
    state = db.execute(STATE, {"team": team}).fetchone()
    rows = db.execute(f"{ROW} WHERE team = ? ORDER BY rowid", (team,)).fetchall()
    idx = index_of_rows(db, team, [r[:5] for r in rows], dim, version if state is None else state[0])
    if state is not None:
        idx.read_to = (max((int(r[5]) for r in rows), default=0), int(state[2]), state[3])
    return idx


def refresh_index(db: "Backend", team: str, idx: TeamIndex) -> bool:
    """Bring a stale cached index up to the stored rows by reading only what changed since it was read (rows
    written after it, rows decided on after it); False when that cannot be done (the index was never read from
    the rows, or the team lost rows: a forget), and the caller reads the team again whole.

    Why: a replica whose cached team another replica wrote read the whole team again (~0.25 s per 20,000
    memories on PostgreSQL); a group adds a few rows and changes a few."""
    if idx.read_to is None:
        return False
    state = db.execute(STATE, {"team": team}).fetchone()
    rowid, seq, forgotten = idx.read_to
    if state is None or state[3] != forgotten:
        return False
    rows = db.execute(SINCE.format(no_index=db.team_no_index), {"team": team, "rowid": rowid, "seq": seq}).fetchall()
    missing = [r[0] for r in rows if r[1] is None or db.vec_dim(r[1]) != idx.vecs.shape[1]]
    if missing:
        raise BankError(f"team {team!r}: memories {missing[:5]} have no stored {idx.vecs.shape[1]}-dim embedding")
    vecs = db.decode_vecs([r[1] for r in rows], idx.vecs.shape[1])
    for r, vec in zip(rows, vecs):
        idx.put(r[0], vec, bool(r[2]), r[3] == "team", to_us(r[4]))
    if idx.n != int(state[1]):
        return False  # rows were deleted (forget), or written between the two reads: read it whole
    idx.version = int(state[0])
    idx.read_to = (max([rowid, *(int(r[5]) for r in rows)]), max(seq, int(state[2])), forgotten)
    return True


def index_of_rows(db: "Backend", team: str, rows: Sequence[Sequence], dim: int, version: int) -> TeamIndex:
    """An index of (memory_id, vector, valid, type, time) rows; refuses rows without a ``dim``-dim vector."""
    missing = [r[0] for r in rows if r[1] is None or db.vec_dim(r[1]) != dim]
    if missing:
        raise BankError(f"team {team!r}: memories {missing[:5]} have no stored {dim}-dim embedding")
    idx = TeamIndex(dim, version, capacity=max(64, len(rows)))
    idx.extend([r[0] for r in rows], db.decode_vecs([r[1] for r in rows], dim),
               np.array([r[2] for r in rows], bool), np.array([r[3] == "team" for r in rows], bool),
               np.array([to_us(r[4]) for r in rows], np.int64))
    return idx
