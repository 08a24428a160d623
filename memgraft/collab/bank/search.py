"""Dense search over one team: live (with an open transaction's writes overlaid) or as of a past time.

Why as-of search works without a vector per decision: rows whose text then is
today's reuse today's stored vector, rows whose text then was their original use
the stored original's, and only a text revised twice is embedded again (through the
cache). ``MemoryBank`` supplies ``memories`` and ``as_of_reads`` (the reads).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Sequence

import numpy as np

from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.index import Overlay, rank, with_vec
from memgraft.collab.bank.schema import iso, row_to_memory, to_us
from memgraft.collab.bank.vectors import BankVectors
from memgraft.collab.data import unmarked
from memgraft.collab.types import Memory, MemoryType, as_utc

if TYPE_CHECKING:
    from memgraft.collab.bank.team_rows import TeamRows
    from memgraft.collab.bank.transaction import GroupTransaction


AS_OF_GUESS_SLACK = 16  # rows guessed past k: today's ranks of rows decided on since may push a few out
AS_OF_GUESS_MAX_ROWS = 5_000  # a team's cached rows up to which the guess (one matmul) is cheaper than a round trip


class BankSearch(BankVectors):
    """Top-k search by cosine to maintained texts; the reads it needs come from ``MemoryBank``."""

    def teams(self) -> list[str]:
        raise NotImplementedError  # MemoryBank reads them

    def memories(self, team: str, as_of: datetime | None = None, types: Sequence[MemoryType] | None = None,
                 ids: Sequence[str] | None = None) -> list[Memory]:
        raise NotImplementedError  # MemoryBank reads them

    def as_of_reads(self, team: str, as_of: datetime, ids: Sequence[str]
                    ) -> tuple[list[tuple[Memory, str, np.ndarray | None]], dict[str, Memory]]:
        raise NotImplementedError  # MemoryBank reads them

    def as_of_reads_held(self, held: TeamRows, as_of: datetime, ids: Sequence[str]
                         ) -> tuple[list[tuple[Memory, str, np.ndarray | None]], dict[str, Memory]]:
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
            for memory_id, (vec, valid, is_team, t_us) in kept.items():
                if vec is None:  # unchanged text: the committed vector still holds
                    if memory_id not in unchanged:
                        raise BankError(f"{self.where} stores no embeddings: open it with an embedder to search")
                    vec = unchanged[memory_id][0]
                overlay[memory_id] = (vec, valid, is_team, t_us)
            # every pending row is left out of the committed rows: the overlay has it, or earlier_only drops it
            cached = self._indexes.get(team) if tx is None and self._db.peeks_version and \
                not self._db.ranks_team_in_db(team) else None
            if cached is not None:
                # From the cached matrix unchecked, its version read with the hits' rows (one round trip on
                # PostgreSQL, where the check was a statement of its own); ranked again if it was stale.
                hits = rank(cached, q, k, valid_only, types, None, overlay)
                with self._db.peek_version(team) as seen:
                    found = {m.memory_id: m for m in self.memories(team, ids=[h[0] for h in hits])}
                if seen.version == cached.version and self._indexes.get(team) is cached:
                    return [(with_vec(found[i], v), s) for i, s, v in hits]
            idx = self._ranked_rows(team, q, k, valid_only, types, None, list(pending))
            hits = rank(idx, q, k, valid_only, types, None, overlay)
            found = {m.memory_id: m for m in self.memories(team, ids=[h[0] for h in hits])}
        return [(with_vec(found[i], v), s) for i, s, v in hits]

    def _search_as_of(self, team: str, q: np.ndarray, k: int, as_of: datetime, valid_only: bool,
                      types: Sequence[MemoryType] | None) -> list[tuple[Memory, float]]:
        when, until_us = iso(as_of), to_us(as_of)
        held = self._held_rows(team)
        if held is not None:  # PostgreSQL, a cached team: the past rebuilt in-process, as SQLite's query does it
            version: int | None = held.version
            then_now, live = self.as_of_reads_held(held, as_of, self._likely_hits(team, q, k, valid_only, types,
                                                                                  until_us))
        else:
            self._db.use_team(team)
            with self._db.peek_version(team) as seen:  # read with the log (PostgreSQL): the matrix is checked free
                then_now, live = self.as_of_reads(team, as_of, self._likely_hits(team, q, k, valid_only, types,
                                                                                 until_us))
            version = seen.version
        past, changed = [m for m, *_ in then_now], [m.memory_id for m, *_ in then_now]
        # what it said then = what it says today (a label added since: ``unmarked``): today's vector; else the
        # original's, stored (the updater revises a memory once); else (revised twice) embedded afresh
        unchanged = {m.memory_id for m, text, _ in then_now if unmarked(m.maintained) == unmarked(text)}
        originals = {m.memory_id: vec for m, _, vec in then_now if vec is not None and m.memory_id not in unchanged}
        fresh = [unmarked(m.maintained) for m, text, vec in then_now if m.memory_id not in unchanged and vec is None]
        fresh_vecs = dict(zip(fresh, self._embed_cached(fresh))) if fresh else {}
        stored = self._stored(team, list(unchanged), version)
        overlay: Overlay = {}
        for m in past:
            vec = stored[m.memory_id][0] if m.memory_id in unchanged else originals.get(m.memory_id)
            if vec is None:
                vec = fresh_vecs[unmarked(m.maintained)]
            overlay[m.memory_id] = (vec, m.valid, m.type == "team", to_us(m.time))
        idx = self._ranked_rows(team, q, k, valid_only, types, when, changed, version)
        hits = rank(idx, q, k, valid_only, types, until_us, overlay)
        # a hit's row then: the log's, where it was decided on since; else its live row, if read with the log and
        # not decided on after as_of (a guard: one snapshot holds both); else read as of then
        found = {m.memory_id: m for m in past} | {
            i: m for i, m in live.items() if i not in overlay and m.maintained_at <= as_of and m.time <= as_of}
        missing = [h[0] for h in hits if h[0] not in found]
        if missing and held is not None:  # not decided on since as_of (else the log rebuilt it): its row then
            found.update((r[0], row_to_memory(r)) for r in held.live(missing))
            missing = [i for i in missing if i not in found]
        if missing:
            found.update((m.memory_id, m) for m in self.memories(team, as_of=as_of, ids=missing))
        return [(with_vec(found[i], v), s) for i, s, v in hits]

    def _likely_hits(self, team: str, q: np.ndarray, k: int, valid_only: bool, types: Sequence[MemoryType] | None,
                     until_us: int) -> list[str]:
        """An as-of search's hits as the cached matrix ranks them today, ``AS_OF_GUESS_SLACK`` past k, where the
        backend reads them in the log's round trip (PostgreSQL) and the matrix is small: its rows not decided on
        since are their rows then, so the hits need no second round trip. Past ``AS_OF_GUESS_MAX_ROWS`` the matmul
        this adds costs more than the round trip it saves."""
        cached = self._indexes.get(team) if self._db.peeks_version and not self._db.ranks_team_in_db(team) else None
        if cached is None or cached.n > AS_OF_GUESS_MAX_ROWS:
            return []
        return [h[0] for h in rank(cached, q, k + AS_OF_GUESS_SLACK, valid_only, types, until_us, {})]
