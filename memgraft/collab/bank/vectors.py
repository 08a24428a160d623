"""Where the bank's vectors come from: the bound embedder, a small text cache, and the per-team indexes.

Why a separate layer: the bank stores one vector per memory (its maintained text's),
so everything else (a text query, an as-of text that differs from today's) is
embedded on demand and cached. The rows a search ranks come from the backend's
database where it ranks there (PostgreSQL's HNSW index), else from per-team matrices
read from the rows once, brought up by the rows written or decided on since when another
process has written the team (``teams.version``; ``stored_index.refresh_index``), and
otherwise kept in step with our own commits.
``MemoryBank`` builds on this; the state it uses is declared here and set in
``MemoryBank.__init__``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Sequence

import numpy as np

from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.index import TeamIndex, want_team_of
from memgraft.collab.bank.stored_index import load_index, refresh_index
from memgraft.collab.bank.team_rows import TeamRows, load_rows, refresh_rows
from memgraft.collab.bank.schema import to_us
from memgraft.collab.types import MemoryType
from memgraft.models.embedder import Embedder

if TYPE_CHECKING:
    from memgraft.collab.bank.backend import Backend
    from memgraft.collab.bank.transaction import GroupTransaction

EMBED_CACHE_SIZE = 4096
# A team's rows held in-process for as-of search (``team_rows``), read with its matrix, up to this size: a larger
# team's as-of search reads its log from the database within 2x of SQLite already (the 200,000 team: 1.6-1.9x),
# and holding a 100,000-memory team's texts would take a replica seconds to read and hundreds of MB
HELD_MAX_ROWS = 5_000


class BankVectors:
    """Embedding, the text-vector cache and the team indexes of one open bank."""

    path: str
    where: str
    embedder: Embedder | None
    embedder_name: str | None
    dim: int | None
    _db: Backend
    _lock: threading.RLock
    _tx: GroupTransaction | None
    _indexes: dict[str, TeamIndex]
    _rows_held: dict[str, TeamRows]
    _cache: OrderedDict[str, np.ndarray]

    def _ranked_rows(self, team: str, q: np.ndarray, k: int, valid_only: bool, types: Sequence[MemoryType] | None,
                     until: str | None, exclude: Sequence[str], version: int | None = None) -> TeamIndex | None:
        """The committed rows ``index.rank`` scores: the database's top-N, or the team's whole cached matrix.

        ``exclude`` (rows an overlay replaces) and the filters are applied in the database;
        ``rank`` applies them again, which changes nothing there and filters the matrix here.
        ``version``: the team's version as just read with another statement (``peek_version``), so none is read.
        """
        if not self._db.ranks_team_in_db(team):
            return self._index(team, version)
        self._indexes.pop(team, None)  # grown past the cached matrices (PostgreSQL): its own index serves it now
        self._rows_held.pop(team, None)
        if self.dim is None:
            raise BankError(f"{self.where} stores no embeddings: open it with an embedder to search")
        return self._db.top_n(team, q, k, self.dim, valid_only, want_team_of(types), until, exclude)

    def _stored(self, team: str, memory_ids: Sequence[str],
                version: int | None = None) -> dict[str, tuple[np.ndarray, int]]:
        """Stored vector and time (µs) of each id the team holds (as this connection sees it)."""
        if not memory_ids:
            return {}  # a search outside a transaction asks for none: no statement for it
        if not self._db.ranks_team_in_db(team):
            idx = self._index(team, version)
            if idx is None:
                return {}
            return {m: (idx.vecs[idx.row_of[m]], int(idx.time_us[idx.row_of[m]])) for m in memory_ids
                    if m in idx.row_of}
        if self.dim is None:
            raise BankError(f"{self.where} stores no embeddings: open it with an embedder to search")
        self._db.use_team(team)
        out = {}
        for cond, args in self._db.id_filters("memory_id", list(dict.fromkeys(memory_ids))):
            for m, raw, t in self._db.execute("SELECT memory_id, embedding, time FROM memories WHERE team = :team "
                                              f"AND {cond}", {"team": team, **args}):
                if raw is not None:
                    out[m] = (self._db.decode_vecs([raw], self.dim)[0], to_us(t))
        return out

    def _index(self, team: str, version: int | None = None) -> TeamIndex | None:
        """The team's vectors, (re)built from the stored rows when missing, brought up to them when stale (another
        process wrote it: only the rows written or decided on since are read). ``version``: the team's version,
        if the caller has just read it (``peek_version``); else it is read here."""
        with self._lock:
            if version is None:
                row = self._db.execute_shared("SELECT version FROM teams WHERE team = ?", (team,)).fetchone()
            else:
                row = (version,)
            if row is None:
                return None
            cached = self._indexes.get(team)
            if cached is not None and cached.version == row[0]:
                return cached  # inside a transaction: the committed state; its writes come as an overlay
            if self.dim is None:
                raise BankError(f"{self.where} stores no embeddings: open it with an embedder to search")
            if self._tx is not None and self._tx.team == team:
                # group_transaction cached every existing team first, so this team is the open
                # transaction's own creation: committed, it holds nothing yet.
                self._indexes[team] = TeamIndex(self.dim, row[0])
                self._indexes[team].read_to = (0, 0, None)
                return self._indexes[team]
            self._db.use_team(team)  # PostgreSQL: row-level security shows the connection this team's rows only
            if cached is not None and refresh_index(self._db, team, cached):
                return cached
            idx = load_index(self._db, team, self.dim, row[0])
            self._indexes[team] = idx
            if self._db.peeks_version and idx.n <= HELD_MAX_ROWS:  # its rows too, for as-of search (``_held_rows``)
                held = load_rows(self._db, team)
                if held is not None:
                    self._rows_held[team] = held
            return idx

    def _held_rows(self, team: str) -> TeamRows | None:
        """The team's rows and decision log held in-process (``team_rows``): on PostgreSQL, for a team whose matrix
        this process caches, read with it and brought up as it is, at the matrix's version; None elsewhere, or
        where the two were read at different versions (another writer between the reads), and the as-of search
        reads the database. Costs the version's statement when both are current."""
        if not self._db.peeks_version or team not in self._indexes or self._db.ranks_team_in_db(team):
            return None
        with self._lock:
            idx = self._index(team)
            if idx is None or idx.n > HELD_MAX_ROWS:
                self._rows_held.pop(team, None)
                return None
            held = self._rows_held.get(team)
            if held is None or held.version != idx.version:
                self._db.use_team(team)
                if held is None or not refresh_rows(self._db, team, held):
                    held = load_rows(self._db, team)
                if held is None:
                    self._rows_held.pop(team, None)
                    return None
                self._rows_held[team] = held
            return held if held.version == idx.version else None

    def _after_commit(self, team: str, pending: dict[str, tuple[np.ndarray | None, bool, bool, int]],
                      version: int) -> None:
        """Fold a committed group (its rows as ``GroupTransaction.pending`` holds them) into the cached index, or
        drop it if someone else wrote the team meanwhile."""
        with self._lock:
            idx = self._indexes.get(team)
            if idx is None:
                return
            if idx.version != version - 1 or any(v is None and m not in idx.row_of for m, (v, *_) in pending.items()):
                return  # someone else wrote the team meanwhile: left stale, the next search reads what changed since
            for memory_id, (vec, valid, is_team, t_us) in pending.items():
                idx.put(memory_id, vec, valid, is_team, t_us)
            idx.version = version

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for texts about to be stored; None when the bank keeps no embeddings at all."""
        if self.embedder is None:
            if self.dim is not None:
                raise BankError(f"{self.where} stores {self.embedder_name!r} embeddings: open it with that "
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
                raise BankError(f"{self.where} stores no embeddings: open it with an embedder to search")
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

