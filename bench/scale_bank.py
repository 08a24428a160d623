"""A many-team synthetic bank loaded in bulk, for collab_scale: the rows ``apply_group`` would write, without it.

Why bulk: a million memories through ``apply_group`` take hours on 2 cores; the
search and as-of paths read only the rows, so the rows are written directly in
the bank's own schema (SQLite: ``executemany`` in one transaction; PostgreSQL:
binary ``COPY`` as the server's superuser, which row-level security lets write
every team at once; the team counts come from the bank's own trigger). Each team's
vectors are seeded by the team, so the exact top-k is computed again from the seed
(``team_vectors``) and never kept for all teams at once. A share ``revise`` of each
team's memories is revised by a later group (invalid, "[Outdated …]" text, a new
vector; the decision in the log), as the updater leaves them, so as-of search has
the log to rebuild from.
"""

from __future__ import annotations

import random
import time
from functools import lru_cache
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from bench.synthetic_bank import T0, SyntheticEmbedder, sentences

GROUP_SIZE = 50  # memories per synthetic group (an hour apart within a team)


@dataclass(frozen=True)
class Layout:
    """Team names and sizes: one big team, the rest of ``memories`` spread evenly over the other teams."""

    teams: int
    memories: int
    big_team: int

    def sizes(self) -> dict[str, int]:
        small, rest = self.teams - 1, self.memories - self.big_team
        out = {"big": self.big_team}
        for i in range(small):
            out[f"t{i:04d}"] = rest // small + (1 if i < rest % small else 0)
        return out


VECTORS = ("clustered", "random")
CENTRES = 4096  # topics every team's memories are drawn around (``clustered``)
MEMORIES_PER_CENTRE = 50  # a team of n memories uses n / this of them (at least 8, at most CENTRES)
# Per-dimension noise around a topic's centre: a memory's cosine to its centre is 1/sqrt(1 + 384 s^2) ~ 0.65 and two
# memories of one topic ~0.42 apart, as all-MiniLM-L6-v2 puts sentences on one subject (0.3-0.7), against ~0 between
# topics. Random uniform vectors (``random``) have no such structure: every point is about as far from every other,
# HNSW's worst case, and not what a bank of real embeddings holds.
NOISE = 0.06


@lru_cache(maxsize=4)
def centres(dim: int) -> np.ndarray:
    rng = np.random.default_rng(20251203)
    c = rng.standard_normal((CENTRES, dim), dtype=np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def team_centres(team: str, n: int, dim: int) -> np.ndarray:
    """The topics a team of ``n`` memories writes about: its own draw from the shared centres."""
    rng = np.random.default_rng(abs(hash_team(team)) + 2)
    m = int(min(CENTRES, max(8, n // MEMORIES_PER_CENTRE)))
    return centres(dim)[np.sort(rng.choice(CENTRES, size=m, replace=False))]


def draw(rng: np.random.Generator, count: int, dim: int, kind: str, around: np.ndarray | None) -> np.ndarray:
    """``count`` unit vectors: uniform on the sphere (``random``), or each near one of ``around``'s rows."""
    v = rng.standard_normal((count, dim), dtype=np.float32)
    if kind == "clustered":
        assert around is not None
        v = around[rng.integers(0, len(around), size=count)] + NOISE * v
    elif kind != "random":
        raise ValueError(f"vectors are one of {VECTORS}, not {kind!r}")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def team_vectors(team: str, n: int, dim: int, revised: np.ndarray,
                 kind: str = "clustered") -> tuple[np.ndarray, np.ndarray]:
    """The team's original vectors and its current ones (a revised memory's text, so its vector, is new: on the
    same topic when clustered)."""
    rng = np.random.default_rng(abs(hash_team(team)))
    around = team_centres(team, n, dim) if kind == "clustered" else None
    orig = draw(rng, n, dim, kind, around)
    cur = orig.copy()
    if len(revised):
        new = draw(rng, len(revised), dim, "random", None)
        if kind == "clustered":  # near the revised memory's own topic: its nearest centre
            near = around[np.argmax(orig[revised] @ around.T, axis=1)] + NOISE * new * np.sqrt(dim)
            new = near / np.linalg.norm(near, axis=1, keepdims=True)
        cur[revised] = new
    return orig, cur


def query_vectors(team: str, n: int, dim: int, count: int, kind: str, seed: int) -> np.ndarray:
    """Queries as the team's memories are drawn: near its topics (``clustered``), or uniform (``random``)."""
    rng = np.random.default_rng([seed, abs(hash_team(team)) % 2**32])
    return draw(rng, count, dim, kind, team_centres(team, n, dim) if kind == "clustered" else None)


def hash_team(team: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha1(team.encode()).digest()[:8], "little")


def revised_of(team: str, n: int, revise: float) -> np.ndarray:
    """Which of the team's memories a later group revised (never one of the last group's), sorted."""
    groups = -(-n // GROUP_SIZE)
    pool = n - (n - (groups - 1) * GROUP_SIZE) if groups > 1 else 0
    rng = np.random.default_rng(abs(hash_team(team)) + 1)
    return np.sort(rng.choice(pool, size=min(pool, int(revise * n)), replace=False)) if pool else np.zeros(0, int)


def team_rows(team: str, n: int, dim: int, revise: float, texts: Iterator[tuple[str, str]],
              vectors: str = "clustered") -> tuple[list[tuple], list[tuple], list[tuple]]:
    """The team's groups, memories (vectors as float32 arrays) and decisions, in write order."""
    from memgraft.collab.bank.schema import iso

    groups_n = -(-n // GROUP_SIZE)
    revised = revised_of(team, n, revise)
    orig, cur = team_vectors(team, n, dim, revised, vectors)
    rng = random.Random(team)
    applied = iso(T0)
    groups = [(team, f"g{g:05d}", iso(T0 + timedelta(hours=g)), applied) for g in range(groups_n)]
    decided: dict[int, int] = {int(i): rng.randrange(int(i) // GROUP_SIZE + 1, groups_n) for i in revised}
    memories, decisions = [], []
    for i in range(n):
        g = i // GROUP_SIZE
        typ, text = next(texts)
        mid, t = memory_id(i), groups[g][2]
        if i in decided:
            dg = groups[decided[i]]
            after = f"[Outdated since {dg[2][:16]}: superseded by group {dg[1]}] {text}"
            memories.append((team, mid, groups[g][1], typ, "lead" if typ == "team" else "ana", text, after, t,
                             "contradiction", "revise", 0, dg[2], cur[i], orig[i]))
            decisions.append((f"d-{team}-{dg[1]}-{mid}", team, mid, dg[1], dg[2], "inter", "contradiction", "revise",
                              text, after, 1, 0, "bench", "synthetic"))
        else:
            memories.append((team, mid, groups[g][1], typ, "lead" if typ == "team" else "ana", text, text, t,
                             None, None, 1, t, orig[i], orig[i]))
    decisions.sort(key=lambda d: d[4])  # the log in the order the groups applied them
    return groups, memories, decisions


MEMORY_COLUMNS = ("team, memory_id, group_id, type, author, original, maintained, time, relation, action, valid, "
                  "maintained_at, embedding, original_embedding")
DECISION_COLUMNS = ("decision_id, team, memory_id, group_id, decided_at, level, relation, action, before, after, "
                    "valid_before, valid_after, decided_by, reason")


def load(location: str | Path, superuser_url: str | None, layout: Layout, revise: float, name: str, dim: int,
         seed: int = 0, vectors: str = "clustered") -> dict[str, Any]:
    """Make the bank (its schema, the embedder bound) and write every team's rows in bulk; the build's figures."""
    from memgraft.collab.bank import open_bank

    open_bank(location, SyntheticEmbedder(name, dim, seed)).close()  # the schema, the embedder, the vector type
    texts = sentences(random.Random(f"bench-scale:{seed}"))
    t = time.perf_counter()
    sizes = layout.sizes()
    if superuser_url is None:
        _load_sqlite(Path(location), sizes, dim, revise, texts, vectors)
    else:
        _load_postgres(superuser_url, sizes, dim, revise, texts, vectors)
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "memories": sum(sizes.values()), "teams": len(sizes),
            "revised": sum(len(revised_of(team, n, revise)) for team, n in sizes.items())}


def _load_sqlite(path: Path, sizes: dict[str, int], dim: int, revise: float, texts: Iterator, vectors: str) -> None:
    import sqlite3

    from memgraft.collab.bank.schema import to_blob

    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN")
    for team, n in sizes.items():
        groups, memories, decisions = team_rows(team, n, dim, revise, texts, vectors)
        con.execute("INSERT INTO teams (team, version) VALUES (?, 1)", (team,))
        con.executemany("INSERT INTO groups VALUES (?, ?, ?, ?)", groups)
        con.executemany(f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES ({','.join('?' * 14)})",
                        [(*m[:12], to_blob(m[12]), to_blob(m[13])) for m in memories])
        con.executemany(f"INSERT INTO decisions ({DECISION_COLUMNS}) VALUES ({','.join('?' * 14)})", decisions)
    con.execute("COMMIT")
    con.execute("ANALYZE")
    con.close()


def _load_postgres(url: str, sizes: dict[str, int], dim: int, revise: float, texts: Iterator, vectors: str) -> None:
    import psycopg
    from pgvector.psycopg import register_vector

    types = ["text"] * 10 + ["integer", "text", "vector", "vector"]
    with psycopg.connect(url) as con:
        register_vector(con)
        with con.cursor() as cur:
            for team, n in sizes.items():
                groups, memories, decisions = team_rows(team, n, dim, revise, texts, vectors)
                cur.execute("INSERT INTO teams (team, version) VALUES (%s, 1)", (team,))
                with cur.copy("COPY groups FROM STDIN") as copy:
                    for row in groups:
                        copy.write_row(row)
                with cur.copy(f"COPY memories ({MEMORY_COLUMNS}) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(types)
                    for row in memories:
                        copy.write_row(row)
                with cur.copy(f"COPY decisions ({DECISION_COLUMNS}) FROM STDIN") as copy:
                    for row in decisions:
                        copy.write_row(row)
        con.commit()
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("VACUUM ANALYZE")  # as autovacuum leaves a live server: visibility map and statistics


def superuser(url: str, role: str) -> str:
    """The scratch server's superuser URL for the same database (the bulk load's only)."""
    return url.replace(f"://{role}@", "://postgres:@", 1)


def when_mid(n: int) -> datetime:
    """Halfway through a team of ``n`` memories' stream: an as-of time with part of its decisions after it."""
    return T0 + timedelta(hours=(-(-n // GROUP_SIZE)) // 2, minutes=30)


def memory_id(i: int) -> str:
    """The id ``team_rows`` gives a team's ``i``-th memory."""
    return f"g{i // GROUP_SIZE:05d}-m{i % GROUP_SIZE:03d}"
