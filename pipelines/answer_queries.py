"""The HGMem driver: answer many questions over a built graph, on Ray.

    python pipelines/answer_queries.py --graph DIR --questions FILE.jsonl --output OUT --method hgmem
    ray job submit --working-dir . -- python pipelines/answer_queries.py ...

Questions fan out to worker actors (each holds the graph store and runs many
questions at once, in threads) with at most ``hgmem.max_in_flight`` in flight.
Every LLM request goes to one shared engine actor that batches across
questions (or, with ``models.llm_backend=openai``, to an OpenAI-compatible
server such as vLLM or Ray Serve LLM). ``OUT/answers.jsonl`` gets one line per
question as it finishes, and ``OUT/traces/`` a trace per question. Killed and
restarted, the driver skips the questions its method already has in ``answers.jsonl``; another
method run into the same folder answers them all again (``score`` groups the lines by method).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray
import typer

from memgraft.config import Settings, load_settings
from memgraft.graph.folder import GraphFolder, GraphFolderError
from memgraft.hgmem.methods import METHODS
from memgraft.models.llm.base import LLM
from memgraft.progress import Progress
from pipelines.runtime import PipelineFitError, configure_output, gpu_actors, init_ray

log = logging.getLogger("memgraft.answer_queries")


WORKER_RESTARTS = 2  # a worker killed more often than this fails its questions (each recorded, --retry-failed)


@ray.remote
class QuestionWorker:
    """Holds the graph store once and answers questions concurrently (a threaded actor)."""

    def __init__(self, graph: str, settings: Settings, llm: LLM | None):
        from memgraft.graph.store import GraphStore
        from memgraft.models.batching import BatchingEmbedder
        from memgraft.models.embedder import load_embedder

        self.settings = settings
        # One torch thread for query embeddings: many questions share this process and
        # the CPU, and a short query on 2 threads of a busy machine is ~25x slower.
        query_settings = settings.model_copy(deep=True)
        query_settings.models.torch_threads = 1
        # The worker's threads embed their queries together: one model call per burst.
        self.store = GraphStore.load(graph, BatchingEmbedder(load_embedder(query_settings)))
        if llm is None:  # an OpenAI-compatible server: each worker is a client of it
            from memgraft.models.llm import load_llm

            llm = load_llm(settings)
        self.llm = llm

    def answer(self, record: dict[str, Any], method: str, trace_dir: str) -> dict[str, Any]:
        from memgraft.hgmem.methods import answer_record

        qid = record.get("id")

        def tell(line: str) -> None:  # Ray forwards a worker's stderr to the driver's terminal as it comes
            print(f"{method} {qid}: {line}", file=sys.stderr, flush=True)

        return answer_record(record, method, self.store, self.llm, self.settings, trace_dir, tell)


def read_questions(path: str) -> Iterator[dict[str, Any]]:
    """JSONL questions; a MuSiQue/HotpotQA-style JSON list is accepted too."""
    text = Path(path).read_text()
    if path.endswith(".json"):
        for q in json.loads(text):
            yield {"id": q.get("id") or q.get("_id"), **{k: v for k, v in q.items() if k != "paragraphs"}}
        return
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                q = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not JSON ({err.msg})") from err
            if "id" not in q or "question" not in q:
                raise ValueError(f"{path}:{n}: a question needs 'id' and 'question'")
            yield q


def done_ids(answers: Path, retry_failed: bool, method: str | None = None) -> set[str]:
    """Ids ``method`` already answered (every method's, when None): one folder may hold several methods,
    and a second method run into it answers every question again. A torn last line (the driver was
    killed mid-write) is cut off; with ``retry_failed`` that method's error lines are removed so those
    questions run again."""
    if not answers.exists():
        return set()
    raw = answers.read_bytes()
    if raw and not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
        log.warning("%s ended in a torn line (killed mid-write); it was cut off", answers)
    keep, ids = [], set()
    for line in raw.decode("utf-8").splitlines():
        row = json.loads(line)
        mine = method is None or row.get("method") == method
        if mine and retry_failed and row.get("error"):
            continue
        keep.append(line)
        if mine:
            ids.add(str(row["id"]))
    tmp = answers.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in keep))
    os.replace(tmp, answers)
    return ids


def start_llm(settings: Settings, started: bool = False) -> LLM | None:
    """The shared engine for in-process backends; None when workers call an HTTP server.
    ``started``: this run started the local Ray, so an engine its GPUs cannot hold is refused, not awaited."""
    if settings.models.llm_backend == "openai":
        return None
    from pipelines.engine import EngineClient, LLMEngine

    gpus = settings.models.llm_tensor_parallel if settings.models.llm_backend == "vllm" else 0
    gpu_actors("the shared LLM engine", gpus, 1, started)
    engine = LLMEngine.options(num_cpus=settings.pipeline.actor_cpus, num_gpus=gpus,
                               max_concurrency=max(64, settings.hgmem.max_in_flight * 4)).remote(settings)
    return EngineClient(engine, ray.get(engine.name.remote()), settings.models.llm_timeout_s)


def auto_workers(settings: Settings) -> int:
    """Enough worker actors that none runs more than ``hgmem.questions_per_worker`` questions at once."""
    return max(1, math.ceil(settings.hgmem.max_in_flight / max(1, settings.hgmem.questions_per_worker)))


def placeable_workers(settings: Settings, wanted: int, engine: bool) -> int:
    """``wanted`` capped by the CPUs the Ray cluster has for them (after the shared engine's):
    a worker that can never be placed would hold its questions forever."""
    cpus = float(ray.cluster_resources().get("CPU", 0.0))
    if engine:
        cpus -= settings.pipeline.actor_cpus
    fit = max(1, int(cpus / settings.pipeline.actor_cpus + 1e-9)) if settings.pipeline.actor_cpus > 0 else wanted
    if fit < wanted:
        log.warning("%d question workers of %s CPUs each do not fit in this cluster's %.1f CPUs; using %d",
                    wanted, settings.pipeline.actor_cpus, cpus, fit)
    return min(wanted, fit)


def run_answers(settings: Settings, graph: str, questions: str, output: str, method: str,
                *, limit: int | None = None, retry_failed: bool = False, workers: int = 0,
                llm: LLM | None = None) -> dict[str, Any]:
    """Answer every question not yet answered; returns a summary."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    if not Path(questions).is_file():
        raise FileNotFoundError(f"questions {questions} is not a file")
    GraphFolder(graph).read_manifest()  # not a graph: said here, not by every worker after Ray starts
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    answers = out / "answers.jsonl"
    skip = done_ids(answers, retry_failed, method)
    todo = [q for q in read_questions(questions) if str(q["id"]) not in skip][: limit if limit else None]
    log.info("%d questions to answer (%d already in %s)", len(todo), len(skip), answers)
    counts = {"answered": 0, "failed": 0, "tokens": 0}
    if not todo:  # a finished run: no engine to load, no workers to start
        return {**counts, "skipped": len(skip), "workers": 0, "seconds": 0.0, "questions_per_s": 0.0,
                "output": str(answers)}
    started = init_ray()
    t0 = time.perf_counter()
    engine = llm is None and settings.models.llm_backend != "openai"
    if llm is None:
        llm = start_llm(settings, started)
    in_flight_cap = max(1, settings.hgmem.max_in_flight)
    workers = placeable_workers(settings, workers or auto_workers(settings), engine)
    per_worker = math.ceil(in_flight_cap / workers)
    # a killed worker is restarted and its questions run again there (only the driver writes answers: once each)
    pool = [QuestionWorker.options(num_cpus=settings.pipeline.actor_cpus, max_concurrency=per_worker,
                                   max_restarts=WORKER_RESTARTS, max_task_retries=WORKER_RESTARTS)
            .remote(graph, settings, llm) for _ in range(workers)]
    pending: dict[Any, tuple[dict[str, Any], int]] = {}
    load = [0] * len(pool)  # questions in flight per worker: each new one goes to the least loaded
    queue = list(todo)
    with answers.open("a", encoding="utf-8") as sink, Progress(f"answer ({method})", len(todo), "questions") as bar:
        while queue or pending:
            while queue and len(pending) < in_flight_cap:
                q = queue.pop(0)
                i = min(range(len(pool)), key=load.__getitem__)
                load[i] += 1
                pending[pool[i].answer.remote(q, method, str(out / "traces"))] = (q, i)
            ready, rest = ray.wait(list(pending), num_returns=1, timeout=bar.interval_s)
            if not ready:  # questions take minutes on a CPU: say the run is alive
                bar.tick()
                continue
            if rest:  # and every other answer already in: one pass over the in-flight refs per burst, not per answer
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in ready:
                q, i = pending.pop(ref)
                load[i] -= 1
                try:
                    row = ray.get(ref)
                except ray.exceptions.RayError as err:  # the worker died: record it, go on
                    row = {"id": str(q["id"]), "question": q.get("question"), "method": method, "answer": None,
                           "error": f"worker failed: {type(err).__name__}: {err}"}
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                sink.flush()
                counts["failed" if row.get("error") else "answered"] += 1
                bar.advance()
                counts["tokens"] += int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)
                if row.get("error"):
                    log.warning("question %s failed: %s", row["id"], row["error"])
    if engine:  # ours: stop it, so the rest of a run (the demo) has its CPU back
        ray.get(llm.handle.close.remote())
        ray.kill(llm.handle)
    seconds = time.perf_counter() - t0
    return {**counts, "skipped": len(skip), "workers": workers, "seconds": round(seconds, 2),
            "questions_per_s": round(len(todo) / seconds, 3) if seconds else 0.0, "output": str(answers)}


app = typer.Typer(add_completion=False)


@app.command()
def main(
    graph: str = typer.Option(..., help="a graph folder built by build_graphs.py"),
    questions: str = typer.Option(..., help='JSONL: {"id", "question", ...} (or a MuSiQue-style JSON list)'),
    output: str = typer.Option(..., help="output folder: answers.jsonl and traces/"),
    method: str = typer.Option("hgmem", help=f"one of {', '.join(METHODS)}"),
    limit: Optional[int] = typer.Option(None, help="answer at most this many (of those not yet answered)"),
    workers: int = typer.Option(0, help="question-worker actors (0: max_in_flight / questions_per_worker, at least 1)"),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="run failed questions again"),
    profile: str = typer.Option("local"),
    set_: list[str] = typer.Option([], "--set", help="section.field=value (repeatable)"),
    verbose: bool = typer.Option(False, "--verbose", help="Ray's and the models' own INFO logs too"),
) -> None:
    configure_output(verbose)
    settings = load_settings(profile, set_)
    try:
        summary = run_answers(settings, graph, questions, output, method, limit=limit, retry_failed=retry_failed,
                              workers=workers)
    except (FileNotFoundError, ValueError, GraphFolderError, PipelineFitError) as err:
        typer.echo(f"answer_queries: {err}", err=True)
        raise typer.Exit(2) from err
    typer.echo(json.dumps(summary, indent=2))


if __name__ == "__main__":
    app()
