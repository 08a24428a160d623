"""Memory-stream ingest with the rules updater: the Ray pipeline against the same loop in one process, in one run.

    python bench/ingest.py [--teams 12] [--groups 100] [--workers 1,2,4] [--backends sqlite,postgresql]
                           [--out DIR] [--set k=v ...] [--stream PATH | --timeqa DIR] [--real-groups 30]
    python bench/ingest.py --growth 500,10000   # a dense team's groups/s as its bank grows (the default updater)

1. A generated stream (``memgraft.collab.data.generator``; ``--teams`` x ``--groups``
   groups, about 5 memories each) written to ``<out>/data``.
2. Baseline: ``memgraft.collab.ingest.ingest_stream`` in this process, no Ray: one
   embedder (all CPUs' torch threads, or ``models.torch_threads``), the rules policy,
   one bank; every team one after another. The embedder is warmed up first on a
   throwaway stream. Its time is split into the updater's parts (embedding, H_t
   search, policy, the write transaction).
3. The pipeline (``pipelines/ingest_memories.run_ingest``) on a local Ray started
   beforehand (its start-up reported apart), once per ``--workers`` count, each into
   a fresh bank. groups/s counts from the moment every worker is ready (models
   loaded) to the last team's end; worker start-up is reported beside it.
   With ``--backends sqlite,postgresql`` (the default) every pipeline run is made
   on both: into a SQLite file (the workers take turns at its write lock) and into
   a PostgreSQL database on a throwaway local server (``memgraft.collab.bank.scratch``;
   the workers write their teams at once).
4. Ratio = pipeline groups/s / baseline groups/s; PostgreSQL's groups/s / SQLite's
   at each worker count; and whether the banks agree (each memory's maintained text
   and validity, and the decision count).
5. A converted real stream too (``--stream PATH``, or by default a TimeQA conversion
   built here from ``--timeqa DIR`` by ``memgraft.collab.data.timeqa``; ``--timeqa ''``
   skips it), cut to its first ``--real-groups`` groups per team: steps 2-4 again, and
   its baseline groups/s as a ratio to the generated stream's baseline. Real streams
   revise far more (a record per subject and attribute, superseded again and again),
   and every revised text is embedded, so they run slower per group.

The embedder dtype is the one the pipeline's workers use on this host
(``pipelines.ingest_memories.embedder_dtype_here``: float32 where bf16 is emulated).

The machine may be shared: the cores other processes kept busy during each phase
are reported beside it (``--wait-quiet`` waits for an idle machine first). No figure
is asserted. Figures are printed and written to ``<out>/bench_ingest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.sampling import NOISE_LIMIT, ProcessSampler, wait_quiet  # noqa: E402


@contextmanager
def measured(sampler: ProcessSampler, phase: str, into: dict[str, Any]) -> Iterator[None]:
    """Wall seconds of the block, and the cores the rest of the machine (outside this process and
    its Ray workers) kept busy meanwhile, into ``into``."""
    sampler.set_phase(phase)
    t = time.perf_counter()
    yield
    into["wall_s"] = time.perf_counter() - t
    sampler.set_phase(f"after {phase}")
    into["cpu"] = sampler.cpu[phase]
    into["other_cores"] = sampler.cpu[phase]["other_cores"]


def fresh(path: Path) -> Path:
    """A bank path with no bank at it (a rerun into the same --out starts over)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def bank_rows(location: str | Path) -> tuple[dict[tuple[str, str], tuple[str, int]], int]:
    from memgraft.collab.bank import open_bank

    with open_bank(location) as bank:
        teams = bank.teams()
        rows = {(m.team, m.memory_id): (m.maintained, int(m.valid)) for t in teams for m in bank.memories(t)}
        n = sum(len(bank.decisions(t)) for t in teams)
    return rows, n


def agreement(a: str | Path, b: str | Path) -> dict[str, Any]:
    (ra, na), (rb, nb) = bank_rows(a), bank_rows(b)
    same = sum(ra[k] == rb.get(k) for k in ra)
    return {"memories": len(ra), "same_state": same / len(ra) if ra else 1.0, "decisions": (na, nb)}


def timed_parts(updater: Any, timers: Counter[str]) -> None:
    """Wrap the updater's steps so their seconds add up in ``timers`` (the baseline's breakdown)."""
    def wrap(obj: Any, attr: str, key: str) -> None:
        fn: Callable[..., Any] = getattr(obj, attr)

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timers[key] += time.perf_counter() - t
        setattr(obj, attr, timed)

    wrap(updater.bank.embedder.inner, "encode", "embedding (the model; memo hits inside the write excluded)")
    wrap(updater.bank, "search", "H_t search")
    wrap(updater.policy, "judge", "rules policy")
    wrap(updater.bank, "apply_group", "write transaction")


def run_baseline(settings: Any, stream_path: Path, warm_path: Path, out: Path, sampler: ProcessSampler,
                 phase: str = "baseline") -> dict[str, Any]:
    from memgraft.collab.bank import MemoryBank
    from memgraft.collab.ingest import ingest_stream, read_stream
    from memgraft.collab.maintain.policies import RulesPolicy
    from memgraft.collab.maintain.updater import MemoEmbedder, Updater
    from memgraft.models.embedder import load_embedder
    from memgraft.models.threads import available_cpus

    res: dict[str, Any] = {"torch_threads": settings.models.torch_threads or available_cpus()}
    t = time.perf_counter()
    embedder = load_embedder(settings)
    res["load_s"] = time.perf_counter() - t
    warm = MemoryBank(fresh(out / "warm.sqlite"), MemoEmbedder(embedder))  # a throwaway stream: kernels and caches warm
    ingest_stream(Updater(warm, RulesPolicy(), settings.hicomer), read_stream(warm_path))
    warm.close()

    memo = MemoEmbedder(embedder)
    bank = MemoryBank(fresh(out / "baseline.sqlite"), memo)
    updater = Updater(bank, RulesPolicy(embedder=memo), settings.hicomer)
    timers: Counter[str] = Counter()
    timed_parts(updater, timers)
    stream = read_stream(stream_path)
    with measured(sampler, phase, res):
        stats = ingest_stream(updater, stream)
    bank.close()
    res["parts_s"] = dict(timers)
    res["parts_s"]["other (targets, decisions, the loop)"] = res["wall_s"] - sum(timers.values())
    res.update(applied=sum(s.applied for s in stats), decisions=sum(s.decisions for s in stats),
               revisions=sum(s.revisions for s in stats), errors=[s.error for s in stats if s.error])
    res["groups_per_s"] = res["applied"] / res["wall_s"]
    return res


def run_pipeline(settings: Any, stream_path: Path, bank: str | Path, workers: int, sampler: ProcessSampler,
                 phase: str | None = None) -> dict[str, Any]:
    from pipelines.ingest_memories import run_ingest

    res: dict[str, Any] = {}
    with measured(sampler, phase or f"pipeline w{workers}", res):
        summary = run_ingest(settings, str(stream_path), str(bank), workers=workers)
    summary.pop("team_stats")
    res.update(summary)
    return res


def real_stream(args: argparse.Namespace, out: Path) -> Path | None:
    """The real stream to measure (``--stream`` or a TimeQA conversion), cut to ``--real-groups`` per team."""
    src = args.stream
    if src is None and args.timeqa and Path(args.timeqa).exists():
        pages = Path(args.timeqa)
        pages = next(iter(sorted(pages.glob("*.json"))), pages) if pages.is_dir() else pages
        subprocess.run([sys.executable, "-m", "memgraft.collab.data.timeqa", "--input", str(pages), "--out",
                        str(out / "timeqa")], check=True, capture_output=True, text=True)
        src = out / "timeqa" / "stream.jsonl"
    if src is None:
        return None
    kept: Counter[str] = Counter()
    lines = []
    for line in Path(src).read_text(encoding="utf-8").splitlines():
        if line.strip():
            team = json.loads(line)["team"]
            kept[team] += 1
            if kept[team] <= args.real_groups:
                lines.append(line)
    dest = out / "real_stream.jsonl"
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def run_pipelines(settings: Any, stream: Path, out: Path, sampler: ProcessSampler, workers: list[int],
                  backends: list[str], server: Any, label: str = "") -> list[dict[str, Any]]:
    """The pipeline once per backend and worker count, each into a fresh bank, checked against the baseline's."""
    runs = []
    for backend in backends:
        for w in workers:
            bank = server.database() if backend == "postgresql" else fresh(out / f"pipeline_w{w}.sqlite")
            p = run_pipeline(settings, stream, bank, w, sampler, phase=f"pipeline {label}{backend} w{w}")
            p["backend"], p["bank"] = backend, "a PostgreSQL database" if backend == "postgresql" else str(bank)
            p["agreement"] = agreement(out / "baseline.sqlite", bank)
            runs.append(p)
    return runs


def backend_ratios(pipeline: list[dict[str, Any]]) -> dict[int, float]:
    """PostgreSQL's groups/s over SQLite's, per worker count run on both."""
    by = {(p["backend"], p["workers"]): p["groups_per_s"] for p in pipeline}
    return {w: by[("postgresql", w)] / by[("sqlite", w)] for b, w in by if b == "sqlite" and ("postgresql", w) in by}


def measure_stream(settings: Any, stream: Path, warm: Path, out: Path, sampler: ProcessSampler, workers: list[int],
                   label: str, ray_address: str, backends: list[str], server: Any) -> dict[str, Any]:
    """The baseline, then the pipeline once per backend and worker count, on one stream."""
    import ray

    base_out = out / label
    base_out.mkdir(parents=True, exist_ok=True)
    baseline = run_baseline(settings, stream, warm, base_out, sampler, phase=f"baseline {label}")
    t = time.perf_counter()
    ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray_init_s = time.perf_counter() - t
    pipeline = run_pipelines(settings, stream, base_out, sampler, workers, backends, server, f"{label} ")
    ray.shutdown()
    return {"stream": str(stream), "ray_init_s": ray_init_s, "baseline": baseline, "pipeline": pipeline,
            "ratios": {f"{p['backend']} w{p['workers']}": p["groups_per_s"] / baseline["groups_per_s"]
                       for p in pipeline}, "backend_ratios": backend_ratios(pipeline)}


def print_streams(result: dict[str, Any]) -> None:
    """Generated against real stream, each run as a ratio to the generated stream's baseline."""
    from rich.console import Console
    from rich.table import Table

    ref = result["baseline"]["groups_per_s"]
    t = Table(title="groups/s by stream, as ratios to the generated stream's one-process baseline (same run)")
    for col in ("stream", "run", "groups", "decisions/group", "groups/s", "ratio to generated baseline"):
        t.add_column(col, justify="left" if col in ("stream", "run") else "right")
    for label, r in (("generated", result), *((("real", result["real"]),) if result.get("real") else ())):
        runs = [("one process, no Ray", r["baseline"])] + [(f"Ray, {p['workers']} workers, {p['backend']}", p)
                                                           for p in r["pipeline"]]
        for name, x in runs:
            dec = x["decisions"] / max(1, x["applied"])
            t.add_row(label, name, str(x["applied"]), f"{dec:.1f}", f"{x['groups_per_s']:.2f}",
                      f"{x['groups_per_s'] / ref:.2f}")
    Console(width=130).print(t)


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=130)
    b = result["baseline"]
    t = Table(title=f"ingest, rules updater: {result['data']['teams']} teams, {result['data']['groups']} groups, "
                    f"{result['data']['memories']} memories (K = {result['history_top_k']})")
    for col in ("run", "groups/s", "ratio", "ingest s", "start-up s", "decisions", "revisions", "other cores"):
        t.add_column(col, justify="right" if col != "run" else "left")
    t.add_row(f"one process, no Ray ({b['torch_threads']} torch threads)", f"{b['groups_per_s']:.1f}", "1.00",
              f"{b['wall_s']:.1f}", f"{b['load_s']:.1f}", str(b["decisions"]), str(b["revisions"]),
              f"{b['other_cores']:.2f}")
    for p in result["pipeline"]:
        t.add_row(f"Ray pipeline, {p['backend']}, {p['workers']} workers x {p['torch_threads']} threads",
                  f"{p['groups_per_s']:.1f}",
                  f"{p['groups_per_s'] / b['groups_per_s']:.2f}", f"{p['ingest_s']:.1f}", f"{p['startup_s']:.1f}",
                  str(p["decisions"]), str(p["revisions"]), f"{p['other_cores']:.2f}")
    con.print(t)
    pt = Table(title="where the baseline's time goes (seconds per group)")
    pt.add_column("part")
    pt.add_column("ms/group", justify="right")
    pt.add_column("share", justify="right")
    for k, v in sorted(b["parts_s"].items(), key=lambda kv: -kv[1]):
        pt.add_row(k, f"{1000 * v / max(1, b['applied']):.2f}", f"{v / b['wall_s']:.0%}")
    con.print(pt)
    if result["backend_ratios"]:
        rt = Table(title="PostgreSQL (pgvector) / SQLite: pipeline groups/s at the same worker count (same run)")
        for col in ("workers", "groups/s ratio"):
            rt.add_column(col, justify="right")
        for w, ratio in result["backend_ratios"].items():
            rt.add_row(str(w), f"{ratio:.2f}")
        con.print(rt)
    at = Table(title="pipeline bank vs baseline bank")
    for col in ("backend", "workers", "memories", "same maintained text and validity",
                "decisions (baseline, pipeline)"):
        at.add_column(col)
    for p in result["pipeline"]:
        a = p["agreement"]
        at.add_row(p["backend"], str(p["workers"]), str(a["memories"]), f"{a['same_state']:.4f}", str(a["decisions"]))
    con.print(at)
    con.print(f"Ray start-up (ray.init): {result['ray_init_s']:.1f} s.  Figures: {result['json']}")
    if result["noisy"]:
        con.print(f"[yellow]noisy[/]: other processes kept more than {NOISE_LIMIT} cores busy during "
                  f"{', '.join(result['noisy'])}; those figures are low")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teams", type=int, default=12)
    parser.add_argument("--groups", type=int, default=100, help="groups per team")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts for the pipeline runs")
    parser.add_argument("--backends", default="sqlite,postgresql",
                        help="the pipeline's banks: sqlite, postgresql or both (PostgreSQL: a throwaway local server)")
    parser.add_argument("--out", type=Path, default=None, help="default: a new temp dir")
    parser.add_argument("--profile", default="local")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    parser.add_argument("--ray-address", default="local", help="'local' (default) starts a fresh Ray")
    parser.add_argument("--stream", type=Path, default=None, help="a converted real stream to measure as well")
    parser.add_argument("--timeqa", default=str(Path(__file__).resolve().parents[2] / "shared/data/timeqa-train"),
                        help="without --stream: convert this TimeQA folder or JSON and measure it ('' to skip)")
    parser.add_argument("--real-groups", type=int, default=30, help="the real stream's first N groups per team")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="first wait up to this long for the rest of the machine to go idle")
    parser.add_argument("--growth", default=None, metavar="SIZES",
                        help="instead: one dense team's groups/s with the default updater at these bank sizes "
                             "(e.g. 500,10000), as a ratio (bench/ingest_growth.py)")
    args = parser.parse_args(argv)
    if args.growth:
        from bench.ingest_growth import main as growth

        return growth(["--sizes", args.growth, "--profile", args.profile,
                       *(x for o in args.overrides for x in ("--set", o))])

    from memgraft.collab.data.generator import generate
    from memgraft.config import load_settings

    from pipelines.ingest_memories import embedder_dtype_here

    settings = load_settings(args.profile, [*args.overrides, "hicomer.updater_policy=rules"])
    settings.models.embedder_dtype = embedder_dtype_here(settings.models.embedder_dtype, settings)  # as the workers will
    out = args.out or Path(tempfile.mkdtemp(prefix="memgraft-bench-ingest-"))
    out.mkdir(parents=True, exist_ok=True)
    data = generate(seed=args.seed, teams=args.teams, groups=args.groups)
    stream = data.write(out / "data")["stream"]
    warm = generate(seed=args.seed + 1, teams=2, groups=10).write(out / "warm")["stream"]
    real = real_stream(args, out)
    if args.wait_quiet:
        print(f"waited {wait_quiet(args.wait_quiet):.0f} s for a quiet machine", file=sys.stderr)

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    server = None
    if "postgresql" in backends:
        from memgraft.collab.bank.scratch import ScratchPostgres

        server = ScratchPostgres(out)
    sampler = ProcessSampler().start()
    try:
        baseline = run_baseline(settings, stream, warm, out, sampler)
        import ray

        t = time.perf_counter()
        ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray_init_s = time.perf_counter() - t
        workers = [int(x) for x in args.workers.split(",") if x.strip()]
        pipeline = run_pipelines(settings, stream, out, sampler, workers, backends, server)
        ray.shutdown()
        real_res = measure_stream(settings, real, warm, out, sampler, workers, "real", args.ray_address, backends,
                                  server) if real else None
    finally:
        sampler.stop()
        if server is not None:
            server.stop()

    result: dict[str, Any] = {
        "memory_peaks_mb": sampler.peaks, "data": data.counts(), "history_top_k": settings.hicomer.history_top_k, "out": str(out),
        "settings": {"profile": settings.profile, "overrides": args.overrides,
                     "embedder_dtype": settings.models.embedder_dtype, "actor_cpus": settings.pipeline.actor_cpus},
        "ray_init_s": ray_init_s, "baseline": baseline, "pipeline": pipeline,
        "ratios": {f"{p['backend']} w{p['workers']}": p["groups_per_s"] / baseline["groups_per_s"] for p in pipeline},
        "backend_ratios": backend_ratios(pipeline),
        "real": real_res,
        "json": str(out / "bench_ingest.json"),
    }
    result["noisy"] = (["baseline"] if baseline["other_cores"] > NOISE_LIMIT else []) + [
        f"pipeline {p['backend']} w{p['workers']}" for p in pipeline if p["other_cores"] > NOISE_LIMIT] + (
        [phase for phase, x in [("baseline real", real_res["baseline"]),
                                *((f"pipeline real {p['backend']} w{p['workers']}", p) for p in real_res["pipeline"])]
         if x["other_cores"] > NOISE_LIMIT] if real_res else [])
    (out / "bench_ingest.json").write_text(json.dumps(result, indent=2, default=str))
    print_tables(result)
    print_streams(result)
    return result


if __name__ == "__main__":
    main()
