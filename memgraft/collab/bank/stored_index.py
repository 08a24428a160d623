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


def load_index(db: "Backend", team: str, dim: int, version: int) -> TeamIndex:
    """A team's index from its stored vectors, in write order."""
    rows = db.execute(
        "SELECT memory_id, embedding, valid, type, time FROM memories WHERE team = ? ORDER BY rowid",
        (team,)).fetchall()
    return index_of_rows(db, team, rows, dim, version)


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
