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
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "musique"
PAPER_TOKENS_PER_QUESTION = 4436  # HGMem paper, NarrativeQA


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


def worker_pids() -> list[int]:
    """QuestionWorker actors under this process (this run's Ray, not someone else's)."""
    import psutil

    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if " ".join(proc.cmdline()).startswith("ray::QuestionWorker"):
                out.append(proc.pid)
        except psutil.Error:
            continue
    return out


def py_spy_record(pid: int, seconds: float, path: Path) -> subprocess.Popen | None:
    exe = Path(sys.executable).parent / "py-spy"
    if not exe.exists():
        return None
    return subprocess.Popen([str(exe), "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
                             "--rate", "100", "--format", "raw", "--output", str(path), "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


PARTS = (  # a sampled stack belongs to the part named by its innermost frame that names one
    ("query embedding", ("sentence_transformers/", "torch/", "transformers/", "models/embedder.py",
                         "models/batching.py")),
    ("HTML/JSON trace", ("hgmem/export.py", "json/encoder.py", "pathlib.py")),
    ("LLM client (HTTP)", ("urllib3/", "http/client.py", "httpx/", "httpcore/", "h11/", "llm/openai_backend.py",
                           "ssl.py", "socket.py", "selectors.py", "anyio/")),
    ("retrieval (search, rank, graph walks)", ("hgmem/retrieval.py", "graph/store.py", "graph/vector_index.py",
                                               "numpy/", "faiss/")),
    ("memory, prompts, validation", ("hgmem/memory.py", "hgmem/prompts.py", "hgmem/loop.py", "hgmem/methods.py",
                                     "llm/session.py", "llm/base.py", "pydantic")),
    ("Ray actor machinery", ("ray/",)),
)


def split_samples(path: Path) -> dict[str, Any]:
    """py-spy raw (collapsed) stacks -> share of active samples per part of the worker's work."""
    if not path.exists():
        return {}
    counts: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        part = ""
        for frame in reversed(stack.split(";")):  # py-spy writes the outermost frame first
            part = next((name for name, needles in PARTS if any(n in frame for n in needles)), "")
            if part:
                break
        part = part or ("other" if stack.strip() else "no Python frame (Ray's C++ threads, native code)")
        counts[part] += int(n)
        total += int(n)
    return {"samples": total, "shares": {k: v / total for k, v in counts.most_common()} if total else {}}


def run_level(settings: Any, graph: Path, questions: Path, out: Path, method: str, level: int, n: int,
              workers: int, delay: float, server: Any, spy: bool, extra: list[str]) -> dict[str, Any]:
    from pipelines.answer_queries import run_answers

    # llm_batch_size is the openai client's connection cap (see the docstring); ``extra`` may set it back.
    run_settings = _copy(settings, [f"hgmem.max_in_flight={level}", "models.llm_backend=openai",
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


# -- where the time goes, in this process -------------------------------------------------------------


class InProcessStandin:
    """The stand-in's answers without HTTP or delay (for timing the worker's own path)."""

    name = "standin-inprocess"

    def generate(self, requests: Any) -> list[Any]:
        from bench.standin_server import answer_for, words
        from memgraft.models.llm.base import Completion

        out = []
        for r in requests:
            _, value = answer_for(r.json_schema, r.messages)
            text = json.dumps(value)
            out.append(Completion(text, sum(words(m["content"]) for m in r.messages), words(text)))
        return out


def time_worker_path(settings: Any, graph: Path, questions: Path, methods: list[str], n: int,
                     server_cls: Any) -> dict[str, Any]:
    """Seconds per question on one thread: query embedding, HTML trace, LLM stand-in, the rest."""
    import memgraft.hgmem.methods as methods_mod
    from memgraft.graph.store import GraphStore
    from memgraft.hgmem.methods import answer_record
    from memgraft.models.embedder import load_embedder
    from memgraft.models.llm.base import ChatRequest
    from memgraft.models.llm.openai_backend import OpenAICompatibleLLM

    embedder = load_embedder(settings)
    timers: Counter[str] = Counter()
    calls: Counter[str] = Counter()

    def timed(key: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            calls[key] += 1
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timers[key] += time.perf_counter() - t
        return wrapper

    # bf16 on CPU builds kernels per new input shape: the first query of each token length is slow.
    # Pay that once here (one query per length), report it, and time the steady state after it.
    t = time.perf_counter()
    for n_words in range(1, 65):
        embedder.encode([" ".join(["word"] * n_words)])
    warm_up_s = time.perf_counter() - t
    embedder.encode = timed("query embedding", embedder.encode)  # type: ignore[method-assign]
    store = GraphStore.load(str(graph), embedder)
    original_export = methods_mod.to_html_steps
    methods_mod.to_html_steps = timed("HTML trace", original_export)
    llm = InProcessStandin()
    llm.generate = timed("stand-in answers (not on the worker)", llm.generate)  # type: ignore[method-assign]
    records = [json.loads(line) for line in questions.read_text().splitlines()[:n + 2]]
    out: dict[str, Any] = {"embedder_warm_up_s": warm_up_s, "embedder_dtype": settings.models.embedder_dtype}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for method in methods:
                getattr(store, "_query_cache", {}).clear()  # each method embeds its questions afresh
                for r in records[:2]:  # warm-up, on other questions than those timed
                    answer_record({**r, "id": r["id"] + "-warm", "question": r["question"] + " (warm-up)"},
                                  method, store, llm, settings, tmp)
                timers.clear()
                calls.clear()
                t = time.perf_counter()
                for r in records[2:]:
                    answer_record(r, method, store, llm, settings, tmp)  # fresh texts: no cached embeddings
                total = (time.perf_counter() - t) / n
                parts = {k: v / n for k, v in timers.items()}
                parts["rest (retrieval, memory, prompts)"] = total - sum(parts.values())
                out[method] = {"seconds_per_question": total, "parts": parts,
                               "calls_per_question": {k: v / n for k, v in calls.items()}}
    finally:
        methods_mod.to_html_steps = original_export
    with server_cls(0.0, process=True) as zero:  # one HTTP round trip, the stand-in answering at once
        client = OpenAICompatibleLLM(zero.base_url, "standin")
        req = ChatRequest([{"role": "user", "content": "Question: x\n\nAnswer"}],
                          json_schema={"properties": {"answer": {"type": "string"}}, "required": ["answer"]})
        client.generate([req])
        t = time.perf_counter()
        for _ in range(50):
            client.generate([req])
        out["http_round_trip_s"] = (time.perf_counter() - t) / 50
        client.close()
    for method in methods:  # on a worker: all but the stand-in's own answers, plus an HTTP round trip per call
        m = out[method]
        llm_calls = m["calls_per_question"].get("stand-in answers (not on the worker)", 0)
        m["worker_seconds_per_question"] = (m["seconds_per_question"] - m["parts"].get("stand-in answers (not on the worker)", 0)
                                            + llm_calls * out["http_round_trip_s"])
        m["ceiling_qps"] = 1 / m["worker_seconds_per_question"]
    return out


# -- tokens per question ---------------------------------------------------------------------------------


def _copy(settings: Any, overrides: list[str]) -> Any:
    from memgraft.config import Settings, apply_overrides

    return Settings.model_validate(apply_overrides(json.loads(settings.model_dump_json()), overrides))


def _token_rows(run_dir: Path, seconds: float) -> dict[str, Any]:
    rows = [json.loads(line) for line in (run_dir / "answers.jsonl").read_text().splitlines() if line.strip()]
    ok = [r for r in rows if not r.get("error")]
    mean = (lambda xs: statistics.mean(xs)) if ok else (lambda xs: None)
    return {
        "seconds": seconds, "answered": len(ok), "failed": len(rows) - len(ok),
        "errors": [r["error"] for r in rows if r.get("error")][:3],
        "prompt_tokens_per_question": mean([r["prompt_tokens"] for r in ok]),
        "completion_tokens_per_question": mean([r["completion_tokens"] for r in ok]),
        "tokens_per_question": mean([r["prompt_tokens"] + r["completion_tokens"] for r in ok]),
        "calls_per_question": mean([r["llm_calls"] for r in ok]),
        "answers": [r.get("answer") for r in ok][:5],
    }


def standin_tokens(settings: Any, graph: Path, questions: Path, out: Path, methods: list[str], n: int,
                   server_cls: Any) -> dict[str, Any]:
    """Real prompts (real retrieval and memory), the stand-in's answers, counted in the bundled LLM's tokens."""
    from memgraft.models.llm.transformers_backend import ensure_hf_folder
    from pipelines.answer_queries import run_answers

    folder = ensure_hf_folder(settings.models.llm, settings.cache_path)
    res: dict[str, Any] = {"tokenizer": Path(folder).name, "questions": n}
    with server_cls(0.0, process=True, tokenizer=str(folder)) as server:
        s = _copy(settings, ["hgmem.max_in_flight=16", "models.llm_batch_size=16", "models.llm_backend=openai",
                             f"models.llm_base_url={server.base_url}"])
        for method in methods:
            run_dir = out / f"tokens_{method}"
            t = time.perf_counter()
            run_answers(s, str(graph), str(questions), str(run_dir), method, limit=n)
            res[method] = _token_rows(run_dir, time.perf_counter() - t)
    return res


def real_llm_tokens(settings: Any, graph: Path, questions: Path, out: Path, methods: list[str], n: int,
                    overrides: list[str]) -> dict[str, Any]:
    """The real bundled LLM (the profile's backend, transformers by default), ``n`` questions batched together."""
    from pipelines.answer_queries import run_answers

    s = _copy(settings, [f"hgmem.max_in_flight={max(1, n)}", *overrides])
    res: dict[str, Any] = {"backend": s.models.llm_backend, "llm": s.models.llm, "questions": n, "overrides": overrides}
    for method in methods:
        run_dir = out / f"real_{method}"
        t = time.perf_counter()
        run_answers(s, str(graph), str(questions), str(run_dir), method, limit=n)
        res[method] = _token_rows(run_dir, time.perf_counter() - t)
    return res


# -- output ------------------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console(width=150)
    d = result["delay_s"]
    t = Table(title=f"run_answers against the stand-in (delay {d:g} s per call; {result['graph_counts']}); "
                    "ideal q/s = in flight / (calls per question x delay)")
    cols = ("method", "in flight", "workers", "questions", "calls/q", "ideal q/s", "measured q/s", "efficiency",
            "p50 latency (ideal)", "server peak in flight", "start-up s", "errors", "note")
    for c in cols:
        t.add_column(c, justify="left" if c in ("method", "note") else "right")
    for r in result["levels"]:
        note = "as configured: llm_batch_size=" + str(r["settings"]["llm_batch_size"]) if r["settings"]["extra"] else ""
        t.add_row(r["method"], str(r["in_flight"]), str(r["workers"]), str(r["questions"]),
                  f"{r['calls_per_question']:.1f}", f"{r['ideal_qps']:.2f}", f"{r['measured_qps']:.2f}",
                  f"[bold]{r['efficiency']:.2f}", f"{r['latency_p50_s']:.2f} ({r['latency_ideal_s']:.1f})",
                  str(r["server_peak_in_flight"]), f"{r['startup_s']:.1f}", str(r["errors"]), note)
    if result["levels"]:
        con.print(t)
    for r in result["levels"]:
        if r.get("first_error"):
            con.print(f"first error ({r['method']}, {r['in_flight']} in flight): {r['first_error']}")

    w = result.get("worker_path") or {}
    wt = Table(title="where a question's time goes on a worker, one thread, no delay, in this process "
                     "(the CPU-bound ceiling of one worker process = 1 / its seconds per question)")
    for c in ("method", "part", "ms per question", "share"):
        wt.add_column(c, justify="left" if c in ("method", "part") else "right")
    for m in result["methods"]:
        if m not in w:
            continue
        total = w[m]["seconds_per_question"]
        for part, s in w[m]["parts"].items():
            wt.add_row(m, part, f"{s * 1000:.1f}", f"{s / total:.2f}")
        wt.add_row(m, "total in this process", f"{total * 1000:.1f}", "1.00")
        wt.add_row(m, "[bold]on a worker: total - stand-in + calls x HTTP round trip",
                   f"[bold]{w[m]['worker_seconds_per_question'] * 1000:.1f}", f"ceiling {w[m]['ceiling_qps']:.0f} q/s")
        wt.add_section()
    if w:
        wt.add_row("", "one HTTP round trip to a zero-delay stand-in", f"{w['http_round_trip_s'] * 1000:.1f}", "")
        wt.add_row("", f"embedder warm-up, {w['embedder_dtype']}: one query per length 1-64 words (once per worker; "
                       "not in the rows above)", f"{w['embedder_warm_up_s'] * 1000:.0f}", "")
        con.print(wt)

    for r in result["levels"]:
        if r.get("py_spy", {}).get("shares"):
            st = Table(title=f"py-spy: the worker's active samples during {r['method']} at {r['in_flight']} in flight "
                             f"({r['py_spy']['samples']} samples, 100 Hz, 5 s, threads waiting on I/O not counted)")
            st.add_column("part")
            st.add_column("share", justify="right")
            for k, v in r["py_spy"]["shares"].items():
                st.add_row(k, f"{v:.2f}")
            con.print(st)

    tt = Table(title=f"tokens per question (prompt + completion) on MuSiQue; HGMem paper: "
                     f"{PAPER_TOKENS_PER_QUESTION:,} per NarrativeQA question")
    for c in ("method", "LLM answers / counted as", "questions", "calls/q", "prompt/q", "completion/q", "total/q",
              "vs paper"):
        tt.add_column(c, justify="left" if c in ("method", "LLM answers / counted as") else "right")

    def token_row(m: str, label: str, x: dict[str, Any]) -> None:
        if x["tokens_per_question"] is None:
            tt.add_row(m, label, "0", "", "", "", "failed", "; ".join(x["errors"])[:60])
            return
        tt.add_row(m, label, str(x["answered"]) + (f" (+{x['failed']} failed)" if x["failed"] else ""),
                   f"{x['calls_per_question']:.1f}", f"{x['prompt_tokens_per_question']:,.0f}",
                   f"{x['completion_tokens_per_question']:,.0f}", f"[bold]{x['tokens_per_question']:,.0f}",
                   f"{x['tokens_per_question'] / PAPER_TOKENS_PER_QUESTION:.2f}")

    st, real = result.get("standin_tokens") or {}, result.get("real_llm") or {}
    for m in result["methods"]:
        if m in st:
            token_row(m, f"stand-in / {st['tokenizer']} tokens", st[m])
        if m in real:
            extra = escape(f" [{' '.join(real['overrides'])}]") if real["overrides"] else ""
            token_row(m, f"{real['llm']} ({real['backend']}){extra} / its tokens", real[m])
        sr = [r for r in result["levels"] if r["method"] == m and not r["settings"]["extra"] and r["questions"]]
        if sr:
            tt.add_row(m, "stand-in / whitespace words (the sweep)", str(sum(r["questions"] for r in sr)),
                       f"{sr[0]['calls_per_question']:.1f}", "", "",
                       f"{statistics.mean(r['tokens_per_question'] for r in sr):,.0f}", "")
    con.print(tt)
    if real:
        con.print("real-LLM seconds: " + ", ".join(f"{m} {real[m]['seconds']:.0f} s" for m in result["methods"] if m in real))

    ct = Table(title="CPU by phase (cores busy on average; 'other' = processes outside this run: noise)")
    for c in ("phase", "seconds", "this run", "other processes"):
        ct.add_column(c, justify="left" if c == "phase" else "right")
    for phase, c in result["cpu"].items():
        ct.add_row(phase, f"{c['wall_s']:.1f}", f"{c['own_cpu_s'] / c['wall_s']:.2f}" if c["wall_s"] else "-",
                   f"{c['other_cores']:.2f}")
    con.print(ct)


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

    from bench.build_graphs import ProcessSampler
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
