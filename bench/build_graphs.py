"""The LLM-free graph build on MuSiQue: end to end on Ray against its bare stages, in one run.

    python bench/build_graphs.py --corpus ../shared/data/musique/musique_train_corpus.json \\
        --questions ../shared/data/musique/musique_train.json [--limit N] [--out DIR] [--set k=v ...] [--recall-only]

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
   entity-to-chunk graph retrieval over the graph just built (with ``--limit``, over
   the questions whose passages the slice holds), and the graph's entity counts.
   ``--recall-only`` skips 2 and 3: the figures that compare extraction settings.

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
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.build_graphs_tables import print_recall, print_tables  # noqa: E402
from bench.sampling import NOISE_LIMIT, ProcessSampler, driver_peak_mb, timed, wait_quiet  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")


# -- helpers -----------------------------------------------------------------------------------


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

    asked = load_questions(questions_path)
    ids = PassageIds.from_corpus(corpus)
    store = GraphStore.load(str(graph_dir), embedder)
    in_graph = set(GraphFolder(str(graph_dir)).read_table("chunks", ["doc_id"]).column("doc_id").to_pylist())
    # a slice (--limit) scores only the questions it holds every supporting passage of: the others' recall
    # would measure the slice, not the retriever (the whole corpus holds them all)
    pairs = [(q, g) for q, g in ((q, ids.gold(q)) for q in asked) if all(d in in_graph for d in g)]
    questions, gold = [q for q, _ in pairs], [g for _, g in pairs]
    vecs = embedder.encode([q.question for q in questions])
    out = evaluate_retrieval(store, questions, ids, ks=ks, top_entities=settings.hgmem.top_entities, query_vectors=vecs)
    return {
        "questions": len(questions), "questions_left_out": len(asked) - len(questions), "gold_passages": sum(map(len, gold)),
        "gold_in_graph": sum(d in in_graph for g in gold for d in g), "top_entities": settings.hgmem.top_entities,
        "retrievers": out, "entities": entity_counts(graph_dir),
        "noun_chunk_filter": settings.extraction.noun_chunk_filter if settings.extraction.noun_chunks else "no noun chunks",
    }


def entity_counts(graph_dir: Path) -> dict[str, int]:
    """The graph's entities: all, named (a spaCy entity type), concepts (noun chunks, and the entity types
    mapped to concept), and the concepts that are one lower-case word ("behalf", "time")."""
    from memgraft.graph.folder import GraphFolder

    ents = GraphFolder(str(graph_dir)).read_table("entities", ["name", "type"])
    names, types = ents.column("name").to_pylist(), ents.column("type").to_pylist()
    concepts = [n for n, t in zip(names, types) if t == "concept"]
    return {"all": len(names), "named": len(names) - len(concepts), "concepts": len(concepts),
            "one_lower_case_word_concepts": sum(len(n.split()) == 1 and n.islower() for n in concepts)}


def recall_only(settings: Any, args: Any, graph_dir: Path, out: Path, pipeline: dict[str, Any],
                sampler: ProcessSampler) -> dict[str, Any]:
    """--recall-only: the graph's recall and entity counts, without the bare stages (half the run's time)."""
    from memgraft.models.embedder import load_embedder

    sampler.set_phase("recall")
    recall = run_recall(settings, load_embedder(settings), graph_dir, args.questions, args.corpus, (2, 5))
    sampler.stop()
    pipeline.pop("ray_stats", None)
    result = {"corpus": str(args.corpus), "corpus_name": args.corpus.name, "limit": args.limit,
              "overrides": args.overrides, "pipeline": pipeline, "recall": recall}
    print_recall(result)
    (out / "bench_build_graphs.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"\nfigures written to {out / 'bench_build_graphs.json'}")
    return result


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
    parser.add_argument("--recall-only", action="store_true",
                        help="build, then only recall and entity counts: no bare stages, no efficiency ratios "
                             "(to compare extraction settings, e.g. --set extraction.noun_chunk_filter=..., on busy cores)")
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

    if args.recall_only:
        return recall_only(settings, args, graph_dir, out, pipeline, sampler)
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
