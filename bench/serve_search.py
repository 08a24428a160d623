"""Team search over HTTP (the Serve application) against the same search in process, in one run.

    python bench/serve_search.py [--teams 2] [--groups 24] [--requests 200] [--levels 1,8,32]
        [--mixed-levels 8,32] [--write-every 4] [--write-memories 2] [--write-chars 0]
        [--updater default] [--max-seconds 60] [--k 10] [--out DIR] [--set k=v ...]

    # writes of 64 ordinary (~900-character) memories on the product's updater, mixed run only:
    python bench/serve_search.py --levels '' --mixed-levels 4 --write-memories 64 --write-chars 900

1. A generated stream (``memgraft.collab.data.generator.generate``) applied team by
   team with the rules updater (``CollabMemory.add_group``), one bank per team in
   ``<out>/banks/<team>.sqlite``: the layout the service reads.
2. *In process*: ``CollabMemory.search`` on those banks with the bundled embedder
   loaded in this process, at each level L of concurrency as L threads sharing
   one ``CollabMemory`` per team (what an application embedding the library does).
3. *Served*: the application (``serving.application.compose``, the local profile,
   the real models: MiniLM in the embedder deployment, the cosine fallback, the
   bundled SmolLM2 loaded but idle) on a local Ray, HTTP on 127.0.0.1; at each
   level L, L ``httpx.AsyncClient`` workers post ``/v1/teams/{team}/search`` with a
   team's bearer token.

4. *Mixed*: at each of ``--mixed-levels``, every ``--write-every``-th request is a
   new group for a team (``--write-memories`` memories, two by default; with
   ``--write-chars`` each an ordinary note of that many characters made of the
   team's own stream memories), the rest searches, on both paths, through
   ``--updater`` (default: the profile's, the product default, the pair judge): in
   process, a team's writers take turns on a lock, as the service's do.

Each level sends ``--requests`` distinct questions (the generator's questions with
a serial, so no cache answers a repeat), after a warm-up, and stops early at
``--max-seconds``. Latency is per request (client side); requests/s is requests
over the level's wall time. The serving overhead is served p50 / in-process p50
and in-process requests/s / served requests/s at the same level. The two paths
run one after the other on the same machine; CPU taken by other processes is
reported per phase, since the figures are only as quiet as the machine. No
assertions on time: figures are printed and written to ``<out>/bench_serve_search.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_busy_cpu_s  # noqa: E402
from bench.serve_load import (in_process_level, in_process_mixed, mixed_jobs, served_level,  # noqa: E402
                              served_mixed, workload)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

APP = "memgraft-bench"


class Phase:
    """Wall time and the cores the whole machine kept busy over a block (this run's replicas included)."""

    def __init__(self, log: dict[str, Any], name: str):
        self.log, self.name = log, name

    def __enter__(self) -> "Phase":
        self.t, self.busy = time.perf_counter(), machine_busy_cpu_s()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.t
        self.log[self.name] = {"wall_s": wall, "busy_cores": (machine_busy_cpu_s() - self.busy) / wall if wall else 0}


# -- inputs -------------------------------------------------------------------------------------


def build_banks(settings: Any, embedder: Any, banks: Path, teams: int, groups: int, seed: int) -> dict[str, Any]:
    """The generated stream through the rules updater, one bank per team (the service's layout)."""
    from memgraft.collab.api import CollabMemory
    from memgraft.collab.data.generator import generate

    data = generate(seed=seed, teams=teams, groups=groups)
    banks.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    memories: dict[str, CollabMemory] = {}
    for g in data.groups:  # stream order: each team's groups stay in time order
        team = g["team"]
        if team not in memories:
            (banks / f"{team}.sqlite").unlink(missing_ok=True)
            memories[team] = CollabMemory.open(banks / f"{team}.sqlite", settings, embedder=embedder, policy="rules")
        memories[team].add_group(g)
    stats = {team: m.bank.stats(team) for team, m in memories.items()}
    for m in memories.values():
        m.close()
    questions = [(q["team"], q["question"]) for q in data.questions]
    texts: dict[str, list[str]] = {}
    for g in data.groups:
        texts.setdefault(g["team"], []).extend(m["content"] for m in g["memories"])
    return {"seconds": time.perf_counter() - t, "teams": sorted(memories), "stats": stats, "questions": questions,
            "texts": texts, "counts": data.counts()}


# -- the service --------------------------------------------------------------------------------


def start_service(settings: Any, banks: Path, out: Path, teams: list[str], num_cpus: int,
                  updater: str, serving_overrides: list[str] = ()) -> tuple[str, dict]:
    import ray
    from ray import serve

    from serving import proxy_guard
    from serving.application import compose
    from serving.settings import load_profile

    tokens = {team: f"bench-{team}-{os.urandom(6).hex()}" for team in teams}
    (out / "tokens.json").write_text(json.dumps({"teams": tokens, "readers": []}))
    # the mixed run's writes go through the same updater on both paths (--updater; default: the product's)
    _, serving = load_profile(settings.profile, [f"serving.banks_dir={banks}", f"serving.traces_dir={out / 'traces'}",
                                                 *serving_overrides], tokens_file=str(out / "tokens.json"))
    settings = settings.model_copy(update={"hicomer": settings.hicomer.model_copy(update={"updater_policy": updater})})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port}, **proxy_guard.start_options())
    serve.run(compose(settings, serving), name=APP, route_prefix="/")
    return f"http://127.0.0.1:{port}", tokens


# -- output ------------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console(width=150)
    b = result["banks"]
    con.print(f"{result['cpus']} CPUs; banks: {len(b['teams'])} teams, {b['counts']['memories']} memories "
              f"({b['counts']['outdated_memories']} outdated), built with the rules updater in {b['seconds']:.1f} s; "
              f"S_sem: {escape(result['semantic_source'])}; k {result['k']}; "
              + "; ".join(f"{k} {v}" for k, v in result.get("dtypes", {}).items()))
    t = Table(title="POST /v1/teams/{team}/search over HTTP against CollabMemory.search in process "
                    "(latency per request in ms, client side)")
    for c in ("clients", "path", "requests", "errors", "p50", "p99", "req/s", "p50 served / in-process",
              "p99 served / in-process", "req/s in-process / served"):
        t.add_column(c, justify="left" if c in ("path",) else "right")
    for level in result["levels"]:
        ip, sv = result["in_process"][str(level)], result["served"][str(level)]
        for name, s in (("in process", ip), ("served (HTTP)", sv)):
            ratios = ("", "", "") if name == "in process" else (
                f"[bold]{sv['p50_ms'] / ip['p50_ms']:.2f}", f"{sv['p99_ms'] / ip['p99_ms']:.2f}",
                f"[bold]{ip['rps'] / sv['rps']:.2f}" if sv["rps"] else "-")
            t.add_row(str(level), name, str(s["n"]), str(s["errors"]), f"{s['p50_ms']:.1f}", f"{s['p99_ms']:.1f}",
                      f"{s['rps']:.1f}", *ratios)
    con.print(t)
    w = result["write"]
    mt = Table(title=f"Mixed reads and writes (a write is POST /groups or CollabMemory.add_group of {w['memories']} "
                     f"memories of {w['chars'] or 'one line of'} characters, 1 request in {w['every']}, updater "
                     f"{result['updater']}; ms per request)")
    for c in ("clients", "kind", "path", "done", "errors", "p50", "p99", "p50 served / in-process",
              "p99 served / in-process"):
        mt.add_column(c, justify="left" if c in ("kind", "path") else "right")
    for level in result["mixed_levels"]:
        for kind in ("read", "write"):
            ip, sv = result["mixed_in_process"][str(level)][kind], result["mixed_served"][str(level)][kind]
            for name, x in (("in process", ip), ("served (HTTP)", sv)):
                ratios = ("", "") if name == "in process" else (
                    f"[bold]{sv['p50_ms'] / ip['p50_ms']:.2f}", f"{sv['p99_ms'] / ip['p99_ms']:.2f}")
                mt.add_row(str(level), kind, name, str(x["n"]), str(x["errors"]), f"{x['p50_ms']:.1f}",
                           f"{x['p99_ms']:.1f}", *ratios)
    con.print(mt)
    ct = Table(title="CPU by phase (cores busy on the whole machine: this run's process and replicas, and others)")
    for c in ("phase", "seconds", "busy cores"):
        ct.add_column(c, justify="left" if c == "phase" else "right")
    for phase, c in result["cpu"].items():
        ct.add_row(phase, f"{c['wall_s']:.1f}", f"{c['busy_cores']:.2f}")
    con.print(ct)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teams", type=int, default=2)
    parser.add_argument("--groups", type=int, default=24, help="groups per team in the generated stream")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--requests", type=int, default=200, help="requests per level and path")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--levels", default="1,8,32", help="concurrent clients, comma-separated")
    parser.add_argument("--mixed-levels", default="8,32", help="clients of the mixed read/write run ('' for none)")
    parser.add_argument("--write-every", type=int, default=4, help="in the mixed run, one request in N is a write")
    parser.add_argument("--write-memories", type=int, default=2, help="memories per group in the mixed run's writes")
    parser.add_argument("--write-chars", type=int, default=0,
                        help="each written memory an ordinary note of about this many characters (0: one line)")
    parser.add_argument("--updater", default="default", choices=["default", "judge", "rules", "llm"],
                        help="the mixed run's updater on both paths (default: the profile's, the product default)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time cap per level and path")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--num-cpus", type=int, default=2, help="the local Ray's CPUs (deployments reserve fractions)")
    parser.add_argument("--out", type=Path, default=None, help="banks, tokens and the JSON (default: a temp dir)")
    parser.add_argument("--profile", default="local")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="a setting: serving.* (e.g. serving.deployments.embedder.replicas=2) for the service, "
                             "the rest for the library")
    args = parser.parse_args(argv)

    from memgraft.collab.api import CollabMemory
    from memgraft.config import load_settings
    from memgraft.models.embedder import load_embedder
    from memgraft.models.threads import available_cpus

    # serving.* overrides (deployments, batching) go to the service; the rest to the library's settings
    served = [o for o in args.overrides if o.strip().startswith("serving.")]
    settings = load_settings(args.profile, [o for o in args.overrides if o not in served])
    updater = settings.hicomer.updater_policy if args.updater == "default" else args.updater
    shape = dict(memories=args.write_memories, chars=args.write_chars)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-serve-"))
    out.mkdir(parents=True, exist_ok=True)
    levels = [int(x) for x in args.levels.split(",") if x]
    mixed = [int(x) for x in args.mixed_levels.split(",") if x]
    result: dict[str, Any] = {"cpus": available_cpus(), "k": args.k, "levels": levels, "requests": args.requests,
                              "mixed_levels": mixed, "cpu": {}, "in_process": {}, "served": {},
                              "mixed_in_process": {}, "mixed_served": {}, "updater": updater,
                              "write": {**shape, "every": args.write_every}}

    embedder = load_embedder(settings)
    with Phase(result["cpu"], "build banks"):
        banks = build_banks(settings, embedder, out / "banks", args.teams, args.groups, args.seed)
    result["banks"] = {k: v for k, v in banks.items() if k not in ("questions", "texts")}
    memories = {team: CollabMemory.open(out / "banks" / f"{team}.sqlite", settings, embedder=embedder,
                                        policy=updater) for team in banks["teams"]}
    team0 = banks["teams"][0]
    memories[team0].search(team0, "warm-up", k=args.k)
    from memgraft.collab.retrieve.retriever import ValidityRetriever

    m0 = memories[team0]
    second = getattr(m0.policy, "second", None)  # the pair encoder, where the updater has one
    # bf16 or fp32 (the dtype probe's choice on this CPU): a write's time is mostly these two models' forwards
    result["dtypes"] = {"embedder": getattr(embedder, "dtype", "?"),
                        "pair encoder": getattr(second, "inference_dtype", "none")}
    result["semantic_source"] = ValidityRetriever(m0.bank, m0.embedder, m0.reranker, m0.scorer,
                                                  settings.hicomer).reranker_name
    offset = 0
    for level in levels:
        warm = workload(banks["questions"], args.warmup, offset)
        in_process_level(memories, warm, level, args.k, args.max_seconds)
        jobs = workload(banks["questions"], args.requests, offset + args.warmup)
        offset += args.warmup + args.requests
        with Phase(result["cpu"], f"in process, {level} clients"):
            result["in_process"][str(level)] = in_process_level(memories, jobs, level, args.k, args.max_seconds)
    for level in mixed:
        jobs = mixed_jobs(banks["questions"], args.requests, offset, args.write_every, "inproc", **shape,
                          texts=banks["texts"])
        offset += args.requests
        with Phase(result["cpu"], f"in process, mixed, {level} clients"):
            result["mixed_in_process"][str(level)] = in_process_mixed(memories, jobs, level, args.k,
                                                                      args.max_seconds)
    for m in memories.values():
        m.close()

    from ray import serve

    with Phase(result["cpu"], "serve start-up"):
        base_url, tokens = start_service(settings, out / "banks", out, banks["teams"], args.num_cpus, updater,
                                         served)
    try:
        offset = 0  # the same questions as in process, level by level
        for level in levels:
            warm = workload(banks["questions"], args.warmup, offset)
            asyncio.run(served_level(base_url, tokens, warm, level, args.k, args.max_seconds))
            jobs = workload(banks["questions"], args.requests, offset + args.warmup)
            offset += args.warmup + args.requests
            with Phase(result["cpu"], f"served, {level} clients"):
                result["served"][str(level)] = asyncio.run(
                    served_level(base_url, tokens, jobs, level, args.k, args.max_seconds))
        for level in mixed:  # the same reads as in process; the writes are new groups of their own
            jobs = mixed_jobs(banks["questions"], args.requests, offset, args.write_every, "served", **shape,
                              texts=banks["texts"])
            offset += args.requests
            with Phase(result["cpu"], f"served, mixed, {level} clients"):
                result["mixed_served"][str(level)] = asyncio.run(
                    served_mixed(base_url, tokens, jobs, level, args.k, args.max_seconds))
    finally:
        serve.shutdown()
        import ray

        ray.shutdown()
    print_tables(result)
    path = out / "bench_serve_search.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    print(f"figures written to {path}")
    return result


if __name__ == "__main__":
    main()
