"""PostgreSQL against SQLite at many teams: search, as-of search and ingest, measured in one run, one process.

    python bench/collab_scale.py --teams 1000 --memories 1000000 --big-team 200000   # the issue's size
    python bench/collab_scale.py --teams 100 --memories 100000 --big-team 20000      # what fits 2 cores

Both banks hold the same rows (``scale_bank``: one big team, the other teams of even
size, a share of memories revised by later groups; seeded vectors, by default clustered
around topics as real embeddings are, ``--vectors random`` for uniform ones, HNSW's worst
case; queries drawn the same way). Both are open at once and every query goes to both, one after the
other, so the machine's noise falls on both alike:

- dense top-``k`` (``bank.search``) on the big team and on a random small team;
- the same as of the middle of that team's stream (rebuilt from the decision log);
- recall@``k`` of each backend's live hits against exact search (numpy over the
  team's vectors, regenerated from its seed);
- one statement (``SELECT 1``) through the PostgreSQL bank's pool, the floor under each
  of its queries (a small team's search makes one: the hits' rows, the team's version read with them);
- ingest: ``--ingest-groups`` groups (2 memories, 1 revision each) through
  ``apply_group`` on small teams, alternating backends: groups/s each.

Before timing, each queried team is searched once (SQLite then holds its matrix; its
load time is printed apart). A team past ``postgres.EXACT_MAX_ROWS`` gets its HNSW
index built after the load (timed); ``--exact-max-rows`` lowers that to measure the
index on a bank that fits. No assertions: ratios PG/SQLite and recall are printed and
written to ``<out>/bench_collab_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench.common import percentile  # noqa: E402
from bench.scale_bank import (GROUP_SIZE, VECTORS, Layout, load, memory_id, query_vectors,  # noqa: E402
                              revised_of, superuser, team_vectors, when_mid)
from bench.synthetic_bank import T0, SyntheticEmbedder  # noqa: E402

BACKENDS = ("sqlite", "postgresql")
NAME = "synthetic"


def quarter_of_memory() -> str:
    """A quarter of the machine's memory in MB (``shared_buffers``), 2GB where it cannot be read."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "2GB"
    return f"{max(128, total // 4 // 2**20)}MB"


def timed(f: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = f()
    return (time.perf_counter() - t) * 1000, out


def stats(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50": percentile(xs, 0.5), "p99": percentile(xs, 0.99), "mean": sum(xs) / len(xs)}


class Exact:
    """Exact top-k over a team's current vectors, regenerated from its seed (the big team's kept)."""

    def __init__(self, sizes: dict[str, int], dim: int, revise: float, vectors: str):
        self.sizes, self.dim, self.revise, self.vectors, self._kept = sizes, dim, revise, vectors, {}

    def top(self, team: str, q: np.ndarray, k: int) -> set[str]:
        cur = self._kept.get(team)
        if cur is None:
            cur = team_vectors(team, self.sizes[team], self.dim, revised_of(team, self.sizes[team], self.revise),
                               self.vectors)[1]
            if team == "big":
                self._kept[team] = cur
        return {memory_id(int(i)) for i in np.argsort(-(cur @ q), kind="stable")[:k]}


def build(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """Both banks, loaded; (locations, build figures, the scratch server or None)."""
    from memgraft.collab.bank import open_bank, postgres
    from memgraft.collab.bank.scratch import ROLE, ScratchPostgres

    layout = Layout(args.teams, args.memories, args.big_team)
    locations: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    server = None
    for backend in args.backends:
        if backend == "sqlite":
            locations[backend] = work / "scale.sqlite"
            for old in work.glob("scale.sqlite*"):  # a fresh bank each run
                old.unlink()
            figures[backend] = load(locations[backend], None, layout, args.revise, NAME, args.dim, vectors=args.vectors)
        else:
            server = ScratchPostgres(work)
            # as an operator sizes a server for its data: PostgreSQL's default (128 MB) holds a tenth of the
            # 1,000,000-memory bank, and a big team's as-of read then copies its rows in from the OS's cache
            server.configure(shared_buffers=args.shared_buffers)
            url = locations[backend] = server.database()
            figures[backend] = load(url, superuser(url, ROLE), layout, args.revise, NAME, args.dim,
                                   vectors=args.vectors)
            import psycopg

            with psycopg.connect(superuser(url, ROLE), autocommit=True) as con:  # as an operator sizes a server
                # for HNSW builds: pgvector builds in memory up to this, far slower past it (64 MB by default)
                con.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{args.maintenance_work_mem}'")
                con.execute("SELECT pg_reload_conf()")
            with open_bank(url) as bank:  # the large teams' own HNSW indexes, as after_group builds them
                t = time.perf_counter()
                for team, n in layout.sizes().items():
                    if n > postgres.EXACT_MAX_ROWS:
                        bank._db.after_group(team)
                figures[backend]["index_s"] = time.perf_counter() - t
        print(f"{backend}: {figures[backend]['memories']:,} memories over {figures[backend]['teams']} teams loaded "
              f"in {figures[backend]['seconds']:.1f}s", flush=True)
    return locations, figures, server


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from memgraft.collab.bank import open_bank

    layout = Layout(args.teams, args.memories, args.big_team)
    sizes = layout.sizes()
    locations, figures, server = build(args, work)
    result: dict[str, Any] = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "build": figures}
    try:
        embedder = SyntheticEmbedder(NAME, args.dim, seed=7)
        banks = {b: open_bank(loc, embedder) for b, loc in locations.items()}
        rng = np.random.default_rng(11)
        pick = random.Random(12)
        small = [t for t in sizes if t != "big"]
        plan = [("big", "big")] * args.queries + [("small", pick.choice(small)) for _ in range(args.queries)]
        pick.shuffle(plan)
        first: dict[str, float] = {}
        for b, bank in banks.items():  # warm: SQLite loads each team's matrix, PostgreSQL reads the team's size
            q0 = np.ones(args.dim, np.float32) / args.dim ** 0.5
            first[b] = timed(lambda: bank.search("big", q0, args.k))[0]
            for team in {t for _, t in plan}:
                bank.search(team, q0, args.k)
        result["first_search_big_ms"] = first
        exact = Exact(sizes, args.dim, args.revise, args.vectors)
        times: dict[str, dict[str, list[float]]] = {b: {} for b in banks}
        recall: dict[str, dict[str, list[float]]] = {b: {"big": [], "small": []} for b in banks}
        for i, (kind, team) in enumerate(plan):
            if args.vectors == "random":
                q = rng.standard_normal(args.dim).astype(np.float32)
                q /= np.linalg.norm(q)
            else:
                q = query_vectors(team, sizes[team], args.dim, 1, args.vectors, seed=i)[0]
            truth = exact.top(team, q, args.k)
            order = list(banks) if i % 2 == 0 else list(reversed(banks))
            for b in order:
                ms, hits = timed(lambda: banks[b].search(team, q, args.k))
                times[b].setdefault(f"search, {kind} team", []).append(ms)
                recall[b][kind].append(len(truth & {m.memory_id for m, _ in hits}) / args.k)
            if "postgresql" in banks:  # the floor under every PostgreSQL query: one statement through the pool
                db = banks["postgresql"]._team_db(team)
                times["postgresql"].setdefault("one statement (SELECT 1, team bound)", []).append(
                    timed(lambda: db.execute("SELECT 1").fetchall())[0])
            if i < 2 * args.as_of_queries:
                when = when_mid(sizes[team])
                for b in order:
                    times[b].setdefault(f"as-of search, {kind} team", []).append(
                        timed(lambda: banks[b].search(team, q, args.k, as_of=when))[0])
        result["search"] = {b: {k: stats(v) for k, v in rows.items()} for b, rows in times.items()}
        if args.ef_sweep and "postgresql" in banks:
            result["ef_sweep"] = ef_sweep(banks["postgresql"], exact, sizes, args)
        result["recall"] = {b: {k: float(np.mean(v)) for k, v in r.items()} for b, r in recall.items()}
        if args.reload_groups:
            for b, bank in banks.items():
                times[b][RELOAD_ROW] = after_other_writer(bank, locations[b], embedder, sizes, args)
            result["search"] = {b: {k: stats(v) for k, v in rows.items()} for b, rows in times.items()}
        (work / "bench_collab_scale.json").write_text(json.dumps(result, indent=2, default=str))  # if ingest fails
        result["ingest"] = ingest(banks, sizes, args)
        for bank in banks.values():
            bank.close()
    finally:
        if server is not None:
            server.stop()
    return result


RELOAD_ROW = "search, big team, after another bank's group"


def after_other_writer(bank: Any, location: Any, embedder: Any, sizes: dict[str, int],
                       args: argparse.Namespace) -> list[float]:
    """ms of ``bank``'s big-team search after a second bank on the same location (another replica) commits a group
    of 2 memories and 1 revision to that team: the cached matrix is stale each time (``--reload-groups`` times)."""
    from memgraft.collab.bank import open_bank
    from memgraft.collab.types import Action, Decision, MemoryGroup, Relation

    other, out = open_bank(location, embedder), []
    n = sizes["big"]
    touched = set(revised_of("big", n, args.revise).tolist())
    q = query_vectors("big", n, args.dim, 1, args.vectors, seed=99)[0]
    for i in range(args.reload_groups):
        when = T0 + timedelta(hours=-(-n // GROUP_SIZE) + 1000 + i)
        gid = f"r{i:05d}"
        x = next(x for x in range(n) if x not in touched)
        touched.add(x)
        before = other.memory("big", memory_id(x))
        group = MemoryGroup(team="big", group_id=gid, time=when, memories=[
            {"memory_id": f"{gid}-m{m}", "type": "individual", "author": "ana", "content": f"reload fact {i}.{m}"}
            for m in range(2)])
        other.apply_group(group, [Decision(
            decision_id=f"d-big-{gid}", team="big", memory_id=before.memory_id, group_id=gid, decided_at=when,
            level="inter", relation=Relation.contradiction, action=Action.revise, before=before.maintained,
            after=f"[Outdated] {before.maintained}", valid_before=True, valid_after=False, decided_by="bench",
            reason="synthetic")])
        out.append(timed(lambda: bank.search("big", q, args.k))[0])
    other.close()
    return out


def ef_sweep(bank: Any, exact: Exact, sizes: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    """The big team's search on PostgreSQL at each ``--ef-sweep`` hnsw.ef_search: recall@k and ms (the same
    queries for each; meaningful when the big team goes through its HNSW index)."""
    from memgraft.collab.bank import pool

    kept, out = pool.current(), {}
    queries = [query_vectors("big", sizes["big"], args.dim, 1, args.vectors, seed=10_000 + i)[0]
               if args.vectors != "random" else _unit(np.random.default_rng(10_000 + i), args.dim)
               for i in range(args.queries)]
    truths = [exact.top("big", q, args.k) for q in queries]
    try:
        for ef in args.ef_sweep:
            pool.configure(kept.model_copy(update={"hnsw_ef_search": ef}))
            bank.search("big", queries[0], args.k)
            ms, rec = [], []
            for q, truth in zip(queries, truths):
                t, hits = timed(lambda: bank.search("big", q, args.k))
                ms.append(t)
                rec.append(len(truth & {m.memory_id for m, _ in hits}) / args.k)
            out[str(ef)] = {**stats(ms), "recall": float(np.mean(rec))}
    finally:
        pool.configure(kept)
    return out


def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    q = rng.standard_normal(dim).astype(np.float32)
    return q / np.linalg.norm(q)


def ingest(banks: dict[str, Any], sizes: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    """``--ingest-groups`` groups through ``apply_group`` on small teams, each backend in turn per group."""
    from memgraft.collab.bank.schema import iso  # noqa: F401 - times as the bank writes them
    from memgraft.collab.types import Action, Decision, MemoryGroup, Relation

    teams = [t for t in sizes if t != "big"][:max(1, args.ingest_teams)]
    spent = {b: 0.0 for b in banks}
    done = {t: 0 for t in teams}
    used: dict[str, set[int]] = {t: set(revised_of(t, sizes[t], args.revise).tolist()) for t in teams}
    for j in range(args.ingest_groups):
        team = teams[j % len(teams)]
        n, i = sizes[team], done[team]
        done[team] += 1
        when = T0 + timedelta(hours=-(-n // GROUP_SIZE) + i)
        gid = f"x{i:05d}"
        group = MemoryGroup(team=team, group_id=gid, time=when, memories=[
            {"memory_id": f"{gid}-m{m}", "type": "team" if m == 0 else "individual", "author": "lead",
             "content": f"Ingest bench fact {i}.{m} of team {team}"} for m in range(2)])
        x = next(x for x in range(n) if x not in used[team])  # a valid memory no decision has touched
        used[team].add(x)
        target = memory_id(x)
        for b in (list(banks) if j % 2 == 0 else list(reversed(banks))):
            bank = banks[b]
            before = bank.memory(team, target).maintained
            d = Decision(decision_id=f"d-{team}-{gid}-{target}", team=team, memory_id=target, group_id=gid, decided_at=when,
                         level="inter", relation=Relation.contradiction, action=Action.revise, before=before,
                         after=f"[Outdated since {when:%Y-%m-%d %H:%M}] {before}", valid_before=True,
                         valid_after=False, decided_by="bench", reason="synthetic")
            t = time.perf_counter()
            bank.apply_group(group, [d])
            spent[b] += time.perf_counter() - t
    return {b: {"groups": args.ingest_groups, "seconds": s, "groups_per_s": args.ingest_groups / s}
            for b, s in spent.items() if s > 0}  # --ingest-groups 0: none


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=140)
    a = result["args"]
    con.print(f"{a['memories']:,} memories over {a['teams']} teams (one of {a['big_team']:,}), {a['vectors']} vectors; "
              f"{a['queries']} queries per kind, k={a['k']}")
    for b, f in result["build"].items():
        con.print(f"{b}: loaded in {f['seconds']:.1f}s" + (f", HNSW index {f['index_s']:.1f}s" if "index_s" in f
                                                           else "") + f"; first big-team search after open "
                  f"{result['first_search_big_ms'][b]:.0f} ms")
    s = result["search"]
    both = all(b in s for b in BACKENDS)
    t = Table(title="ms per query; ratio = PostgreSQL / SQLite (goal: within 2x)")
    for c in ("row", *(f"{b} p50" for b in s), *(f"{b} p99" for b in s), *(("p50 ratio", "p99 ratio") if both else ())):
        t.add_column(c, justify="left" if c == "row" else "right")
    for row in dict.fromkeys(r for b in s for r in s[b]):
        cells = [f"{s[b][row]['p50']:.2f}" if row in s[b] else "-" for b in s] + \
                [f"{s[b][row]['p99']:.2f}" if row in s[b] else "-" for b in s]
        if both and row in s["sqlite"] and row in s["postgresql"]:
            cells += [f"{s['postgresql'][row]['p50'] / s['sqlite'][row]['p50']:.2f}",
                      f"{s['postgresql'][row]['p99'] / s['sqlite'][row]['p99']:.2f}"]
        elif both:
            cells += ["-", "-"]
        t.add_row(row, *cells)
    con.print(t)
    for b, r in result["recall"].items():
        con.print(f"{b}: recall@{a['k']} against exact search: big team {r['big']:.3f}, small teams {r['small']:.3f}")
    for ef, x in result.get("ef_sweep", {}).items():
        con.print(f"postgresql, big team, hnsw.ef_search {ef}: recall@{a['k']} {x['recall']:.3f}, "
                  f"p50 {x['p50']:.2f} ms, p99 {x['p99']:.2f} ms")
    g = result["ingest"]
    if not g:
        return
    con.print("ingest (apply_group, 2 memories + 1 revision): " + ", ".join(
        f"{b} {x['groups_per_s']:.1f} groups/s" for b, x in g.items()) + (
        f"; ratio SQLite / PostgreSQL {g['sqlite']['groups_per_s'] / g['postgresql']['groups_per_s']:.2f} "
        f"(goal: within 1.5x)" if both else ""))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teams", type=int, default=100, help="teams, the big one included")
    parser.add_argument("--memories", type=int, default=100_000, help="memories in all")
    parser.add_argument("--big-team", type=int, default=20_000, help="memories of the one big team")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--vectors", choices=VECTORS, default="clustered",
                        help="clustered: around topics, as real embeddings are (default); random: uniform, HNSW's worst case")
    parser.add_argument("--revise", type=float, default=0.03, help="share of each team's memories revised later")
    parser.add_argument("--queries", type=int, default=200, help="per kind (big team, small teams)")
    parser.add_argument("--as-of-queries", type=int, default=50, help="per kind")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--ingest-groups", type=int, default=200)
    parser.add_argument("--ingest-teams", type=int, default=20, help="small teams the ingest groups go to")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--exact-max-rows", type=int, default=None,
                        help="PostgreSQL: a team past this many memories is searched through its own HNSW index "
                             "(default: postgres.EXACT_MAX_ROWS)")
    parser.add_argument("--shared-buffers", default=quarter_of_memory(),
                        help="PostgreSQL's page cache (default: a quarter of this machine's memory, PostgreSQL's own "
                             "advice for a dedicated server; its built-in default is 128MB)")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="PostgreSQL: memory for an HNSW build")
    parser.add_argument("--ef-search", type=int, default=None, help="PostgreSQL: hnsw.ef_search (default: bank.hnsw_ef_search)")
    parser.add_argument("--reload-groups", type=int, default=20, help="big-team searches timed each after another "
                        "bank on the same location wrote a group to the team (a stale cached matrix)")
    parser.add_argument("--ef-sweep", default="", help="PostgreSQL: also search the big team at each of these "
                        "hnsw.ef_search values (comma-separated), printing recall and latency")
    parser.add_argument("--out", type=Path, default=None, help="keep the banks and the JSON here (default: a temp "
                        "folder whose banks, gigabytes at full size, are deleted after the run; the JSON stays)")
    args = parser.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    args.ef_sweep = [int(x) for x in args.ef_sweep.split(",") if x.strip()]
    from memgraft.collab.bank import pool, postgres

    if args.exact_max_rows is not None:
        postgres.EXACT_MAX_ROWS = args.exact_max_rows
    if args.ef_search is not None:
        pool.configure(pool.current().model_copy(update={"hnsw_ef_search": args.ef_search}))
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    out.mkdir(parents=True, exist_ok=True)
    result = run(args, out)
    print_tables(result)
    (out / "bench_collab_scale.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"figures written to {out / 'bench_collab_scale.json'}")
    if args.out is None:  # nobody asked to keep the banks: runs at full size left 4 GB each in /tmp
        for path in out.iterdir():
            if path.name != "bench_collab_scale.json":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    return result


if __name__ == "__main__":
    main()
