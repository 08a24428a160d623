"""Thin Ray Data adapters around the library's batch functions.

Each callable class is one actor-pool stage: it loads its model once in
``__init__`` and then only maps batches. Plain functions are task stages.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from memgraft.config import Settings
from memgraft.graph.extraction import Extractor, extract_batch
from memgraft.graph.extractors import make_extractor
from memgraft.models.embedder import load_embedder, load_tokenizer
from memgraft.models.threads import set_torch_threads
from memgraft.text.chunking import chunk_batch
from memgraft.text.documents import Document, read_file

READ_COLUMNS = ("kind", "doc_id", "text", "content_hash", "source", "title", "reason")


def read_file_rows(row: dict[str, Any], max_mb: float) -> list[dict[str, Any]]:
    """One input file -> one row per document or per rejection (``flat_map``)."""
    out = []
    for item in read_file(Path(row["path"]), Path(row["root"]), max_mb):
        if isinstance(item, Document):
            out.append({"kind": "doc", "doc_id": item.doc_id, "text": item.text, "content_hash": item.content_hash,
                        "source": item.source, "title": item.title, "reason": ""})
        else:
            out.append({"kind": "rejected", "doc_id": item.doc_id, "text": "", "content_hash": "",
                        "source": item.source, "title": "", "reason": item.reason})
    return out


def docs_to_process(read: pa.Table, doc_ids: Iterable[str]) -> pa.Table:
    """``doc_id`` and ``text`` of each document to process, from its first row (a later row with the
    same id is a duplicate the plan rejected)."""
    wanted, rows = set(doc_ids), []
    for i, (kind, doc_id) in enumerate(zip(read.column("kind").to_pylist(), read.column("doc_id").to_pylist())):
        if kind == "doc" and doc_id in wanted:
            wanted.discard(doc_id)
            rows.append(i)
    return read.select(["doc_id", "text"]).take(pa.array(rows, pa.int64()))


def split_rows(table: pa.Table, parts: int) -> list[pa.Table]:
    """About equal row slices, as Ray Data blocks. Not ``Dataset.repartition``: that all-to-all step
    runs tasks of a whole CPU, and where fixed actor pools hold more than all but one CPU (2 CPUs, three
    actors of 0.5) it never gets one and the build waits forever, past Ray Data's no-progress guard."""
    parts = max(1, min(parts, table.num_rows))
    step = -(-table.num_rows // parts) if table.num_rows else 1
    return [table.slice(i, step) for i in range(0, table.num_rows, step)] or [table]


@functools.lru_cache(maxsize=2)
def _tokenizer(model: str):
    return load_tokenizer(model)


def chunk_docs(batch: dict[str, Any], model: str, size: int, overlap: int) -> dict[str, Any]:
    """Documents -> token-exact chunks; the tokenizer is cached per worker process."""
    return chunk_batch(_tokenizer(model), {"doc_id": list(batch["doc_id"]), "text": list(batch["text"])}, size, overlap)


ENTITY_LIST = pa.list_(pa.struct([("name", pa.string()), ("type", pa.string()), ("description", pa.string())]))
RELATION_LIST = pa.list_(pa.struct([("source", pa.string()), ("target", pa.string()),
                                    ("description", pa.string()), ("strength", pa.float64())]))


class ExtractStage:
    """Actor: one extractor per actor, mentions per chunk (``batch_format="pyarrow"``)."""

    def __init__(self, settings: Settings, factory: Callable[[Settings], Extractor] | None = None):
        set_torch_threads(settings.models.torch_threads)
        self.extractor = (factory or make_extractor)(settings)

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = extract_batch(self.extractor, batch.to_pydict())
        out["entities"] = pa.array(out["entities"], ENTITY_LIST)
        out["relations"] = pa.array(out["relations"], RELATION_LIST)
        return pa.table(out)


class EmbedStage:
    """Actor: one embedder per actor; appends a fixed-size-list ``embedding`` column for ``text_column``."""

    def __init__(self, settings: Settings, text_column: str = "text"):
        self.embedder = load_embedder(settings)
        self.text_column = text_column

    def __call__(self, batch: pa.Table) -> pa.Table:
        return with_embeddings(batch, self.embedder, self.text_column)


def with_embeddings(batch: pa.Table, embedder: Any, text_column: str = "text") -> pa.Table:
    """``batch`` with a fixed-size-list ``embedding`` column of its texts, and ``embedder_dtype``: the dtype the
    model ran in ("auto" resolves per machine), which the build reports per stage."""
    vecs = np.asarray(embedder.encode(batch.column(text_column).to_pylist()), np.float32)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.float32()), embedder.dim)
    dtype = pa.DictionaryArray.from_arrays(pa.array(np.zeros(batch.num_rows, np.int32)),
                                           pa.array([str(getattr(embedder, "dtype", "unknown"))]))
    return batch.append_column("embedding", column).append_column("embedder_dtype", dtype)


def embedding_matrix(table: pa.Table, dim: int) -> np.ndarray:
    """The ``embedding`` column written by :class:`EmbedStage` as an (n, dim) float32 array."""
    if table.num_rows == 0:
        return np.zeros((0, dim), np.float32)
    flat = table.column("embedding").combine_chunks().flatten()
    return np.asarray(flat.to_numpy(zero_copy_only=False), np.float32).reshape(-1, dim)
