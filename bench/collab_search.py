"""HiCoMER's validity-aware search latency against plain dense search of the same bank, in one run.

    python bench/collab_search.py [--sizes 10000,100000] [--queries 200] [--group-size 2000]
        [--revise 0.03] [--as-of-queries 50] [--backends sqlite,postgresql] [--out DIR] [--set k=v ...]

For each bank size, and each backend (a SQLite file; a PostgreSQL database on a
throwaway local server, ``memgraft.collab.bank.scratch``: pgserver's, with pgvector):

1. A bank of that many memories in one team, built through ``MemoryBank.apply_group``
   in groups of ``--group-size`` (an hour apart), 20% team memories, and from the
   second group on ``--revise`` of the earlier valid memories revised (invalid,
   "[Outdated since …]" text) by decisions in the log. **The memory vectors are
   synthetic**: a stand-in embedder returns seeded random unit vectors of the real
   model's dimension, because embedding 100k texts with MiniLM on 2 cores takes
   far too long. The texts are real sentences (the generator's templates), so the
   reranker reads what it would read. The build is timed, and so is the first
   search after reopening the file (the per-team matrix loaded from the blobs).
2. ``--queries`` distinct questions, each embedded by the **real** bundled model.
   Per query, interleaved so the machine's noise falls on all alike:
   - *dense baseline*: query encode + ``bank.search`` top-k (what a flat dense RAG pays);
   - the validity-aware path's parts, timed apart: query encode, dense top-N
     (``hicomer.candidate_top_n``), rerank of the N maintained texts, scorer features
     and forward;
   - *validity-aware total*: ``ValidityRetriever.search`` end to end (the parts plus
     the team's time span and the S_final sort).
   - *validity-aware, semantic_from_dense*: the same search taking S_sem from the
     dense search's cosines instead of re-encoding the N texts (see the retriever).
   S_sem comes from the cosine fallback reranker (the only offline one): it re-encodes
   the query and the N candidate texts with MiniLM, which is most of the added cost.
   A cross-encoder on the cluster profile costs differently. The validity scorer is
   untrained (its weights do not change its cost). Torch runs one thread (``--threads``).
3. ``--as-of-queries`` of the same questions as of the middle of the stream (the bank
   rebuilds the as-of state of every memory changed since, from the decision log).

4. PostgreSQL against SQLite, same size, same queries: p50/p99 ratios of each row,
   and recall@k of PostgreSQL's dense top-k against SQLite's exact one (a team past
   ``postgres.EXACT_MAX_ROWS`` memories is searched through the HNSW index, which is
   approximate; below, both are exact and the hits the same).

No assertions on time: p50/p99 and the ratios to the dense baseline are printed and
written to ``<out>/bench_collab_search.json``, beside the CPU other processes used.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_busy_cpu_s, percentile  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)
TEAM = "bench"


# -- machine ------------------------------------------------------------------------------------




def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class Phase:
    """Wall time, this process's CPU and everyone else's over a block."""

    def __init__(self, log: dict[str, Any], name: str):
        self.log, self.name = log, name

    def __enter__(self) -> "Phase":
        self.t, self.own, self.busy = time.perf_counter(), own_cpu_s(), machine_busy_cpu_s()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.t
        own, busy = own_cpu_s() - self.own, machine_busy_cpu_s() - self.busy
        self.log[self.name] = {"wall_s": wall, "own_cpu_s": own, "other_cores": max(0.0, busy - own) / wall if wall else 0.0}


# -- a synthetic bank -------------------------------------------------------------------------------


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


# -- timing -------------------------------------------------------------------------------------------


def ms(f: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = f()
    return (time.perf_counter() - t) * 1000, out


def summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "mean": statistics.mean(xs), "p50": percentile(xs, 0.50), "p99": percentile(xs, 0.99),
            "max": max(xs)}


def bench_size(settings: Any, embedder: Any, size: int, args: argparse.Namespace, work: Path,
               location: str | Path | None = None) -> dict[str, Any]:
    """One size on one backend: ``location`` a PostgreSQL URL, or None for a SQLite file in ``work``."""
    import torch

    from memgraft.collab.bank import open_bank
    from memgraft.collab.retriever import ValidityRetriever
    from memgraft.collab.validity import ValidityScorer, validity_features
    from memgraft.models.reranker import CosineReranker

    path = location or work / f"bank_{size}.sqlite"
    res: dict[str, Any] = {"size": size, "cpu": {}, "backend": "sqlite" if location is None else "postgresql"}
    with Phase(res["cpu"], "build"):
        res["build"] = build_bank(path, size, args.group_size, args.revise, embedder.name, embedder.dim)

    # an as-of search embeds a text only if revised twice (here each is revised once): synthetic too
    bank = open_bank(path, SyntheticEmbedder(embedder.name, embedder.dim, seed=99))
    res["index_load_ms"], _ = ms(lambda: bank.search(TEAM, np.ones(embedder.dim, np.float32) / embedder.dim ** 0.5, 1))
    hs = settings.hicomer
    reranker = CosineReranker(embedder)
    torch.manual_seed(0)
    scorer = ValidityScorer.from_settings(embedder.dim, hs).eval()
    retriever = ValidityRetriever(bank, embedder, reranker, scorer, hs)
    shortcut = ValidityRetriever(bank, embedder, reranker, scorer, hs, semantic_from_dense=True)
    qs = questions(args.queries + args.warmup)
    for q in qs[:args.warmup]:  # warm: first calls of the model, BLAS and SQLite pages
        retriever.search(TEAM, q, args.k)
        bank.search(TEAM, embedder.encode([q])[0], args.k)
    parts: dict[str, list[float]] = {k: [] for k in (
        "dense baseline: encode + bank.search top-k", "dense search only (top-k)", "query encode",
        f"dense top-N (N={hs.candidate_top_n})", "rerank top-N (cosine fallback)", "scorer features + forward",
        "validity-aware total (ValidityRetriever.search)",
        "validity-aware total, S_sem from the dense cosines (semantic_from_dense)")}
    names = list(parts)
    res["dense_ids"] = []  # each query's dense top-k: recall against SQLite's
    with Phase(res["cpu"], "queries"):
        for q in qs[args.warmup:]:
            t = time.perf_counter()
            qv = embedder.encode([q])[0]
            t_enc = time.perf_counter()
            hits = bank.search(TEAM, qv, args.k)
            parts[names[0]].append((time.perf_counter() - t) * 1000)
            parts[names[1]].append((time.perf_counter() - t_enc) * 1000)
            res["dense_ids"].append([m.memory_id for m, _ in hits])

            t_encode, qv = ms(lambda: embedder.encode([q])[0])
            t_dense, cands = ms(lambda: bank.search(TEAM, qv, hs.candidate_top_n))
            mems = [m for m, _ in cands]
            t_rerank, _ = ms(lambda: reranker.score(q, [m.maintained for m in mems]))

            def forward() -> Any:
                first, last = bank.time_span(TEAM)
                is_team, norm = validity_features(mems, first, last)
                h_m = torch.from_numpy(np.stack([m.embedding for m in mems]))
                return scorer.score(torch.from_numpy(qv).expand_as(h_m), h_m, is_team, norm)
            t_scorer, _ = ms(forward)
            for name, v in zip(names[2:6], (t_encode, t_dense, t_rerank, t_scorer)):
                parts[name].append(v)

            parts[names[6]].append(ms(lambda: retriever.search(TEAM, q, args.k))[0])
            parts[names[7]].append(ms(lambda: shortcut.search(TEAM, q, args.k))[0])
    res["parts"] = {k: summary(v) for k, v in parts.items()}
    res["baseline"], res["total"] = names[0], names[6]

    if args.as_of_queries:
        when = res["build"]["mid_time"]
        as_of: dict[str, list[float]] = {"dense baseline as of mid-stream: encode + bank.search": [],
                                         "validity-aware as of mid-stream": []}
        a, b = list(as_of)
        with Phase(res["cpu"], "as-of queries"):
            for q in qs[args.warmup:args.warmup + args.as_of_queries]:
                as_of[a].append(ms(lambda: bank.search(TEAM, embedder.encode([q])[0], args.k, as_of=when))[0])
                as_of[b].append(ms(lambda: retriever.search(TEAM, q, args.k, as_of=when))[0])
        res["as_of"] = {k: summary(v) for k, v in as_of.items()}
    bank.close()
    if not args.keep and location is None:
        for p in work.glob(f"bank_{size}.sqlite*"):
            p.unlink()
    return res


# -- output ------------------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=150)
    con.print(f"{result['cpus']} CPUs; torch threads {result['torch_threads']}; BLAS threads: {result['blas']}; "
              f"top-N {result['candidate_top_n']}, k {result['k']}")
    bt = Table(title="banks (one team; synthetic random unit vectors, real template texts; built with apply_group)")
    for c in ("backend", "memories", "groups", "team", "revised (invalid)", "file MiB", "build s", "memories/s",
              "first search after open (index load) ms"):
        bt.add_column(c, justify="right")
    for r in result["sizes"]:
        b = r["build"]
        bt.add_row(r["backend"], f"{b['memories']:,}", str(b["groups"]), f"{b['team_memories']:,}", f"{b['revised']:,}",
                   f"{b['file_mb']:.0f}", f"{b['seconds']:.1f}", f"{b['memories'] / b['seconds']:,.0f}",
                   f"{r['index_load_ms']:.0f}")
    con.print(bt)

    for r in result["sizes"]:
        base = r["parts"][r["baseline"]]
        t = Table(title=f"{r['backend']}, {r['build']['memories']:,} memories: ms per query over {base['n']} queries "
                        f"(query embedding: {result['embedder']}, real; S_sem: {result['reranker']})")
        for c in ("part", "mean", "p50", "p99", "max", "p50 / dense p50", "p99 / dense p99"):
            t.add_column(c, justify="left" if c == "part" else "right")
        as_of = r.get("as_of", {})
        base_of = {name: base for name in r["parts"]} | {name: next(iter(as_of.values())) for name in as_of}
        for name, s in list(r["parts"].items()) + list(as_of.items()):
            b = base_of[name]  # as-of rows: against the as-of dense baseline
            bold = "[bold]" if name == r["baseline"] or "total" in name or "as of" in name else ""
            t.add_row(bold + name, f"{s['mean']:.1f}", f"{bold}{s['p50']:.1f}", f"{bold}{s['p99']:.1f}", f"{s['max']:.1f}",
                      f"{bold}{s['p50'] / b['p50']:.2f}", f"{bold}{s['p99'] / b['p99']:.2f}")
        con.print(t)

    print_backend_ratios(con, result)
    ct = Table(title="CPU by phase (cores busy on average; 'other' = processes outside this run: noise)")
    for c in ("size", "phase", "seconds", "this run", "other processes"):
        ct.add_column(c, justify="left" if c in ("size", "phase") else "right")
    for r in result["sizes"]:
        for phase, c in r["cpu"].items():
            ct.add_row(f"{r['size']:,} {r['backend']}", phase, f"{c['wall_s']:.1f}",
                       f"{c['own_cpu_s'] / c['wall_s']:.2f}" if c["wall_s"] else "-", f"{c['other_cores']:.2f}")
    con.print(ct)


def backend_ratios(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per size: each row's PostgreSQL p50/p99 over SQLite's, and PostgreSQL's recall@k of SQLite's top-k."""
    out = []
    for size in dict.fromkeys(r["size"] for r in result["sizes"]):
        by = {r["backend"]: r for r in result["sizes"] if r["size"] == size}
        if set(by) != {"sqlite", "postgresql"}:
            continue
        lite, pg = by["sqlite"], by["postgresql"]
        rows = {name: (pg["parts"][name]["p50"] / s["p50"], pg["parts"][name]["p99"] / s["p99"])
                for name, s in lite["parts"].items()}
        rows |= {name: (pg["as_of"][name]["p50"] / s["p50"], pg["as_of"][name]["p99"] / s["p99"])
                 for name, s in lite.get("as_of", {}).items()}
        recall = [len(set(a) & set(b)) / len(a) for a, b in zip(lite["dense_ids"], pg["dense_ids"]) if a]
        out.append({"size": size, "rows": rows, "recall": statistics.mean(recall) if recall else 1.0,
                    "build": pg["build"]["seconds"] / lite["build"]["seconds"]})
    return out


def print_backend_ratios(con: Any, result: dict[str, Any]) -> None:
    from rich.table import Table

    for r in result.get("backend_ratios", []):
        t = Table(title=f"{r['size']:,} memories: PostgreSQL (pgvector) / SQLite, same queries; build "
                        f"{r['build']:.2f}x; dense top-{result['k']} recall of SQLite's exact hits {r['recall']:.3f}")
        for c in ("row", "p50 ratio", "p99 ratio"):
            t.add_column(c, justify="left" if c == "row" else "right")
        for name, (p50, p99) in r["rows"].items():
            t.add_row(name, f"{p50:.2f}", f"{p99:.2f}")
        con.print(t)


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return "unknown"
    return ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()) or "none"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="bank sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--k", type=int, default=10, help="hits returned (both paths)")
    parser.add_argument("--group-size", type=int, default=2000, help="memories per applied group")
    parser.add_argument("--revise", type=float, default=0.03, help="share of earlier valid memories each group revises")
    parser.add_argument("--as-of-queries", type=int, default=50, help="0 skips the as-of rows")
    parser.add_argument("--out", type=Path, default=None, help="where the banks and the JSON go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the bank files")
    parser.add_argument("--backends", default="sqlite,postgresql",
                        help="sqlite, postgresql or both (PostgreSQL: a throwaway local server, pgserver's)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (query encode, rerank, scorer); 0: the profile's setting. One by default: "
                             "a single query gains little from two, and on a shared 2-core machine torch's OpenMP "
                             "workers stall for ~0.5 s per call whenever another process holds a core")
    parser.add_argument("--profile", default="local")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args(argv)

    from memgraft.config import load_settings
    from memgraft.models.embedder import load_embedder
    from memgraft.models.reranker import CosineReranker
    from memgraft.models.threads import available_cpus

    settings = load_settings(args.profile, args.overrides)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-collab-"))
    out.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder(settings)
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    result: dict[str, Any] = {
        "embedder": f"{embedder.name} ({settings.models.embedder_dtype})", "reranker": CosineReranker(embedder).name,
        "cpus": available_cpus(), "torch_threads": _torch_threads(), "blas": _blas_threads(),
        "candidate_top_n": settings.hicomer.candidate_top_n, "k": args.k,
        "queries": args.queries, "sizes": []}
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    server = None
    if "postgresql" in backends:
        from memgraft.collab.bank.scratch import ScratchPostgres

        server = ScratchPostgres(out)
    try:
        for size in (int(s) for s in args.sizes.split(",") if s):
            for backend in backends:
                location = server.database() if backend == "postgresql" and server else None
                result["sizes"].append(bench_size(settings, embedder, size, args, out, location))
    finally:
        if server is not None:
            server.stop()
    result["backend_ratios"] = backend_ratios(result)
    print_tables(result)
    path = out / "bench_collab_search.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    print(f"figures written to {path}")
    return result


if __name__ == "__main__":
    main()
