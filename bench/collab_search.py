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
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_busy_cpu_s, percentile  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from bench.synthetic_bank import TEAM, SyntheticEmbedder, build_bank, questions  # noqa: E402


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
    from memgraft.collab.retrieve.retriever import ValidityRetriever
    from memgraft.collab.retrieve.validity import ValidityScorer, validity_features
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
    parser.add_argument("--exact-max-rows", type=int, default=None,
                        help="PostgreSQL: a team past this many memories is searched through its own HNSW index "
                             "(default: postgres.EXACT_MAX_ROWS, 100,000): lower it to measure the index's recall "
                             "and latency on a bank that fits the machine")
    parser.add_argument("--profile", default="local")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args(argv)

    from memgraft.config import load_settings
    from memgraft.models.embedder import load_embedder
    from memgraft.models.reranker import CosineReranker
    from memgraft.models.threads import available_cpus

    settings = load_settings(args.profile, args.overrides)
    if args.exact_max_rows is not None:
        from memgraft.collab.bank import postgres

        postgres.EXACT_MAX_ROWS = args.exact_max_rows
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
