"""One team's vectors as a matrix in memory, and the ranking over it.

Why: search is the updater's hot path (one per group), so a team's maintained-text
vectors live in one growable float32 matrix with boolean/time masks beside it, and
ranking is one matmul plus masks, no per-row Python. The matrix is built once from
the stored blobs and then kept in step with our own commits.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from memgraft.collab.types import Memory, MemoryType

# Scores this close are tied. Two memories with the same text have the same vector, yet BLAS sums their dot
# products with the query differently by where they sit in the matrix (seen on an AMD EPYC: SQLite's whole
# matrix and PostgreSQL's top-N ordered two such twins apart, and the decisions their order names differed).
TIE_EPS = 1e-6

# memory_id -> (vector, valid, is_team, time µs): rows that replace or add to the committed matrix for one search
Overlay = dict[str, tuple[np.ndarray, bool, bool, int]]


class TeamIndex:
    """One team's maintained-text vectors in a growable matrix, with the masks search filters on."""

    def __init__(self, dim: int, version: int, capacity: int = 64):
        self.version = version
        # what the stored rows held when last read (``stored_index``): the team's last write position, its last
        # decision's seq and its forget count; None where unknown (a top-N), so a stale index is read again whole
        self.read_to: tuple[int, int, str | None] | None = None
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


def rank(idx: TeamIndex | None, q: np.ndarray, k: int, valid_only: bool, types: Sequence[MemoryType] | None,
         until_us: int | None, overlay: Overlay) -> list[tuple[str, float, np.ndarray]]:
    """Score the committed rows (minus those the overlay replaces) and the overlay rows; top-k by score.

    One matmul over the whole matrix and masks, no per-row Python: this is the hot path.
    """
    want_team = want_team_of(types)
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
    extra = [(m, v, t) for m, (v, valid, is_team, t) in overlay.items()
             if (valid or not valid_only) and (want_team is None or is_team == want_team)]
    scores = np.concatenate([base, np.stack([v for _, v, _ in extra]) @ q]) if extra else base
    n_live = int(np.isfinite(scores).sum())
    k = min(k, n_live)
    if k <= 0:
        return []
    if len(scores) > k:  # the k-th best score, and every row reaching it: ties at the cut are broken below too
        top = np.flatnonzero(scores >= np.partition(scores, len(scores) - k)[len(scores) - k] - TIE_EPS)
    else:
        top = np.arange(len(scores))
    nb = len(base)

    def written(i: int) -> tuple[int, str]:
        """Ties break by write time, then id: not by position, which an overlay row does not keep, so a
        search as of a past time orders ties as the live search did then, on either backend."""
        if i < nb:
            return int(idx.time_us[i]), idx.ids[i]  # type: ignore[union-attr]
        return extra[i - nb][2], extra[i - nb][0]

    tied: list[list[int]] = []  # runs of scores within TIE_EPS of the run's best
    for i in sorted(top.tolist(), key=lambda i: -scores[i]):
        if tied and scores[tied[-1][0]] - scores[i] <= TIE_EPS:
            tied[-1].append(i)
        else:
            tied.append([i])
    ranked = [i for run in tied for i in sorted(run, key=written)][:k]
    return [(idx.ids[i], float(scores[i]), idx.vecs[i]) if i < nb else  # type: ignore[union-attr]
            (extra[i - nb][0], float(scores[i]), extra[i - nb][1]) for i in ranked]


def want_team_of(types: Sequence[MemoryType] | None) -> bool | None:
    """None: both kinds; True: team memories only; False: individual only."""
    chosen = set(types or ())
    if chosen - {"team", "individual"}:
        raise ValueError(f"memory types are 'team' and 'individual', not {sorted(chosen)}")
    return None if len(chosen) != 1 else chosen == {"team"}


def with_vec(memory: Memory, vec: np.ndarray) -> Memory:
    memory.embedding = np.array(vec, dtype=np.float32)
    return memory
