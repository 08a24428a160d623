"""FAISS indexes over unit vectors (inner product = cosine).

Exact search below ``exact_max_vectors``; above it HNSW (or IVF), whose
recall/speed knobs are settings. Indexes are serialised to bytes so they can be
stored on any pyarrow filesystem.
"""

from __future__ import annotations

import faiss
import numpy as np

from memgraft.config import IndexSettings


def build_index(vectors: np.ndarray, settings: IndexSettings) -> faiss.Index:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = vectors.shape if vectors.ndim == 2 else (0, 0)
    if n <= settings.exact_max_vectors:
        index = faiss.IndexFlatIP(dim)
    elif settings.kind_above_exact == "hnsw":
        index = faiss.IndexHNSWFlat(dim, settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = settings.hnsw_ef_search
    else:
        lists = min(settings.ivf_lists, max(1, n // 39))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
        index.nprobe = settings.ivf_probe
    if n:
        index.add(vectors)
    return index


def index_kind(index: faiss.Index) -> str:
    if isinstance(index, faiss.IndexFlat):
        return "flat"
    if isinstance(index, faiss.IndexHNSW):
        return "hnsw"
    return type(index).__name__.lower()


def to_bytes(index: faiss.Index) -> bytes:
    return faiss.serialize_index(index).tobytes()


def from_bytes(data: bytes) -> faiss.Index:
    return faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))


def search(index: faiss.Index, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores and row numbers for one query vector; rows of -1 (not enough vectors) dropped."""
    if index.ntotal == 0 or k <= 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int64)
    q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
    scores, rows = index.search(q, min(k, index.ntotal))
    keep = rows[0] >= 0
    return scores[0][keep], rows[0][keep]
