"""A memory stream through HiCoMER's updater into a bank, teams in parallel on Ray.

    python pipelines/ingest_memories.py --stream FILE.jsonl --bank PATH [--policy rules|llm] [--workers N]
    ray job submit --working-dir . -- python pipelines/ingest_memories.py --stream ... --bank ...

The driver reads and validates the whole stream first (a bad line stops the run
before anything is written, with every bad line named as ``file:line``), then hands
whole teams to a pool of worker actors, largest first. Each worker loads the
embedder and the policy once, opens the bank, and applies its team's groups in
time order (``memgraft.collab.ingest.ingest_team``), each group committed in one short
transaction. On a SQLite file the workers take turns at the file's one write lock; on a
PostgreSQL bank (``--bank postgresql://…``) they write their teams at once, each team's
writers in turn. Killed and restarted, the run skips the groups already in the bank.
A database restart mid-run is ridden out: a group's write is retried with backoff for
``bank.outage_retry_s`` (default 120 s), then its team stops with the error named.
A team whose group fails stops there (nothing of that group written) while the others
go on; the run then exits with status 1.

With ``--policy llm`` each worker loads the configured LLM backend
(``models.llm_backend``): the local profile's transformers SmolLM2 in every worker, or,
with ``openai``, a client of the shared server at ``models.llm_base_url``.

Workers load the embedder in the profile's dtype; with ``auto`` (the local
profile) that is the faster of bf16 and fp32 measured once for this model and CPU
(``memgraft.models.dtype``): bf16 is emulated on a CPU without avx512_bf16 or AMX,
where all-MiniLM took 545 ms per text in bf16 against 49 in fp32 (2 cores, calls of
2 texts: 11x). The first worker to load probes; the others wait and read the cached
choice. The summary says which dtype the workers used.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray
import typer

from memgraft.collab.bank import BankError, open_bank
from memgraft.collab.bank import pool as bank_pool
from memgraft.collab.bank.backend import check_location, hide_password, is_postgres
from memgraft.collab.bank.outage import ride_out
from memgraft.collab.ingest import StreamError, TeamStats, read_stream
from memgraft.config import Settings, load_settings
from memgraft.models.threads import available_cpus
from memgraft.progress import Progress
from pipelines.runtime import PipelineFitError, configure_output, gpu_actors, init_ray

log = logging.getLogger("memgraft.ingest_memories")

# (settings, embedder) -> policy: lets tests and benchmarks put their own policy in the workers
PolicyFactory = Callable[[Settings, Any], Any]


def embedder_dtype_here(dtype: str, settings: Settings | None = None) -> str:
    """The dtype the workers will embed in: the profile's, or for ``auto`` the cached or measured choice.

    Probing loads the embedder once here (seconds, once per machine); bench/ingest.py calls this.
    """
    if dtype != "auto":
        return dtype
    from memgraft.models.embedder import load_embedder

    s = (settings or Settings()).model_copy(deep=True)
    s.models.embedder_dtype = dtype
    return load_embedder(s).dtype


def open_through_outage(bank: str, embedder: Any, budget_s: float) -> Any:
    """The bank, opened again while its server is away for up to ``budget_s`` (``bank.outage_retry_s``): a worker
    that starts while PostgreSQL restarts waits for it as a write does, instead of dying in its constructor and
    failing every team it was to take."""
    return ride_out(lambda: open_bank(bank, embedder), budget_s, hide_password(bank),
                    "opening it for an ingest worker")


@ray.remote
class IngestWorker:
    """Holds one embedder, one policy and one bank connection; applies whole teams, one at a time."""

    def __init__(self, bank: str, settings: Settings, threads: int, policy_factory: PolicyFactory | None):
        from memgraft.collab.maintain.policies import make_policy
        from memgraft.collab.maintain.updater import MemoEmbedder, Updater
        from memgraft.models.embedder import load_embedder

        s = settings.model_copy(deep=True)
        # Ray sets OMP_NUM_THREADS=1 for a 1-CPU actor and more for none: say how many, explicitly.
        s.models.torch_threads = max(1, min(threads, available_cpus()))
        inner = load_embedder(s)  # with "auto": the measured choice, probed by the first worker only
        self.embedder_dtype = getattr(inner, "dtype", s.models.embedder_dtype)
        embedder = MemoEmbedder(inner)
        self.policy = policy_factory(s, embedder) if policy_factory else make_policy(s, embedder=embedder)
        bank_pool.configure(s.bank)  # a PostgreSQL bank's pool size and timeouts in this worker
        self.bank = open_through_outage(bank, embedder, s.bank.outage_retry_s)
        self.updater = Updater(self.bank, self.policy, s.hicomer)

    def ready(self) -> tuple[str, str]:
        return self.policy.name, self.embedder_dtype

    def ingest(self, groups: list[Any]) -> TeamStats:
        from memgraft.collab.ingest import ingest_team

        return ingest_team(self.updater, groups)


def run_ingest(settings: Settings, stream: str, bank: str, *, workers: int = 0, ray_address: str | None = None,
               policy_factory: PolicyFactory | None = None) -> dict[str, Any]:
    """Ingest every team's groups not yet in ``bank``; returns the summary (per team in ``teams``)."""
    t0 = time.perf_counter()
    check_location(bank)  # a wrong scheme is said now, not as a worker's traceback once Ray is up
    parsed = read_stream(stream)  # raises StreamError before anything is written
    if is_postgres(bank):  # an unreachable server or a bad URL is said here, not as a dead worker
        bank_pool.configure(settings.bank)
        open_bank(bank).close()
    teams = sorted(parsed.teams, key=lambda t: (-len(parsed.teams[t]), t))  # largest first: the pool ends together
    # None joins RAY_ADDRESS (set by `ray job submit`) or a running head, else starts a local Ray;
    # "local" always starts a new local one; "auto" needs a running cluster.
    started = init_ray(ray_address)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    s = settings
    gpus = s.models.llm_tensor_parallel if s.hicomer.updater_policy == "llm" and s.models.llm_backend == "vllm" else 0
    # each worker holds its own vLLM engine: no more workers than the GPUs hold, or the rest wait forever
    n = gpu_actors("an ingest worker (the LLM updater)", gpus, max(1, min(workers or cpus, len(teams) or 1)), started)
    threads = settings.models.torch_threads or max(1, cpus // n)
    pool = [IngestWorker.options(num_cpus=s.pipeline.actor_cpus, num_gpus=gpus, max_restarts=0)
            .remote(bank, s, threads, policy_factory) for _ in range(n)]
    policy_name, dtype = ray.get([w.ready.remote() for w in pool])[0]
    started = time.perf_counter()
    log.info("%d teams, %d groups; %d workers ready in %.1fs (policy %s, %d torch threads each, embedder %s)",
             len(teams), parsed.n_groups, n, started - t0, policy_name, threads, dtype)
    results: list[TeamStats] = []
    queue, pending = list(teams), {}
    free = list(range(n))
    with Progress("ingest", len(teams), "teams") as bar:
        while queue or pending:
            while queue and free:
                team, i = queue.pop(0), free.pop(0)
                pending[pool[i].ingest.remote(parsed.teams[team])] = (team, i)
            [ref], _ = ray.wait(list(pending), num_returns=1)
            team, i = pending.pop(ref)
            free.append(i)
            try:
                stats = ray.get(ref)
            except ray.exceptions.RayError as err:  # the worker died: that team stops; a rerun resumes it
                stats = TeamStats(team=team, groups=len(parsed.teams[team]), error=f"worker failed: {err}")
            results.append(stats)
            bar.advance()
            level = logging.WARNING if stats.error else logging.INFO
            log.log(level, "team %s: %d applied, %d skipped of %d groups, %d decisions, %d revisions%s", team,
                    stats.applied, stats.skipped, stats.groups, stats.decisions, stats.revisions,
                    f"; stopped at {stats.failed_group}: {stats.error}" if stats.error else "")
    for w in pool:
        ray.kill(w)
    end = time.perf_counter()
    applied = sum(r.applied for r in results)
    return {
        "stream": stream, "bank": hide_password(bank), "policy": policy_name, "workers": n, "torch_threads": threads,
        "embedder_dtype": dtype,
        "teams": len(teams), "groups": parsed.n_groups, "applied": applied,
        "skipped": sum(r.skipped for r in results), "decisions": sum(r.decisions for r in results),
        "revisions": sum(r.revisions for r in results), "failed_teams": sum(bool(r.error) for r in results),
        "outage_retries": sum(r.retries for r in results), "outage_s": round(sum(r.outage_s for r in results), 1),
        "llm_calls": sum(r.usage.calls for r in results),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in results),
        "completion_tokens": sum(r.usage.completion_tokens for r in results),
        "startup_s": round(started - t0, 3), "ingest_s": round(end - started, 3), "seconds": round(end - t0, 3),
        "groups_per_s": round(applied / (end - started), 3) if end > started else 0.0,
        "team_stats": [{**asdict(r), "usage": asdict(r.usage)} for r in sorted(results, key=lambda r: r.team)],
    }


def print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    t = Table(title=f"ingested {summary['stream']} -> {summary['bank']}", show_header=False)
    rows = [
        ("policy", f"{summary['policy']} ({summary['workers']} workers, {summary['torch_threads']} torch threads "
                   f"each, embedder in {summary['embedder_dtype']})"),
        ("teams", f"{summary['teams']} ({summary['failed_teams']} failed)"),
        ("groups", f"{summary['applied']} applied, {summary['skipped']} already in the bank, of {summary['groups']}"),
        ("decisions", f"{summary['decisions']} ({summary['revisions']} revisions)"),
        ("seconds", f"{summary['seconds']:.1f} ({summary['startup_s']:.1f} worker start-up)"),
        ("groups/s", f"{summary['groups_per_s']:.2f} (after start-up)"),
    ]
    if summary["outage_retries"]:
        rows.append(("database outage", f"{summary['outage_retries']} writes retried, {summary['outage_s']:.1f}s "
                                        f"waited (bank.outage_retry_s)"))
    if summary["llm_calls"]:
        rows.append(("LLM", f"{summary['llm_calls']} calls, {summary['prompt_tokens']:,} prompt + "
                            f"{summary['completion_tokens']:,} completion tokens"))
    for k, v in rows:
        t.add_row(k, v)
    con.print(t)
    failed = [r for r in summary["team_stats"] if r["error"]]
    if failed:
        ft = Table(title="failed teams (a rerun resumes each at its failed group)")
        for col in ("team", "applied", "stopped at", "error"):
            ft.add_column(col)
        for r in failed:
            ft.add_row(r["team"], str(r["applied"]), str(r["failed_group"]), r["error"][:300])
        con.print(ft)


app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def main(
    stream: str = typer.Option(..., "--stream", help="memory stream JSONL: one group per line"),
    bank: str = typer.Option(..., "--bank", help="the bank: a SQLite file (created if missing), or a postgresql:// "
                             "URL (PostgreSQL with pgvector; workers write their teams at once)"),
    policy: Optional[str] = typer.Option(None, "--policy", help="rules|llm (default: hicomer.updater_policy)"),
    workers: int = typer.Option(0, "--workers", help="worker actors (0: one per CPU, at most one per team)"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="local|auto|ADDRESS (default: "
                                              "RAY_ADDRESS or a running head, else a new local Ray)"),
    profile: str = typer.Option("local", "--profile", help="configs/<profile>.yaml or a YAML path"),
    set_: list[str] = typer.Option([], "--set", help="override a setting: section.field=value (repeatable)"),
    verbose: bool = typer.Option(False, "--verbose", help="Ray's and the models' own INFO logs too"),
) -> None:
    configure_output(verbose)
    overrides = list(set_) + ([f"hicomer.updater_policy={policy}"] if policy else [])
    settings = load_settings(profile, overrides)
    try:
        summary = run_ingest(settings, stream, bank, workers=workers, ray_address=ray_address)
    except (FileNotFoundError, StreamError, BankError, PipelineFitError) as err:
        typer.echo(f"ingest_memories: {err}", err=True)
        raise typer.Exit(2) from err
    print_summary(summary)
    if summary["failed_teams"]:
        raise typer.Exit(1)


if __name__ == "__main__":
    app()
