"""FAISS index choice and search; embedder and reranker backends on the bundled model."""

import numpy as np
import pytest

from memgraft.config import IndexSettings
from memgraft.graph import vector_index
from memgraft.models.reranker import CosineReranker, CrossEncoderReranker, load_reranker


def _unit(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_exact_below_the_threshold_approximate_above(kind):
    vecs = _unit(2000)
    small = vector_index.build_index(vecs[:100], IndexSettings(exact_max_vectors=500))
    assert vector_index.index_kind(small) == "flat"
    big = vector_index.build_index(vecs, IndexSettings(exact_max_vectors=500, kind_above_exact=kind, ivf_lists=16, ivf_probe=16))
    assert vector_index.index_kind(big) == ("hnsw" if kind == "hnsw" else "indexivfflat")
    exact = vector_index.build_index(vecs, IndexSettings(exact_max_vectors=10_000))
    again = vector_index.from_bytes(vector_index.to_bytes(big))
    hits = 0
    for q in vecs[:50]:
        _, want = vector_index.search(exact, q, 5)
        _, got = vector_index.search(again, q, 5)
        hits += len(set(want) & set(got))
    assert hits / 250 >= 0.9  # recall@5 of the approximate index
    _, rows = vector_index.search(exact, vecs[7], 1)
    assert rows[0] == 7


def test_empty_index_searches_to_nothing():
    empty = vector_index.build_index(np.zeros((0, 8), np.float32), IndexSettings())
    scores, rows = vector_index.search(empty, np.ones(8, np.float32), 3)
    assert len(scores) == len(rows) == 0


def test_embedder_is_unit_normalised_and_semantic(embedder):
    v = embedder.encode(["A cat sat on the mat.", "A kitten rested on the rug.", "Quarterly tax filing deadlines."])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-2)
    assert v[0] @ v[1] > v[0] @ v[2]
    assert embedder.encode([]).shape == (0, 384)


def test_cosine_fallback_names_itself(settings, embedder):
    r = load_reranker(settings, embedder)
    assert isinstance(r, CosineReranker) and not r.is_cross_encoder and "no cross-encoder" in r.name
    s = r.score("cats", ["a cat on a mat", "tax law"])
    assert s[0] > s[1]


def test_cross_encoder_backend_loads_a_local_model():
    # No cross-encoder ships offline; the MiniLM checkpoint loads as one (with an untrained head),
    # which exercises the real loading and batching path.
    r = CrossEncoderReranker("bundled:all-MiniLM-L6-v2")
    s = r.score("q", ["one", "two", "three"])
    assert r.is_cross_encoder and s.shape == (3,) and np.isfinite(s).all()
