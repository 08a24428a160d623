"""The driver embeds the chunks as Ray Data streams them out of extraction, and keeps its model.

Why (issue 13, measured on 2 cores): the spaCy extractor is one single-threaded actor, so
while it works a core is free. An embedding actor pool used it, but it loads the model in a
fresh process (4.7 s of import and load on 2 cores) and the driver then loads the same model
again for the entity and relation texts. Embedding the chunks in the driver, as each block
leaves extraction, uses the same free core with one model load for the whole build: the
MuSiQue build on 2 cores went from 30.0 s to 24.1 s at 300 passages.

A cluster keeps the actor pool (``pipeline.embed_chunks_in_driver: false``, the default
outside the local profile): there the driver has no accelerator and the pool scales out.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

import pyarrow as pa
import ray

from memgraft.config import Settings
from memgraft.models.threads import available_cpus, set_torch_threads
from memgraft.progress import Progress
from pipelines.stages import with_embeddings

_models: dict[str, Any] = {}
_DONE = object()


def driver_embedder(settings: Settings) -> Any:
    """The driver's embedder for these model settings, loaded once per process (chunks, then graph texts)."""
    key = settings.models.model_dump_json()
    if key not in _models:
        from memgraft.models.embedder import load_embedder

        _models.clear()  # one model held at a time
        _models[key] = load_embedder(settings)
    set_torch_threads(settings.models.torch_threads)
    return _models[key]


def embed_stream(ds: ray.data.Dataset, settings: Settings, progress: Progress,
                 count: Callable[[pa.Table], int]) -> pa.Table:
    """Run ``ds`` (chunks with their mentions) and append each block's ``embedding`` and ``embedder_dtype``
    columns in the driver, while Ray Data works on the next blocks. A failure in ``ds`` is raised here."""
    blocks: queue.Queue = queue.Queue()  # unbounded: every block is kept in the driver anyway

    def pull() -> None:  # only waits on Ray: the main thread does the model work
        try:
            for block in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
                blocks.put(block)
        except BaseException as err:  # noqa: BLE001 - handed to the main thread, raised there
            blocks.put(err)
        finally:
            blocks.put(_DONE)

    reader = threading.Thread(target=pull, name="chunk-stream", daemon=True)
    reader.start()
    embedder = driver_embedder(settings)  # loads while Ray Data starts its actors
    # the extract actors hold their cores; the driver takes the rest
    set_torch_threads(max(1, available_cpus() - settings.pipeline.extract_actors))
    tables = []
    try:
        with progress:
            while (block := blocks.get()) is not _DONE:
                if isinstance(block, BaseException):
                    raise block
                if block.num_rows:
                    tables.append(with_embeddings(block, embedder))
                    progress.advance(count(block))
    finally:
        set_torch_threads(settings.models.torch_threads)
    return pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
