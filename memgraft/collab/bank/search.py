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

    def memories(self, team: str, as_of: datetime | None = None, types: Sequence[MemoryType] | None = None,
                 ids: Sequence[str] | None = None) -> list[Memory]:
        raise NotImplementedError  # MemoryBank reads them

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
            overlay: Overlay = {}
            for memory_id, (vec, valid, is_team, _) in (tx.pending.items() if tx else ()):
                if earlier_only and memory_id in tx.new_ids:  # type: ignore[union-attr]
                    continue
                if vec is None:  # unchanged text: the committed vector still holds
                    if idx is None:
                        raise BankError(f"{self.path} stores no embeddings: open it with an embedder to search")
                    vec = idx.vecs[idx.row_of[memory_id]]
                overlay[memory_id] = (vec, valid, is_team)
            hits = rank(idx, q, k, valid_only, types, None, overlay)
            found = {m.memory_id: m for m in self.memories(team, ids=[h[0] for h in hits])}
        return [(with_vec(found[i], v), s) for i, s, v in hits]

    def _search_as_of(self, team: str, q: np.ndarray, k: int, as_of: datetime, valid_only: bool,
                      types: Sequence[MemoryType] | None) -> list[tuple[Memory, float]]:
        idx = self._index(team)
        if idx is None:
            return []
        when = iso(as_of)
        changed = [r[0] for r in self._conn.execute(
            "SELECT DISTINCT memory_id FROM decisions WHERE team = ? AND decided_at > ?", (team, when))]
        changed = [m for m in changed if idx.time_us[idx.row_of[m]] <= to_us(as_of)]
        past = self.memories(team, as_of=as_of, ids=changed) if changed else []
        now = {m.memory_id: m.maintained for m in self.memories(team, ids=changed)} if changed else {}
        fresh = [m.maintained for m in past if m.maintained != now[m.memory_id]]
        fresh_vecs = dict(zip(fresh, self._embed_cached(fresh))) if fresh else {}
        overlay: Overlay = {}
        for m in past:  # text as of then: today's vector if unchanged since, else embedded afresh
            vec = fresh_vecs[m.maintained] if m.maintained in fresh_vecs else idx.vecs[idx.row_of[m.memory_id]]
            overlay[m.memory_id] = (vec, m.valid, m.type == "team")
        hits = rank(idx, q, k, valid_only, types, to_us(as_of), overlay)
        found = {m.memory_id: m for m in self.memories(team, as_of=as_of, ids=[h[0] for h in hits])}
        return [(with_vec(found[i], v), s) for i, s, v in hits]

