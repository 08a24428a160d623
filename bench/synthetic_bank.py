"""A synthetic HiCoMER bank for collab_search: template texts, random unit vectors, revisions through apply_group."""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)
TEAM = "bench"


class SyntheticEmbedder:
    """Seeded random unit vectors standing in for the real model's stored vectors (under its name and
    dim, so the bank and the retriever accept them); the query is always embedded by the real model."""

    def __init__(self, name: str, dim: int, seed: int = 0):
        self.name, self.dim = name, dim
        self._rng = np.random.default_rng(seed)

    def encode(self, texts):
        v = self._rng.standard_normal((len(texts), self.dim), dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def sentences(rng: random.Random):
    """Endless memory texts from the generator's templates, each with a serial so none repeats."""
    from memgraft.collab.data.generator import DOMAINS, INDIVIDUAL, TEAM_FIRST

    n = 0
    while True:
        dom = rng.choice(DOMAINS)
        topic = rng.choice(dom.topics)
        value = rng.choice(topic.values)
        n += 1
        if rng.random() < 0.2:
            text = TEAM_FIRST[rng.choice(sorted(TEAM_FIRST))].format(name=topic.name, value=value)
            yield "team", f"{text} (ref {n})"
        else:
            text = INDIVIDUAL[rng.choice(sorted(INDIVIDUAL))].format(work=dom.work, name=topic.name, value=value)
            yield "individual", f"{text} (entry {n})"


def storage_mb(location: str | Path) -> float:
    """The bank's size on disk: the SQLite file, or the PostgreSQL database."""
    if isinstance(location, Path):
        return location.stat().st_size / 2**20
    import psycopg

    with psycopg.connect(location) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20


def build_bank(path: str | Path, size: int, group_size: int, revise: float, name: str, dim: int,
               seed: int = 0) -> dict[str, Any]:
    """``size`` memories in groups through ``apply_group``; a share of earlier valid ones revised per group."""
    from memgraft.collab.bank import open_bank
    from memgraft.collab.types import Action, Decision, MemoryGroup, Relation

    rng = random.Random(f"bench-collab:{seed}")
    texts = sentences(rng)
    bank = open_bank(path, SyntheticEmbedder(name, dim, seed))
    valid: list[tuple[str, str]] = []  # (memory_id, text) still valid
    revised = 0
    t = time.perf_counter()
    for g in range(0, -(-size // group_size)):
        when = T0 + timedelta(hours=g)
        gid = f"g{g:05d}"
        mems = []
        for i in range(min(group_size, size - g * group_size)):
            typ, text = next(texts)
            mems.append({"memory_id": f"{gid}-m{i:05d}", "type": typ, "author": "lead" if typ == "team" else "ana",
                         "content": text})
        group = MemoryGroup(team=TEAM, group_id=gid, time=when, memories=mems)
        targets = rng.sample(range(len(valid)), int(revise * len(valid))) if valid else []
        decisions = []
        for j in sorted(targets, reverse=True):
            mid, text = valid.pop(j)
            decisions.append(Decision(
                decision_id=f"d-{gid}-{mid}", team=TEAM, memory_id=mid, group_id=gid, decided_at=when, level="inter",
                relation=Relation.contradiction, action=Action.revise, before=text,
                after=f"[Outdated since {when:%Y-%m-%d %H:%M}: superseded by group {gid}] {text}",
                valid_before=True, valid_after=False, decided_by="bench", reason="synthetic"))
        bank.apply_group(group, decisions)
        revised += len(decisions)
        valid += [(m["memory_id"], m["content"]) for m in mems]
    seconds = time.perf_counter() - t
    stats = bank.stats(TEAM)
    bank.close()
    if not isinstance(path, Path):  # PostgreSQL: the planner's statistics, as autovacuum leaves them within a
        import psycopg  # minute on a live server; without, the as-of join is planned for 80 rows, not 30,000

        with psycopg.connect(path, autocommit=True) as conn:
            conn.execute("ANALYZE")
    return {"seconds": seconds, "groups": stats["groups"], "memories": stats["memories"], "revised": revised,
            "team_memories": stats["team_memories"], "valid": stats["valid"],
            "mid_time": T0 + timedelta(hours=stats["groups"] // 2, minutes=30),
            "file_mb": storage_mb(path)}


def questions(n: int, seed: int = 1) -> list[str]:
    from memgraft.collab.data.generator import DOMAINS

    rng = random.Random(f"bench-questions:{seed}")
    forms = ("What is the team's current {name}?", "Which {name} should the next {work} use?",
             "Is {value} still the valid {name}?", "Who last changed the {name}, and to what?")
    out: list[str] = []
    while len(out) < n:
        dom = rng.choice(DOMAINS)
        topic = rng.choice(dom.topics)
        q = rng.choice(forms).format(name=topic.name, work=dom.work, value=rng.choice(topic.values))
        out.append(f"{q} (case {len(out) + 1})")  # distinct texts: no cache can answer a repeat
    return out
