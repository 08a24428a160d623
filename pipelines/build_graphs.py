"""Documents -> graph folder, on Ray Data.

    python pipelines/build_graphs.py --input PATH --output DIR [--append] [--delete DOC_ID ...]
    ray job submit --working-dir . -- python pipelines/build_graphs.py --input PATH --output DIR

read (tasks) -> chunk (tasks) -> extract (actor pool) -> embed chunks (actor pool; the local
profile: the driver, as blocks stream out, pipelines/driver_embed.py) -> merge (driver, polars)
-> embed new entity/relation texts (actor pool; the driver below pipeline.driver_embed_max_texts)
-> FAISS indexes -> Parquet tables, vectors, indexes and manifest.json.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pyarrow as pa
import ray
import typer

from memgraft.config import Settings, load_settings
from memgraft.graph import build as graph_build
from memgraft.graph import vector_index
from memgraft.graph.extraction import Extractor
from memgraft.graph.folder import GraphFolder, GraphFolderError
from memgraft.models.threads import available_cpus
from memgraft.progress import Progress
from memgraft.text.documents import list_input_files
from pipelines.build_report import BuildReport, manifest, print_summary
from pipelines.driver_embed import driver_embedder, embed_stream
from pipelines.runtime import (PipelineFitError, actor_fit_problem, configure_output, gpu_actors, init_ray,
                               ray_data_draws_bars, refuse_or_warn)
from pipelines.stages import (
    EmbedStage, ExtractStage, chunk_docs, docs_to_process, embedding_matrix, read_file_rows, split_rows,
)

log = logging.getLogger("memgraft.build_graphs")


def _tables(ds: ray.data.Dataset, progress: Progress, count: Callable[[pa.Table], int] | None = None) -> pa.Table:
    """Run ``ds``, block by block as they finish: ``progress`` advances by ``count`` (rows) per block."""
    tables = []
    with progress:
        for block in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            if block.num_rows:
                tables.append(block)
                progress.advance(count(block) if count else block.num_rows)
    return pa.concat_tables(tables, promote_options="default") if tables else pa.table({})


def _distinct(column: str) -> Callable[[pa.Table], int]:
    """A block counter: how many values of ``column`` it holds that no earlier block held."""
    seen: set[str] = set()

    def count(block: pa.Table) -> int:
        before = len(seen)
        seen.update(block.column(column).to_pylist())
        return len(seen) - before
    return count


def _stage_progress(description: str, total: int | None, unit: str) -> Progress:
    """A Ray Data stage's line: quiet where Ray Data draws its own bars (a terminal)."""
    return Progress(description, total, unit, enabled=not ray_data_draws_bars(), bar=False)


def _actor_args(settings: Settings, size: int) -> dict[str, Any]:
    # Retries are Ray Data's: an actor that dies is restarted and its tasks run again.
    p = settings.pipeline
    return {"compute": ray.data.ActorPoolStrategy(size=size), "num_cpus": p.actor_cpus, "batch_format": "pyarrow"}


def _embed_dim(settings: Settings, processed: pa.Table | None) -> int:
    """The embedding width: read off the chunk vectors the actors just wrote; only a run that embedded
    no chunk asks a task, which loads the model for it (5 s of the 2-core MuSiQue build, when every run asked)."""
    if processed is not None and "embedding" in processed.column_names:
        kind = processed.schema.field("embedding").type
        if pa.types.is_fixed_size_list(kind):
            return int(kind.list_size)

    @ray.remote(num_cpus=0)
    def dim() -> int:
        from memgraft.models.embedder import load_embedder

        return load_embedder(settings).dim
    return ray.get(dim.remote())


def read_stage(settings: Settings, input_path: str) -> pa.Table:
    root, files = list_input_files(input_path)
    items = [{"path": str(f), "root": str(root)} for f in files]
    if not items:
        return pa.table({c: pa.array([], pa.string()) for c in ("kind", "doc_id", "text", "content_hash", "source", "title", "reason")})
    blocks = settings.pipeline.read_tasks or min(len(items), available_cpus() * 2)
    ds = ray.data.from_items(items, override_num_blocks=blocks).flat_map(
        read_file_rows, fn_kwargs={"max_mb": settings.pipeline.max_document_mb}, num_cpus=settings.pipeline.task_cpus)
    return _tables(ds, _stage_progress("read", None, "documents"))


def _dedupe(read: pa.Table) -> tuple[dict[str, dict[str, str]], list[dict[str, str]]]:
    docs: dict[str, dict[str, str]] = {}
    rejected: list[dict[str, str]] = []
    for row in read.select(["kind", "doc_id", "content_hash", "source", "title", "reason"]).to_pylist():
        if row["kind"] != "doc":
            rejected.append({"source": row["source"], "doc_id": row["doc_id"], "reason": row["reason"]})
        elif row["doc_id"] in docs:
            rejected.append({"source": row["source"], "doc_id": row["doc_id"],
                             "reason": f"duplicate doc_id (first in {docs[row['doc_id']]['source']})"})
        else:
            docs[row["doc_id"]] = row
    for r in rejected:
        log.warning("rejected %s%s: %s", r["source"], f" [{r['doc_id']}]" if r["doc_id"] else "", r["reason"])
    return docs, rejected


def _vllm_extraction(settings: Settings) -> bool:
    """Extraction by Ray Data's vLLM processor, which sizes its own actors, not by the ExtractStage pool."""
    return settings.extraction.method == "llm" and settings.models.llm_backend == "vllm"


def process_stage(settings: Settings, read: pa.Table, doc_ids: list[str],
                  extractor_factory: Callable[[Settings], Extractor] | None) -> pa.Table:
    """chunk -> extract -> embed chunks, streaming through Ray Data."""
    p = settings.pipeline
    docs = docs_to_process(read, doc_ids)
    ds = (
        ray.data.from_arrow(split_rows(docs, available_cpus() * 4))
        .map_batches(chunk_docs, batch_size=p.chunk_batch_size,
                     fn_kwargs={"model": settings.models.embedder, "size": settings.chunking.size,
                                "overlap": settings.chunking.overlap}, num_cpus=p.task_cpus)
    )
    if _vllm_extraction(settings):
        from pipelines.llm_extract_processor import build_llm_extract_processor

        ds = build_llm_extract_processor(settings)(ds)
    else:
        ds = ds.map_batches(ExtractStage, batch_size=p.extract_batch_size,
                            fn_constructor_kwargs={"settings": settings, "factory": extractor_factory},
                            **_actor_args(settings, p.extract_actors))
    progress = _stage_progress("chunk, extract, embed chunks", len(doc_ids), "documents")
    if p.embed_chunks_in_driver:  # the core the extractor leaves, and one model load for the build
        return embed_stream(ds, settings, progress, _distinct("doc_id"))
    ds = ds.map_batches(EmbedStage, batch_size=p.embed_batch_size, fn_constructor_kwargs={"settings": settings},
                        **_actor_args(settings, p.embed_actors))
    return _tables(ds, progress, _distinct("doc_id"))


def embed_texts(settings: Settings, texts: list[str], dim: int, dtypes: dict[str, str] | None = None,
                before_driver: Callable[[], None] | None = None) -> np.ndarray:
    """Embed in the driver (few texts) or on an actor pool; each distinct text is embedded once.
    ``dtypes`` gets the dtype the model ran in, under ``embed_graph``; ``before_driver`` runs first when
    the work is the driver's (no Ray needed from there on)."""
    if not texts:
        if before_driver is not None:
            before_driver()
        return np.zeros((0, dim), np.float32)
    # By a dict, not np.unique: that made a fixed-width unicode array as wide as the longest
    # text and sorted it, 2.5 s for MuSiQue's 100k entity and relation texts (this: 0.03 s).
    unique = list(dict.fromkeys(texts))
    position = {t: i for i, t in enumerate(unique)}
    inverse = np.fromiter((position[t] for t in texts), np.int64, len(texts))
    # Sorted by length, each batch pads to texts of about its own length (a batch is
    # padded to its longest text; unsorted, that nearly doubles the encoder's work).
    by_length = np.argsort([len(t) for t in unique], kind="stable")
    vecs = np.empty((len(unique), dim), np.float32)
    vecs[by_length] = _embed_unique(settings, [unique[i] for i in by_length], dim, dtypes if dtypes is not None else {},
                                    before_driver)
    return vecs[inverse]


def _embed_unique(settings: Settings, texts: list[str], dim: int, dtypes: dict[str, str],
                  before_driver: Callable[[], None] | None) -> np.ndarray:
    p = settings.pipeline
    if len(texts) <= p.driver_embed_max_texts:  # small graph: no second actor pool to start
        if before_driver is not None:
            before_driver()
        embedder, step = driver_embedder(settings), max(1, p.embed_batch_size)
        dtypes["embed_graph"] = f"{getattr(embedder, 'dtype', 'unknown')} (driver)"
        vecs = np.empty((len(texts), dim), np.float32)
        with Progress("embed entities and relations", len(texts), "texts") as bar:
            for i in range(0, len(texts), step):
                vecs[i:i + step] = np.asarray(embedder.encode(texts[i:i + step]), np.float32).reshape(-1, dim)
                bar.advance(len(texts[i:i + step]))
        return vecs
    blocks = max(1, min(len(texts) // p.embed_batch_size + 1, available_cpus() * 4))
    ds = ray.data.from_arrow(split_rows(pa.table({"row": np.arange(len(texts)), "text": texts}), blocks))
    ds = ds.map_batches(EmbedStage, batch_size=p.embed_batch_size, fn_constructor_kwargs={"settings": settings},
                        **_actor_args(settings, p.embed_actors))
    out = _tables(ds, _stage_progress("embed entities and relations", len(texts), "texts"))
    dtypes["embed_graph"] = f"{stage_dtypes(out)} (actors)"
    order = np.argsort(out.column("row").to_numpy())
    return embedding_matrix(out, dim)[order]


def run_build(
    settings: Settings,
    input_path: str | None,
    output: str,
    *,
    append: bool = False,
    deletes: list[str] | None = None,
    extractor_factory: Callable[[Settings], Extractor] | None = None,
    release_ray: bool | None = None,
) -> BuildReport:
    """Build (or incrementally update) the graph folder at ``output``. ``release_ray``: stop Ray once the rest
    of the build runs in the driver (None: when this build started it)."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    deletes = list(deletes or [])
    if input_path:
        list_input_files(input_path)  # a missing input is said at once, before Ray starts
    folder = GraphFolder(output)
    incremental = append or bool(deletes)
    old = folder.read() if incremental and folder.exists() else None
    if incremental and old is None and deletes:
        raise FileNotFoundError(f"--delete needs an existing graph at {output}")
    started = init_ray()

    read = read_stage(settings, input_path) if input_path else pa.table({"kind": pa.array([], pa.string())})
    docs, rejected = _dedupe(read) if input_path else ({}, [])
    timings["read"] = time.perf_counter() - t0
    old_hashes = {} if old is None else dict(zip(old.tables["documents"].column("doc_id").to_pylist(),
                                                 old.tables["documents"].column("content_hash").to_pylist()))
    plan = graph_build.plan_update(old_hashes, {d: r["content_hash"] for d, r in docs.items()}, deletes)
    for doc_id in plan.unknown_deletes:
        log.warning("--delete %s: no such document in %s", doc_id, output)
    log.info("plan: %d to process (%d new, %d changed), %d unchanged, %d deleted, %d rejected",
             len(plan.process), len(plan.added), len(plan.replaced), len(plan.unchanged), len(plan.deleted), len(rejected))

    t = time.perf_counter()
    # fixed pools that cannot all be placed: CPUs for ours, GPUs for vLLM's engine
    vllm = _vllm_extraction(settings)
    problem = actor_fit_problem(settings.pipeline, ray.cluster_resources().get("CPU", 0.0),
                                extract_pool=not vllm) if plan.process else None
    if plan.process and vllm:
        gpu_actors("LLM extraction (Ray Data's vLLM processor)", settings.models.llm_tensor_parallel, 1, started)
    refuse_or_warn(problem, started)
    processed = process_stage(settings, read, plan.process, extractor_factory) if plan.process else None
    timings["chunk_extract_embed"] = time.perf_counter() - t
    dim = _embed_dim(settings, processed)
    where = "driver" if settings.pipeline.embed_chunks_in_driver else "actors"
    dtypes = {"embed_chunks": f"{stage_dtypes(processed)} ({where})"} if processed is not None else {}
    if processed is not None and "embedder_dtype" in processed.column_names:
        processed = processed.drop_columns(["embedder_dtype"])
    if processed is None or processed.num_rows == 0:
        processed = _empty_processed()
    failures = [{"chunk_id": c, "doc_id": d, "error": e} for c, d, e in zip(
        processed.column("chunk_id").to_pylist(), processed.column("doc_id").to_pylist(),
        processed.column("extract_error").to_pylist()) if e]
    for f in failures:
        log.warning("extraction failed for chunk %s of %s: %s", f["chunk_id"], f["doc_id"], f["error"])
    chunk_vecs = embedding_matrix(processed, dim)

    by_doc: dict[str, list[int]] = {}
    for d, n in zip(processed.column("doc_id").to_pylist(), processed.column("n_tokens").to_pylist()):
        by_doc.setdefault(d, []).append(n)
    documents = pa.table({
        "doc_id": plan.process,
        "content_hash": [docs[d]["content_hash"] for d in plan.process],
        "source": [docs[d]["source"] for d in plan.process],
        "title": [docs[d]["title"] for d in plan.process],
        "n_chunks": [len(by_doc.get(d, [])) for d in plan.process],
        "n_tokens": [sum(by_doc.get(d, [])) for d in plan.process],
    }, schema=graph_build.DOCUMENT_SCHEMA)

    t = time.perf_counter()
    graph, pending = graph_build.assemble(old, plan, documents, processed, chunk_vecs,
                                          max_description_parts=settings.extraction.max_description_parts, dim=dim)
    timings["merge"] = time.perf_counter() - t

    def release() -> None:  # the rest runs in the driver: a local Ray's idle processes slowed it by 6-15% on 2 cores
        r = time.perf_counter()
        ray.shutdown()
        timings["release_ray"] = time.perf_counter() - r

    t = time.perf_counter()
    vecs = embed_texts(settings, pending.entity_texts + pending.relation_texts, dim, dtypes,
                       before_driver=release if (started if release_ray is None else release_ray) else None)
    graph_build.fill_vectors(graph, pending, vecs[: len(pending.entity_rows)], vecs[len(pending.entity_rows):])
    timings["embed_graph"] = time.perf_counter() - t - timings.get("release_ray", 0.0)  # each phase once

    t = time.perf_counter()
    indexes = {}
    with Progress("index", sum(len(v) for v in graph.vectors.values()), "vectors") as bar:
        for kind, vectors in graph.vectors.items():
            indexes[kind] = vector_index.build_index(vectors, settings.index)
            bar.advance(len(vectors))
    timings["index"] = time.perf_counter() - t
    new_tokens = int(sum(processed.column("n_tokens").to_pylist()))
    timings["total"] = time.perf_counter() - t0
    report = BuildReport(
        output=output, counts=graph_build.counts(graph), processed_docs=len(plan.process),
        new_chunks=processed.num_rows, new_tokens=new_tokens, rejected=rejected, extract_failures=failures,
        plan={"added": plan.added, "replaced": plan.replaced, "unchanged_count": [str(len(plan.unchanged))],
              "deleted": plan.deleted, "unknown_deletes": plan.unknown_deletes},
        timings={k: round(v, 3) for k, v in timings.items()}, dtypes=dtypes,
    )
    graph.manifest = manifest(settings, report, indexes, dim)
    t = time.perf_counter()
    folder.write(graph, {k: vector_index.to_bytes(v) for k, v in indexes.items()})
    report.timings["write"] = round(time.perf_counter() - t, 3)
    return report


def stage_dtypes(table: pa.Table) -> str:
    """The dtypes an embedding stage's actors ran in (one, unless actors on different CPUs chose apart)."""
    if "embedder_dtype" not in table.column_names or table.num_rows == 0:
        return "unknown"
    return ", ".join(sorted(set(table.column("embedder_dtype").to_pylist())))


def _empty_processed() -> pa.Table:
    return pa.table({
        "chunk_id": pa.array([], pa.string()), "doc_id": pa.array([], pa.string()), "text": pa.array([], pa.string()),
        "token_start": pa.array([], pa.int64()), "token_end": pa.array([], pa.int64()), "n_tokens": pa.array([], pa.int64()),
        "char_start": pa.array([], pa.int64()), "char_end": pa.array([], pa.int64()),
        "entities": pa.array([], pa.list_(pa.struct([("name", pa.string()), ("type", pa.string()), ("description", pa.string())]))),
        "relations": pa.array([], pa.list_(pa.struct([("source", pa.string()), ("target", pa.string()),
                                                       ("description", pa.string()), ("strength", pa.float64())]))),
        "extract_error": pa.array([], pa.string()),
    })


app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def main(
    input: Optional[str] = typer.Option(None, "--input", "-i", help="a file or folder of documents"),
    output: str = typer.Option(..., "--output", "-o", help="the graph folder (local path or pyarrow filesystem URI)"),
    append: bool = typer.Option(False, "--append", help="add new and changed documents to an existing graph"),
    delete: list[str] = typer.Option([], "--delete", help="remove a document (repeatable)"),
    profile: str = typer.Option("local", "--profile", help="configs/<profile>.yaml or a YAML path"),
    set_: list[str] = typer.Option([], "--set", help="override a setting: section.field=value (repeatable)"),
    verbose: bool = typer.Option(False, "--verbose", help="Ray's, Ray Data's and the models' own INFO logs too"),
) -> None:
    configure_output(verbose)
    if input is None and not delete:
        raise typer.BadParameter("give --input, --delete, or both")
    settings = load_settings(profile, set_)
    try:
        report = run_build(settings, input, output, append=append, deletes=delete)
    except (FileNotFoundError, GraphFolderError, PipelineFitError) as err:
        typer.echo(f"build_graphs: {err}", err=True)
        raise typer.Exit(2) from err
    print_summary(report)


if __name__ == "__main__":
    app()
