"""Where a question's time goes on a driver worker: py-spy samples of a worker, and its path timed in this process."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any


# -- the worker sampled by py-spy ----------------------------------------------------------------------


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


# -- where the time goes, in this process -------------------------------------------------------------


class InProcessStandin:
    """The stand-in's answers without HTTP or delay (for timing the worker's own path)."""

    name = "standin-inprocess"

    def generate(self, requests: Any) -> list[Any]:
        from bench.standin_answers import answer_for, words
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
