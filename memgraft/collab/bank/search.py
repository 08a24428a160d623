"""Dense search over one team: live (with an open transaction's writes overlaid) or as of a past time.

Why as-of search works without a vector per decision: rows untouched since
``as_of`` reuse today's stored vector, and only the few whose as-of text differs
from today's are embedded again (through the cache), so the bank stays one vector
per memory. ``MemoryBank`` supplies ``memories`` (the reads) this relies on.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Sequence

import numpy as np

from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.index import Overlay, rank, with_vec
from memgraft.collab.bank.schema import iso, to_us
from memgraft.collab.bank.vectors import BankVectors
from memgraft.collab.types import Memory, MemoryType, as_utc

if TYPE_CHECKING:
    from memgraft.collab.bank.transaction import GroupTransaction


class BankSearch(BankVectors):
    """Top-k search by cosine to maintained texts; the reads it needs come from ``MemoryBank``."""

    def teams(self) -> list[str]:
        raise NotImplementedError  # MemoryBank reads them

    def memories(self, team: str, as_of: datetime | None = None, types: Sequence[MemoryType] | None = None,
                 ids: Sequence[str] | None = None) -> list[Memory]:
        raise NotImplementedError  # MemoryBank reads them

    def embeddings(self, team: str, memory_ids: Sequence[str]) -> np.ndarray:
        """Stored vectors of the memories' current maintained texts, one row per id."""
        with self._lock:
            stored = self._stored(team, memory_ids)
            if not stored and (memory_ids or team not in self.teams()):
                raise BankError(f"team {team!r} has no memories")
            missing = [m for m in memory_ids if m not in stored]
            if missing:
                raise BankError(f"team {team!r} has no stored vectors for {missing[:5]}")
            return np.stack([stored[m][0] for m in memory_ids]) if memory_ids \
                else np.zeros((0, self.dim or 0), np.float32)

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
            pending = tx.pending if tx else {}
            new_ids = tx.new_ids if tx is not None and earlier_only else set()
            kept = {m: p for m, p in pending.items() if m not in new_ids}
            unchanged = self._stored(team, [m for m, (vec, *_) in kept.items() if vec is None])
            overlay: Overlay = {}
            for memory_id, (vec, valid, is_team, _) in kept.items():
                if vec is None:  # unchanged text: the committed vector still holds
                    if memory_id not in unchanged:
                        raise BankError(f"{self.where} stores no embeddings: open it with an embedder to search")
                    vec = unchanged[memory_id][0]
                overlay[memory_id] = (vec, valid, is_team)
            # every pending row is left out of the committed rows: the overlay has it, or earlier_only drops it
            idx = self._ranked_rows(team, q, k, valid_only, types, None, list(pending))
            hits = rank(idx, q, k, valid_only, types, None, overlay)
            found = {m.memory_id: m for m in self.memories(team, ids=[h[0] for h in hits])}
        return [(with_vec(found[i], v), s) for i, s, v in hits]

    def _search_as_of(self, team: str, q: np.ndarray, k: int, as_of: datetime, valid_only: bool,
                      types: Sequence[MemoryType] | None) -> list[tuple[Memory, float]]:
        when, until_us = iso(as_of), to_us(as_of)
        self._db.use_team(team)
        changed = [r[0] for r in self._db.execute(
            "SELECT DISTINCT memory_id FROM decisions WHERE team = ? AND decided_at > ?", (team, when))]
        stored = self._stored(team, changed)
        changed = [m for m in changed if stored[m][1] <= until_us]
        past = self.memories(team, as_of=as_of, ids=changed) if changed else []
        now = {m.memory_id: m.maintained for m in self.memories(team, ids=changed)} if changed else {}
        fresh = [m.maintained for m in past if m.maintained != now[m.memory_id]]
        fresh_vecs = dict(zip(fresh, self._embed_cached(fresh))) if fresh else {}
        overlay: Overlay = {}
        for m in past:  # text as of then: today's vector if unchanged since, else embedded afresh
            vec = fresh_vecs[m.maintained] if m.maintained in fresh_vecs else stored[m.memory_id][0]
            overlay[m.memory_id] = (vec, m.valid, m.type == "team")
        idx = self._ranked_rows(team, q, k, valid_only, types, when, changed)
        hits = rank(idx, q, k, valid_only, types, until_us, overlay)
        found = {m.memory_id: m for m in self.memories(team, as_of=as_of, ids=[h[0] for h in hits])}
        return [(with_vec(found[i], v), s) for i, s, v in hits]
