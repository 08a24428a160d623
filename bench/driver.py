"""The HGMem driver (``pipelines/answer_queries.run_answers``) against a stand-in LLM server, in one run.

    python bench/driver.py [--graph DIR] [--delay 1.0] [--levels 1,16,64,256] [--methods naive,hgmem]
        [--workers 1] [--extra-workers 2] [--py-spy] [--token-questions 50]
        [--real-llm-questions 2 --real-llm-set generation.max_new_tokens=256] [--out DIR] [--set k=v ...]

The default run (a graph built here, the sweep, the token count) takes about
5-10 minutes on 2 cores; ``--levels ''`` skips the sweep.

1. A graph: ``--graph DIR``, or built here with ``pipelines.build_graphs.run_build``
   from the first ``--passages`` MuSiQue passages (200 by default: under a minute).
2. Questions: MuSiQue's 100 training questions, repeated to reach enough for the
   largest in-flight level; a repeat gets a new id and a `` [k]`` suffix, so its
   text differs and the store's query-embedding cache does not answer it for free.
3. A stand-in OpenAI-compatible server (``bench/standin_server.py``, in a
   subprocess) answers schema-valid JSON after a fixed ``--delay``; an ``hgmem``
   question makes 6 calls, ``naive`` 1 (the stand-in's answers are deterministic).
4. For each method and each in-flight level L, ``run_answers`` with
   ``hgmem.max_in_flight=L``, ``models.llm_backend=openai``, ``models.llm_base_url``
   at the stand-in, over ``max(--min-questions, --per-level * L)`` questions.
   Ideal questions/s = L / (calls per question x delay); measured questions/s =
   questions / (last answer written - first question started on a worker), so
   Ray's and the workers' start-up (model and graph loading) are left out and
   reported apart; efficiency = measured / ideal. ``--extra-workers W`` adds a run
   of the largest level with W worker actors.
   The openai backend caps each client's connections at ``models.llm_batch_size``
   (4 by default), which caps a worker at 4 calls in flight; the sweep sets
   ``models.llm_batch_size=L`` to measure past that, and one extra run with the
   setting as configured shows the cap (``--skip-pool-check`` leaves it out).
5. Where the time goes: the worker's path for one question timed in this process
   (query embedding, the rest of retrieval and prompting, the HTML trace), with
   an in-process stand-in LLM and no delay, and one HTTP round trip to a
   zero-delay stand-in; with ``--py-spy``, the worker is sampled during the
   largest level's run and its samples are split the same way.
6. Tokens per question (prompt + completion) for ``hgmem`` and ``naive``, beside the
   HGMem paper's 4,436 per NarrativeQA question: (a) over ``--token-questions``
   MuSiQue questions with real retrieval and prompts, the stand-in answering and
   counting in the bundled SmolLM2's tokens (chat template included, as the
   transformers backend counts); (b) opt-in, ``--real-llm-questions N``: the real
   SmolLM2 (``llm_backend=transformers``), N questions batched in the engine, with
   ``--real-llm-set`` overrides. SmolLM2 on 2 CPU cores is slow: one hgmem call
   with the paper's settings (6,000-token contexts, 2,048 new tokens) can pass
   ``models.llm_timeout_s`` (600 s); ``--real-llm-set generation.max_new_tokens=256``
   keeps a question to minutes.

CPU used by other processes on the machine is reported per phase: the figures
are only as quiet as the machine. Figures are printed and written to
``<out>/bench_driver.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.driver_profile import py_spy_record, split_samples, time_worker_path, worker_pids  # noqa: E402
from bench.driver_tables import print_tables  # noqa: E402
from bench.driver_tokens import copy_settings, real_llm_tokens, standin_tokens  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "musique"


# -- inputs ---------------------------------------------------------------------------------------


def build_graph(settings: Any, corpus: Path, passages: int, out: Path) -> tuple[Path, float]:
    from pipelines.build_graphs import run_build

    records = json.loads(corpus.read_text(encoding="utf-8"))[:passages]
    sliced = out / f"corpus_first_{passages}.json"
    sliced.write_text(json.dumps(records), encoding="utf-8")
    graph = out / "graph"
    t = time.perf_counter()
    run_build(settings, str(sliced), str(graph))
    return graph, time.perf_counter() - t


def write_questions(source: Path, n: int, path: Path) -> Path:
    """``n`` questions: the file's, then repeats with new ids and a `` [k]`` suffix."""
    base = [q for q in json.loads(source.read_text(encoding="utf-8")) if q.get("question")]
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            q, k = base[i % len(base)], i // len(base)
            row = {"id": str(q["id"]) if k == 0 else f"{q['id']}#r{k}",
                   "question": q["question"] if k == 0 else f"{q['question']} [{k}]", "answer": q.get("answer")}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


# -- one driver run ---------------------------------------------------------------------------------


class AnswerTail:
    """Notes the wall time at which each line of ``answers.jsonl`` appears (the driver flushes each)."""

    def __init__(self, path: Path, interval_s: float = 0.02, on_line: Any = None):
        self.path = path
        self._offset = 0
        self._partial = b""
        self.interval_s = interval_s
        self.on_line = on_line
        self.rows: list[tuple[float, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="answer-tail", daemon=True)

    def __enter__(self) -> "AnswerTail":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._read()

    def _read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        if not data:
            return
        now = time.time()
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self.rows.append((now, json.loads(line)))
                if self.on_line:
                    self.on_line(len(self.rows))


def run_level(settings: Any, graph: Path, questions: Path, out: Path, method: str, level: int, n: int,
              workers: int, delay: float, server: Any, spy: bool, extra: list[str]) -> dict[str, Any]:
    from pipelines.answer_queries import run_answers

    # llm_batch_size is the openai client's connection cap (see the docstring); ``extra`` may set it back.
    run_settings = copy_settings(settings, [f"hgmem.max_in_flight={level}", "models.llm_backend=openai",
                                            f"models.llm_base_url={server.base_url}", f"models.llm_batch_size={level}", *extra])
    run_dir = out / f"{method}_L{level}_w{workers}{'_' + '_'.join(e.replace('=', '') for e in extra) if extra else ''}"
    server.reset_stats()
    spied: dict[str, Any] = {}

    def on_line(count: int) -> None:  # sample the worker once it is in full swing
        if spy and not spied and count >= max(2, n // 8):
            pids = worker_pids()
            if pids:
                spied["pid"] = pids[0]
                spied["path"] = run_dir / "py-spy.txt"
                spied["proc"] = py_spy_record(pids[0], 5, spied["path"])

    t0 = time.time()
    with AnswerTail(run_dir / "answers.jsonl", on_line=on_line) as tail:
        summary = run_answers(run_settings, str(graph), str(questions), str(run_dir), method, limit=n,
                              workers=workers)
    if spied.get("proc") is not None:
        try:
            spied["proc"].wait(timeout=30)
        except subprocess.TimeoutExpired:
            spied["proc"].kill()
    stats = server.stats()
    rows = [r for _, r in tail.rows]
    ok = [r for r in rows if not r.get("error")]
    starts = [at - float(r.get("seconds") or 0) for at, r in tail.rows]
    window = max(at for at, _ in tail.rows) - min(starts) if rows else float("nan")
    calls = statistics.mean(r["llm_calls"] for r in ok) if ok else float("nan")
    ideal = level / (calls * delay) if ok else float("nan")
    measured = len(rows) / window if rows else float("nan")
    lat = sorted(float(r["seconds"]) for r in ok)
    result = {
        "method": method, "in_flight": level, "workers": workers, "questions": len(rows), "errors": len(rows) - len(ok),
        "first_error": next((r["error"] for r in rows if r.get("error")), None),
        "calls_per_question": calls, "ideal_qps": ideal, "measured_qps": measured, "efficiency": measured / ideal,
        "window_s": window, "run_answers_s": summary["seconds"], "run_answers_qps": summary["questions_per_s"],
        "startup_s": min(starts) - t0 if rows else float("nan"),
        "latency_p50_s": lat[len(lat) // 2] if lat else float("nan"),
        "latency_p95_s": lat[int(len(lat) * 0.95)] if lat else float("nan"),
        "latency_ideal_s": calls * delay,
        "tokens_per_question": statistics.mean(r["prompt_tokens"] + r["completion_tokens"] for r in ok) if ok else 0,
        "server_requests": stats["requests"], "server_peak_in_flight": stats["peak_waiting"],
        "settings": {"llm_batch_size": run_settings.models.llm_batch_size, "extra": extra},
    }
    if spied.get("path"):
        result["py_spy"] = {"pid": spied["pid"], **split_samples(spied["path"])}
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", type=Path, default=None, help="reuse a built graph folder")
    parser.add_argument("--corpus", type=Path, default=DATA / "musique_train_corpus.json")
    parser.add_argument("--passages", type=int, default=200, help="build from the first N passages (without --graph)")
    parser.add_argument("--questions", type=Path, default=DATA / "musique_train.json")
    parser.add_argument("--out", type=Path, default=None, help="default: a new temp dir")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds the stand-in waits per call")
    parser.add_argument("--levels", default="1,16,64,256", help="in-flight levels ('' skips the sweep)")
    parser.add_argument("--methods", default="naive,hgmem")
    parser.add_argument("--per-level", type=int, default=2, help="questions per level = max(min, this x level)")
    parser.add_argument("--min-questions", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="question-worker actors")
    parser.add_argument("--extra-workers", type=int, default=0,
                        help="also run the largest level with this many workers (0: no)")
    parser.add_argument("--skip-pool-check", action="store_true",
                        help="leave out the run with models.llm_batch_size as configured")
    parser.add_argument("--py-spy", action="store_true", help="sample the worker during the largest level")
    parser.add_argument("--token-questions", type=int, default=50, help="questions for the token count (0: skip)")
    parser.add_argument("--real-llm-questions", type=int, default=0, help="opt-in: questions for the real SmolLM2")
    parser.add_argument("--real-llm-set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="overrides for the real-LLM run only")
    parser.add_argument("--path-questions", type=int, default=30, help="questions timed in this process (0: skip)")
    parser.add_argument("--profile", default="local")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args(argv)

    from bench.sampling import ProcessSampler
    from bench.standin_server import Standin
    from memgraft.config import load_settings

    settings = load_settings(args.profile, args.overrides)
    levels = [int(x) for x in args.levels.split(",") if x]
    methods = [m for m in args.methods.split(",") if m]
    out = args.out or Path(tempfile.mkdtemp(prefix="memgraft-bench-driver-"))
    out.mkdir(parents=True, exist_ok=True)
    counts = {lvl: max(args.min_questions, args.per_level * lvl) for lvl in levels}
    most = max(counts.values(), default=0)
    questions = write_questions(args.questions, max(most + args.path_questions + 2, args.real_llm_questions, 100),
                                out / "questions.jsonl")

    sampler = ProcessSampler().start()
    sampler.set_phase("ray_init")
    import ray

    t = time.perf_counter()
    ray.init(address="local", include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    ray_init_s = time.perf_counter() - t
    result: dict[str, Any] = {"delay_s": args.delay, "methods": methods, "out": str(out), "ray_init_s": ray_init_s,
                              "settings": {"profile": settings.profile, "overrides": args.overrides}}
    if args.graph:
        graph = args.graph
    else:
        sampler.set_phase("graph_build")
        graph, result["graph_build_s"] = build_graph(settings, args.corpus, args.passages, out)
    manifest = json.loads((graph / "manifest.json").read_text())
    c = manifest.get("counts", {})
    result["graph"] = str(graph)
    result["graph_counts"] = f"graph: {c.get('chunks')} chunks, {c.get('entities')} entities, {c.get('relations')} relations"

    if args.path_questions > 0:
        sampler.set_phase("worker_path")
        # The path questions come after those the sweep uses, so the sweep's embeddings are not cached here either.
        path_q = out / "path_questions.jsonl"
        path_q.write_text("\n".join(questions.read_text().splitlines()[most:]) + "\n")
        result["worker_path"] = time_worker_path(settings, graph, path_q, methods, args.path_questions, Standin)

    result["levels"] = []
    with Standin(args.delay, process=True) as server:
        for method in methods:
            for level in levels:
                sampler.set_phase(f"{method}@{level}")
                spy = args.py_spy and level == max(levels)
                r = run_level(settings, graph, questions, out, method, level, counts[level], args.workers,
                              args.delay, server, spy, [])
                result["levels"].append(r)
                print(f"{method} at {level} in flight: {r['questions']} questions, {r['measured_qps']:.2f} q/s "
                      f"of {r['ideal_qps']:.2f} ideal (efficiency {r['efficiency']:.2f})", flush=True)
            if args.extra_workers:
                level = max(levels)
                sampler.set_phase(f"{method}@{level}x{args.extra_workers}w")
                r = run_level(settings, graph, questions, out, method, level, counts[level], args.extra_workers,
                              args.delay, server, False, [])
                result["levels"].append(r)
                print(f"{method} at {level} in flight, {args.extra_workers} workers: {r['measured_qps']:.2f} q/s "
                      f"(efficiency {r['efficiency']:.2f})", flush=True)
        if levels and not args.skip_pool_check:
            level = 64 if 64 in levels else max(levels)
            sampler.set_phase(f"pool_check@{level}")
            r = run_level(settings, graph, questions, out, "naive", level, level, args.workers, args.delay, server,
                          False, [f"models.llm_batch_size={settings.models.llm_batch_size}"])
            result["levels"].append(r)
            print(f"naive at {level} in flight, llm_batch_size={settings.models.llm_batch_size} as configured: "
                  f"efficiency {r['efficiency']:.2f}, the server saw at most {r['server_peak_in_flight']} at once",
                  flush=True)

    if args.token_questions > 0:
        sampler.set_phase("token_count")
        result["standin_tokens"] = standin_tokens(settings, graph, questions, out, methods,
                                                  min(args.token_questions, 100), Standin)
    if args.real_llm_questions > 0:
        sampler.set_phase("real_llm")
        result["real_llm"] = real_llm_tokens(settings, graph, questions, out, methods, args.real_llm_questions,
                                             args.real_llm_set)
    sampler.stop()
    result["cpu"] = sampler.cpu
    ray.shutdown()
    print_tables(result)
    (out / "bench_driver.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"\nfigures written to {out / 'bench_driver.json'}")
    return result


if __name__ == "__main__":
    main()
