"""The LLM-free graph build on MuSiQue: end to end on Ray against its bare stages, in one run.

    python bench/build_graphs.py --corpus ../shared/data/musique/musique_train_corpus.json \\
        --questions ../shared/data/musique/musique_train.json [--limit N] [--out DIR] [--set k=v ...]

1. The pipeline (``pipelines.build_graphs.run_build``) on a local Ray started
   beforehand (its start-up is reported apart), which it may stop once the rest runs
   in the driver, as a build that starts its own Ray does: wall seconds, chunks/s, tokens/s.
2. The bare stages on the same texts, in this process, without Ray, each alone,
   after a small warm-up, with the torch threads the pipeline's actors set
   (``--bare-threads`` to change):
   chunking; the spaCy extractor (``nlp.pipe`` plus its mention rules) over the
   chunks; ``SentenceTransformer.encode`` of the chunks, of the entity texts and
   of the relation texts the build embedded (distinct texts, as the build
   embeds them). Efficiency = sum of bare seconds / end-to-end seconds.
3. Peak memory: the driver's peak RSS (``getrusage``), and from sampling every
   process under this one (Ray's raylet, GCS and workers; RSS, so pages two
   processes share count twice) the peak total and the peak of the workers.
   The same sampling counts the CPU this run used per phase against what the
   rest of the machine used, so a figure taken under someone else's load shows it.
4. Recall@2/@5 of MuSiQue's supporting passages for dense chunk search and for
   entity-to-chunk graph retrieval over the graph just built.

The machine is noisy, which is why every figure comes from the same run, why
the CPU other processes use is reported beside each figure (``--wait-quiet``
waits for an idle machine first), and why the local Ray's workers run at the
bare stages' niceness (0; Ray's default 15 would let any other load on the
machine slow the pipeline far more than the bare stages).
Figures are printed and written to ``<out>/bench_build_graphs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_busy_cpu_s  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")

MB = 1024 * 1024
NOISE_LIMIT = 0.2  # cores other processes may use before a figure is flagged


# -- memory ------------------------------------------------------------------------------------


class ProcessSampler:
    """Per named phase: peak RSS of this process and of every process under it (Ray's), and
    CPU-seconds used by this tree against those used by the rest of the machine (the noise)."""

    SYSTEM = ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py", "runtime_env", "agent")

    def __init__(self, interval_s: float = 0.25):
        import psutil

        self._psutil = psutil
        self.interval_s = interval_s
        self.root = psutil.Process()
        self.phase = "start"
        self.peaks: dict[str, dict[str, float]] = {}
        self.cpu: dict[str, dict[str, float]] = {}  # per phase: wall, CPU-seconds of this tree and of the rest of the machine
        self._kind: dict[int, str] = {}
        self._cpu_seen: dict[int, float] = {}  # last CPU seconds seen per process of this tree (exited ones keep theirs)
        self._lock = threading.Lock()
        self._mark = self._cpu_mark()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def start(self) -> "ProcessSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.set_phase("end")

    def set_phase(self, name: str) -> None:
        """Close the current phase's CPU account (after a last sample) and start ``name``."""
        self.sample()
        with self._lock:
            mark = self._cpu_mark()
            wall, busy, own = (mark[i] - self._mark[i] for i in range(3))
            if self.phase != "start":
                self.cpu[self.phase] = {"wall_s": wall, "own_cpu_s": own, "machine_busy_cpu_s": busy,
                                        "other_cpu_s": max(0.0, busy - own),
                                        "other_cores": max(0.0, busy - own) / wall if wall else 0.0}
            self._mark = mark
            self.phase = name

    def _cpu_mark(self) -> tuple[float, float, float]:
        """(wall, busy CPU-seconds of the whole machine, CPU-seconds of this process tree so far)."""
        return time.perf_counter(), machine_busy_cpu_s(), sum(self._cpu_seen.values())
    def _classify(self, proc: Any) -> str:
        kind = self._kind.get(proc.pid)
        if kind:
            return kind
        try:
            cmd = " ".join(proc.cmdline())
        except (self._psutil.Error, OSError):
            return "system"
        if cmd.startswith("ray::") or "default_worker.py" in cmd:
            kind = "worker"
        elif any(s in cmd for s in self.SYSTEM) or proc.name() in ("raylet", "gcs_server"):
            kind = "system"
        else:
            return "system"  # not yet known (a worker starting up): ask again next time
        self._kind[proc.pid] = kind
        return kind

    def sample(self) -> None:
        driver = workers = system = biggest = 0.0
        try:
            driver = self.root.memory_info().rss
            children = self.root.children(recursive=True)
        except self._psutil.Error:
            return
        for proc in [self.root, *children]:
            try:
                cpu = proc.cpu_times()
                self._cpu_seen[proc.pid] = cpu.user + cpu.system
                if proc is self.root:
                    continue
                rss = proc.memory_info().rss
                kind = self._classify(proc)
            except self._psutil.Error:
                continue
            if kind == "worker":
                workers += rss
                biggest = max(biggest, rss)
            else:
                system += rss
        peak = self.peaks.setdefault(self.phase, {})  # a sample racing a phase change may land in either
        for key, value in (("total", driver + workers + system), ("driver", driver), ("workers", workers),
                           ("ray_system", system), ("largest_worker", biggest)):
            peak[key] = max(peak.get(key, 0.0), value / MB)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()




def wait_quiet(max_wait_s: float, threshold: float = 0.15, quiet_for: int = 3, window_s: float = 2.0) -> float:
    """Wait (up to ``max_wait_s``) until the machine has kept under ``threshold`` cores busy
    for ``quiet_for`` windows in a row; return the seconds waited."""
    t0, streak = time.perf_counter(), 0
    while streak < quiet_for and time.perf_counter() - t0 < max_wait_s:
        before = machine_busy_cpu_s()
        time.sleep(window_s)
        streak = streak + 1 if (machine_busy_cpu_s() - before) / window_s < threshold else 0
    return time.perf_counter() - t0


def driver_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- helpers -----------------------------------------------------------------------------------


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


@contextmanager
def timed(into: dict[str, float], key: str, noise: dict[str, float] | None = None,
          cpu: dict[str, float] | None = None) -> Iterator[None]:
    """Wall seconds of the block into ``into[key]``; with ``noise``, also the cores the rest of the
    machine kept busy meanwhile (this process's CPU taken out); with ``cpu``, this process's CPU-seconds."""
    t, busy, own = time.perf_counter(), machine_busy_cpu_s(), own_cpu_s()
    yield
    wall = time.perf_counter() - t
    into[key] = wall
    used = own_cpu_s() - own
    if noise is not None:
        noise[key] = max(0.0, (machine_busy_cpu_s() - busy) - used) / wall if wall else 0.0
    if cpu is not None:
        cpu[key] = used


def limited_corpus(corpus: Path, limit: int | None, out: Path) -> Path:
    """The first ``limit`` passages as their own file (same order, so the same doc_ids)."""
    if not limit:
        return corpus
    records = json.loads(corpus.read_text(encoding="utf-8"))[:limit]
    path = out / f"corpus_first_{limit}.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def graph_texts(graph_dir: Path) -> tuple[list[str], list[str]]:
    """The distinct entity texts and relation texts the build embedded (a text in both counts once, as an entity)."""
    from memgraft.graph.folder import GraphFolder
    from memgraft.graph.merge import entity_text, relation_text

    folder = GraphFolder(str(graph_dir))
    ents = folder.read_table("entities", ["entity_id", "name", "description"])
    rels = folder.read_table("relations", ["source_id", "target_id", "description"])
    names = dict(zip(ents.column("entity_id").to_pylist(), ents.column("name").to_pylist()))
    ent_texts = list(dict.fromkeys(
        entity_text(n, d) for n, d in zip(ents.column("name").to_pylist(), ents.column("description").to_pylist())))
    seen = set(ent_texts)
    rel_texts = list(dict.fromkeys(
        t for t in (relation_text(names[s], names[g], d) for s, g, d in zip(
            rels.column("source_id").to_pylist(), rels.column("target_id").to_pylist(), rels.column("description").to_pylist()))
        if t not in seen))
    return ent_texts, rel_texts


# -- the three measurements --------------------------------------------------------------------


def run_pipeline(settings: Any, corpus: Path, graph_dir: Path, ray_stats: bool) -> dict[str, Any]:
    import ray

    import pipelines.build_graphs as bg

    stats: list[str] = []
    # a diagnostic: keep the Ray Data stats of each dataset the build runs (through _tables, or, chunks embedded
    # in the driver, through embed_stream)
    originals = {"_tables": bg._tables, "embed_stream": bg.embed_stream} if ray_stats else {}

    def with_stats(run: Any) -> Any:
        def wrapped(ds: Any, *args: Any) -> Any:
            table = run(ds, *args)
            stats.append(ds.stats())
            return table
        return wrapped

    for name, run in originals.items():
        setattr(bg, name, with_stats(run))
    t = time.perf_counter()
    try:
        cpus = ray.cluster_resources().get("CPU")
        report = bg.run_build(settings, str(corpus), str(graph_dir), release_ray=True)  # as when the build starts Ray
    finally:
        for name, run in originals.items():
            setattr(bg, name, run)
    seconds = time.perf_counter() - t
    phases = {k: v for k, v in report.timings.items() if k != "total"}
    phases["unaccounted"] = max(0.0, seconds - sum(phases.values()))  # Ray's start of work, the plan
    return {
        "seconds": seconds, "docs": report.processed_docs, "chunks": report.new_chunks, "tokens": report.new_tokens,
        "dtypes": report.dtypes,
        "counts": report.counts, "rejected": len(report.rejected), "extract_failures": len(report.extract_failures),
        "phases": phases, "ray_stats": stats, "cluster_cpus": cpus,
    }


def run_bare(settings: Any, corpus: Path, graph_dir: Path, threads: int | None = None) -> dict[str, Any]:
    from memgraft.graph.extractors import make_extractor
    from memgraft.models.embedder import load_embedder, load_tokenizer
    from memgraft.models.threads import set_torch_threads
    from memgraft.text.chunking import chunk_batch
    from memgraft.text.documents import list_input_files, read_files

    wanted = settings.models.torch_threads if threads is None else threads  # by default as every actor does
    threads = set_torch_threads(wanted)
    loads: dict[str, float] = {}
    secs: dict[str, float] = {}
    noise: dict[str, float] = {}  # cores other processes used during each stage
    cpu: dict[str, float] = {}  # CPU-seconds each stage used
    root, files = list_input_files(corpus)
    docs, _ = read_files(files, root, settings.pipeline.max_document_mb)

    with timed(loads, "tokenizer"):
        tokenizer = load_tokenizer(settings.models.embedder)
    chunk_batch(tokenizer, {"doc_id": [d.doc_id for d in docs[:8]], "text": [d.text for d in docs[:8]]},
                settings.chunking.size, settings.chunking.overlap)  # warm-up
    with timed(secs, "chunking", noise, cpu):
        chunks = chunk_batch(tokenizer, {"doc_id": [d.doc_id for d in docs], "text": [d.text for d in docs]},
                             settings.chunking.size, settings.chunking.overlap)
    texts = chunks["text"]

    with timed(loads, "spacy"):
        extractor = make_extractor(settings)
    extractor.extract(texts[:16])  # warm-up
    with timed(secs, "spacy_extract", noise, cpu):
        extractions = extractor.extract(texts)

    with timed(loads, "embedder"):
        embedder = load_embedder(settings)
    set_torch_threads(wanted)  # the loader set the settings' count
    embedder.encode(texts[:16])  # warm-up
    with timed(secs, "embed_chunks", noise, cpu):
        embedder.encode(texts)
    ent_texts, rel_texts = graph_texts(graph_dir)
    with timed(secs, "embed_entities", noise, cpu):
        embedder.encode(ent_texts)
    with timed(secs, "embed_relations", noise, cpu):
        embedder.encode(rel_texts)

    items = {"chunking": len(docs), "spacy_extract": len(texts), "embed_chunks": len(texts),
             "embed_entities": len(ent_texts), "embed_relations": len(rel_texts)}
    units = {"chunking": "docs", "spacy_extract": "chunks", "embed_chunks": "chunks",
             "embed_entities": "texts", "embed_relations": "texts"}
    return {
        "seconds": secs, "cpu_s": cpu, "other_cores": noise, "items": items, "units": units, "loads_s": loads, "torch_threads": threads,
        "chunks": len(texts), "chunk_ids": chunks["chunk_id"], "tokens": int(sum(chunks["n_tokens"])),
        "mentions": sum(len(e.entities) for e in extractions),
        "text_chars": {"entities": sum(map(len, ent_texts)), "relations": sum(map(len, rel_texts))},
        "embedder": embedder, "dtype": str(getattr(embedder, "dtype", "unknown")),
    }


def run_recall(settings: Any, embedder: Any, graph_dir: Path, questions_path: Path, corpus: Path,
               ks: tuple[int, ...]) -> dict[str, Any]:
    from memgraft.eval.musique import PassageIds, evaluate_retrieval, load_questions
    from memgraft.graph.folder import GraphFolder
    from memgraft.graph.store import GraphStore

    questions = load_questions(questions_path)
    ids = PassageIds.from_corpus(corpus)
    store = GraphStore.load(str(graph_dir), embedder)
    in_graph = set(GraphFolder(str(graph_dir)).read_table("chunks", ["doc_id"]).column("doc_id").to_pylist())
    gold = [ids.gold(q) for q in questions]
    vecs = embedder.encode([q.question for q in questions])
    out = evaluate_retrieval(store, questions, ids, ks=ks, top_entities=settings.hgmem.top_entities, query_vectors=vecs)
    return {
        "questions": len(questions), "gold_passages": sum(map(len, gold)),
        "gold_in_graph": sum(d in in_graph for g in gold for d in g), "top_entities": settings.hgmem.top_entities,
        "retrievers": out,
    }


# -- output -------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=130)
    p, b, m, r = result["pipeline"], result["bare"], result["memory"], result["recall"]
    e2e = p["seconds"]

    t = Table(title=f"graph build on {result['corpus_name']}: {p['docs']} docs, {p['chunks']} chunks, "
                    f"{p['tokens']:,} tokens; {p['counts']['entities']:,} entities, {p['counts']['relations']:,} relations")
    for col in ("stage", "items", "seconds", "rate", "share of end-to-end", "noise"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    t.add_row("[bold]pipeline end to end (Ray)", f"{p['chunks']} chunks", f"{e2e:.1f}",
              f"{p['chunks'] / e2e:.1f} chunks/s, {p['tokens'] / e2e:,.0f} tok/s", "1.00",
              f"{result['cpu']['pipeline']['other_cores']:.2f}")
    for k, v in p["phases"].items():
        t.add_row(f"  pipeline: {k}", "", f"{v:.1f}", "", f"{v / e2e:.2f}", "")
    t.add_section()
    for k, v in b["seconds"].items():
        n = b["items"][k]
        t.add_row(f"bare: {k}", f"{n} {b['units'][k]}", f"{v:.1f}", f"{n / v:.1f} {b['units'][k]}/s", f"{v / e2e:.2f}",
                  f"{b['other_cores'][k]:.2f}")
    t.add_row("[bold]bare: sum", "", f"{result['bare_sum_s']:.1f}",
              f"{p['chunks'] / result['bare_sum_s']:.1f} chunks/s, {p['tokens'] / result['bare_sum_s']:,.0f} tok/s",
              f"{result['bare_sum_s'] / e2e:.2f}", "")
    con.print(t)
    con.print("noise: cores that processes outside this run kept busy meanwhile (of "
              f"{result['pipeline']['cluster_cpus']:g}); figures taken under noise are not comparable")
    if result["noisy"]:
        con.print(f"[bold red]warning: other processes used over {NOISE_LIMIT} cores during: {', '.join(result['noisy'])}; "
                  "rerun on a quiet machine (--wait-quiet) before trusting the ratios")

    eff = result["efficiency"]
    et = Table(title="efficiency: bare seconds / pipeline seconds (1.00 = Ray costs nothing)")
    for col in ("ratio", "value"):
        et.add_column(col, justify="left" if col == "ratio" else "right")
    et.add_row("[bold]bare sum / end to end", f"[bold]{eff['overall']:.2f}")
    et.add_row("bare chunking+spaCy+embed chunks / pipeline chunk_extract_embed", f"{eff['chunk_extract_embed']:.2f}")
    et.add_row("bare embed entities+relations / pipeline embed_graph", f"{eff['embed_graph']:.2f}")
    et.add_row("bare sum / (end to end - the driver's read, merge, index, write)", f"{eff['ray_part']:.2f}")
    et.add_row(f"CPU-seconds: bare {sum(b['cpu_s'].values()):.0f} / pipeline's processes "
               f"{result['cpu']['pipeline']['own_cpu_s']:.0f}", f"{eff['cpu']:.2f}")
    con.print(et)

    loads = ", ".join(f"{k} {v:.1f} s" for k, v in b["loads_s"].items())
    con.print(f"Ray start-up (not in end to end): {result['ray_init_s']:.1f} s on {p['cluster_cpus']:g} CPUs; "
              f"bare model loads (not in bare sum): {loads}; torch threads in bare stages: {b['torch_threads']}; "
              f"settings: embedder {result['settings']['embedder_dtype']} (ran in: pipeline "
              + ", ".join(f"{k} {v}" for k, v in p.get("dtypes", {}).items()) + f"; bare {b.get('dtype')}), "
              f"actors extract/embed "
              f"{result['settings']['extract_actors']}/{result['settings']['embed_actors']}; bare chunks identical "
              f"to the pipeline's: {'yes' if result['same_chunks'] else 'NO'}")

    mt = Table(title="peak memory (MiB, RSS)")
    for col in ("phase", "driver+Ray total", "driver", "Ray workers (sum)", "largest worker", "Ray system"):
        mt.add_column(col, justify="left" if col == "phase" else "right")
    for phase, peak in m["sampled"].items():
        mt.add_row(phase, *(f"{peak.get(k, 0):,.0f}" for k in ("total", "driver", "workers", "largest_worker", "ray_system")))
    con.print(mt)
    con.print(f"driver peak RSS over the whole run (getrusage): {m['driver_peak_mb']:,.0f} MiB; sampled every "
              f"{m['interval_s']} s; peaks of each column are taken apart, so they need not add up")

    ct = Table(title="CPU by phase (cores busy on average; 'other' = processes outside this run: noise)")
    for col in ("phase", "seconds", "this run", "other processes"):
        ct.add_column(col, justify="left" if col == "phase" else "right")
    for phase, c in result["cpu"].items():
        ct.add_row(phase, f"{c['wall_s']:.1f}", f"{c['own_cpu_s'] / c['wall_s']:.2f}" if c["wall_s"] else "-",
                   f"{c['other_cores']:.2f}")
    con.print(ct)

    rt = Table(title=f"MuSiQue supporting-passage recall, {r['questions']} questions, {r['gold_passages']} gold passages "
                     f"({r['gold_in_graph']} in the graph)")
    ks = [k for k in next(iter(r["retrievers"].values())) if k.startswith("recall@")]
    rt.add_column("retriever")
    for k in ks:
        rt.add_column(k, justify="right")
    rt.add_column("passages returned (mean)", justify="right")
    labels = {"dense": "dense chunks (NaiveRAG)", "graph": f"graph: top-{r['top_entities']} entities -> their chunks"}
    for name, scores in r["retrievers"].items():
        rt.add_row(labels.get(name, name), *(f"{scores[k]:.3f}" for k in ks), f"{scores['mean_passages']:.1f}")
    dense, graph = r["retrievers"]["dense"], r["retrievers"]["graph"]
    rt.add_row("graph / dense", *(f"{graph[k] / dense[k]:.2f}" if dense[k] else "-" for k in ks), "")
    con.print(rt)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="musique_train_corpus.json")
    parser.add_argument("--questions", type=Path, required=True, help="musique_train.json")
    parser.add_argument("--out", type=Path, default=None, help="where the graph and the JSON go (default: a new temp dir)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N passages")
    parser.add_argument("--profile", default="local")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    parser.add_argument("--ray-address", default="local", help="'local' (default) starts a fresh Ray; 'auto' joins a running one")
    parser.add_argument("--bare-threads", type=int, default=None,
                        help="torch threads for the bare stages (default: models.torch_threads, as the actors; 0 = all CPUs)")
    parser.add_argument("--worker-niceness", type=int, default=0,
                        help="niceness of the local Ray's workers (Ray's default is 15; 0 puts them level with the "
                             "bare stages, which run in this process, so other load slows both alike)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="first wait up to this long for the rest of the machine to go idle (shared machines)")
    parser.add_argument("--ray-stats", action="store_true", help="also print Ray Data's stats of each dataset the build runs")
    args = parser.parse_args(argv)

    from memgraft.config import load_settings

    settings = load_settings(args.profile, args.overrides)
    out = args.out or Path(tempfile.mkdtemp(prefix="memgraft-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    graph_dir = out / "graph"
    corpus = limited_corpus(args.corpus, args.limit, out)

    if args.wait_quiet:
        waited = wait_quiet(args.wait_quiet)
        print(f"waited {waited:.0f} s for a quiet machine", file=sys.stderr)
    sampler = ProcessSampler().start()
    sampler.set_phase("ray_init")
    import ray

    if args.ray_address == "local":
        os.environ["RAY_worker_niceness"] = str(args.worker_niceness)
    t = time.perf_counter()
    # A Ray of its own (address="local"), not a cluster some other job left running.
    ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=True, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    ray_init_s = time.perf_counter() - t

    sampler.set_phase("pipeline")
    pipeline = run_pipeline(settings, corpus, graph_dir, args.ray_stats)
    sampler.set_phase("ray_shutdown")
    ray.shutdown()  # the bare stages run alone

    sampler.set_phase("bare")
    bare = run_bare(settings, corpus, graph_dir, args.bare_threads)
    sampler.set_phase("recall")
    embedder = bare.pop("embedder")
    recall = run_recall(settings, embedder, graph_dir, args.questions, args.corpus, (2, 5))  # ids from the whole file
    sampler.stop()

    chunk_ids = bare.pop("chunk_ids")
    secs = bare["seconds"]
    bare_sum = sum(secs.values())
    phases = pipeline["phases"]
    driver_side = sum(phases.get(k, 0.0) for k in ("read", "merge", "index", "write"))
    result: dict[str, Any] = {
        "corpus": str(args.corpus), "corpus_name": args.corpus.name, "limit": args.limit, "out": str(out),
        "settings": {"profile": settings.profile, "overrides": args.overrides,
                     "embedder_dtype": settings.models.embedder_dtype, "torch_threads": settings.models.torch_threads,
                     **settings.pipeline.model_dump()},
        "ray_init_s": ray_init_s,
        "pipeline": pipeline,
        "bare": bare,
        "bare_sum_s": bare_sum,
        "efficiency": {
            "overall": bare_sum / pipeline["seconds"],
            "chunk_extract_embed": (secs["chunking"] + secs["spacy_extract"] + secs["embed_chunks"]) / phases["chunk_extract_embed"],
            "embed_graph": (secs["embed_entities"] + secs["embed_relations"]) / phases["embed_graph"],
            "ray_part": bare_sum / max(1e-9, pipeline["seconds"] - driver_side),
            # less sensitive to other processes than wall time: the work done, not the time waited
            "cpu": sum(bare["cpu_s"].values()) / max(1e-9, sampler.cpu["pipeline"]["own_cpu_s"]),
        },
        "rates": {"pipeline_chunks_per_s": pipeline["chunks"] / pipeline["seconds"],
                  "pipeline_tokens_per_s": pipeline["tokens"] / pipeline["seconds"],
                  "bare_chunks_per_s": pipeline["chunks"] / bare_sum, "bare_tokens_per_s": pipeline["tokens"] / bare_sum},
        "memory": {"driver_peak_mb": driver_peak_mb(), "sampled": sampler.peaks, "interval_s": sampler.interval_s,
                   "what": "RSS; 'total' is the driver plus every process under it (Ray's GCS, raylet, workers); "
                           "a page shared by several processes counts in each"},
        "cpu": sampler.cpu,
        "recall": recall,
    }
    result["noisy"] = [f"bare {k}" for k, v in bare["other_cores"].items() if v > NOISE_LIMIT]
    if sampler.cpu["pipeline"]["other_cores"] > NOISE_LIMIT:
        result["noisy"].insert(0, "pipeline")
    from memgraft.graph.folder import GraphFolder

    built = GraphFolder(str(graph_dir)).read_table("chunks", ["chunk_id"]).column("chunk_id").to_pylist()
    result["same_chunks"] = set(chunk_ids) == set(built)  # the bare stages worked on the pipeline's very chunks
    if not result["same_chunks"]:
        print("warning: the bare chunking did not reproduce the pipeline's chunks", file=sys.stderr)
    print_tables(result)
    for i, s in enumerate(pipeline["ray_stats"]):
        print(f"\n--- Ray Data stats, dataset {i + 1} of {len(pipeline['ray_stats'])} ---\n{s}")
    (out / "bench_build_graphs.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"\nfigures written to {out / 'bench_build_graphs.json'}")
    return result


if __name__ == "__main__":
    main()
