"""Read-only access to a built graph: vector search and graph walks.

Loads a graph folder (local path or pyarrow filesystem URI) once and answers
what HGMem's retrieval asks: nearest chunks/entities/relations to a query,
k-hop neighbourhoods, the chunks an entity came from, and an entity's
strongest relations.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa

from memgraft.graph import vector_index
from memgraft.graph.folder import VECTOR_KINDS, GraphFolder, GraphFolderError
from memgraft.models.embedder import Embedder

QUERY_CACHE_SIZE = 4096
_KEYS = {"chunks": "chunk_id", "entities": "entity_id", "relations": "relation_id"}


@dataclass(frozen=True)
class Hit:
    id: str
    score: float


class GraphStore:
    def __init__(self, tables: dict[str, pa.Table], vectors: dict[str, np.ndarray], indexes: dict[str, Any],
                 manifest: dict[str, Any], embedder: Embedder | None = None):
        self.manifest = manifest
        self.embedder = embedder
        self._query_cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()  # workers answer many questions at once, in threads
        self._indexes = indexes
        self._vectors = vectors
        self._rows: dict[str, list[dict[str, Any]]] = {k: tables[k].to_pylist() for k in VECTOR_KINDS}
        self._ids: dict[str, list[str]] = {k: [r[_KEYS[k]] for r in self._rows[k]] for k in VECTOR_KINDS}
        self._by_id: dict[str, dict[str, dict[str, Any]]] = {
            k: dict(zip(self._ids[k], self._rows[k])) for k in VECTOR_KINDS
        }
        self._row_of = {k: {i: r for r, i in enumerate(self._ids[k])} for k in VECTOR_KINDS}
        self._adjacent: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rel in self._rows["relations"]:
            self._adjacent[rel["source_id"]].append(rel)
            self._adjacent[rel["target_id"]].append(rel)
        for rels in self._adjacent.values():  # strongest first, ties by id: deterministic
            rels.sort(key=lambda r: (-r["weight"], r["relation_id"]))
        if embedder is not None:
            built_with = manifest.get("models", {}).get("embedder")
            if built_with and built_with != embedder.name:
                raise GraphFolderError(f"graph was embedded with {built_with!r} but the query embedder is {embedder.name!r}")

    @classmethod
    def load(cls, uri: str, embedder: Embedder | None = None) -> "GraphStore":
        folder = GraphFolder(uri)
        manifest = folder.read_manifest()
        tables = {k: folder.read_table(k) for k in VECTOR_KINDS}
        vectors = {k: folder.read_vectors(k) for k in VECTOR_KINDS}
        indexes = {k: vector_index.from_bytes(folder.read_bytes("indexes", f"{k}.faiss")) for k in VECTOR_KINDS}
        return cls(tables, vectors, indexes, manifest, embedder)

    # -- lookups -------------------------------------------------------------
    def chunk(self, chunk_id: str) -> dict[str, Any]:
        return self._by_id["chunks"][chunk_id]

    def entity(self, entity_id: str) -> dict[str, Any]:
        return self._by_id["entities"][entity_id]

    def relation(self, relation_id: str) -> dict[str, Any]:
        return self._by_id["relations"][relation_id]

    def has_entity(self, entity_id: str) -> bool:
        return entity_id in self._by_id["entities"]

    def count(self, kind: str) -> int:
        return len(self._ids[kind])

    # -- vector search -------------------------------------------------------
    def embed_query(self, query: str | np.ndarray) -> np.ndarray:
        """A query's vector; retrieval asks for the same subquery many times, so recent ones are cached."""
        if isinstance(query, np.ndarray):
            return query.astype(np.float32)
        if self.embedder is None:
            raise ValueError("this GraphStore has no embedder: pass query vectors, or load it with one")
        vec = self._query_cache.get(query)
        if vec is None:
            vec = self.embedder.encode([query])[0]
            with self._lock:
                self._query_cache[query] = vec
                while len(self._query_cache) > QUERY_CACHE_SIZE:
                    self._query_cache.pop(next(iter(self._query_cache)))
        return vec

    def _search(self, kind: str, query: str | np.ndarray, k: int, exclude: Iterable[str] = ()) -> list[Hit]:
        excluded = set(exclude)
        vec = self.embed_query(query)
        fetch = k + len(excluded)
        while True:
            scores, rows = vector_index.search(self._indexes[kind], vec, fetch)
            hits = [Hit(self._ids[kind][r], float(s)) for s, r in zip(scores, rows) if self._ids[kind][r] not in excluded]
            # An approximate index may return fewer than asked; widen once more before giving up.
            if len(hits) >= k or fetch >= len(self._ids[kind]):
                return hits[:k]
            fetch = min(len(self._ids[kind]), fetch * 2)

    def search_chunks(self, query: str | np.ndarray, k: int = 10, exclude: Iterable[str] = ()) -> list[Hit]:
        return self._search("chunks", query, k, exclude)

    def search_entities(self, query: str | np.ndarray, k: int = 20, exclude: Iterable[str] = ()) -> list[Hit]:
        return self._search("entities", query, k, exclude)

    def search_relations(self, query: str | np.ndarray, k: int = 10, exclude: Iterable[str] = ()) -> list[Hit]:
        return self._search("relations", query, k, exclude)

    # -- graph walks ---------------------------------------------------------
    def neighbours(self, entity_ids: Sequence[str], hops: int = 2) -> dict[str, int]:
        """Entities within ``hops`` of any seed, with their distance (seeds are 0)."""
        dist = {e: 0 for e in entity_ids if e in self._by_id["entities"]}
        frontier = list(dist)
        for hop in range(1, hops + 1):
            nxt = []
            for e in frontier:
                for rel in self._adjacent.get(e, ()):
                    other = rel["target_id"] if rel["source_id"] == e else rel["source_id"]
                    if other not in dist:
                        dist[other] = hop
                        nxt.append(other)
            frontier = nxt
        return dist

    def entity_chunks(self, entity_id: str) -> list[str]:
        return list(self.entity(entity_id)["chunk_ids"])

    def top_relations(self, entity_id: str, k: int = 5) -> list[dict[str, Any]]:
        """The entity's ``k`` heaviest relations."""
        return self._adjacent.get(entity_id, [])[:k]

    def rank(self, kind: str, query: str | np.ndarray, ids: Iterable[str], k: int) -> list[Hit]:
        """The ``k`` of ``ids`` nearest to the query (exact, over stored vectors): search within a candidate set."""
        candidates = [i for i in dict.fromkeys(ids) if i in self._row_of[kind]]
        if not candidates or k <= 0:
            return []
        vecs = self._vectors[kind][[self._row_of[kind][i] for i in candidates]]
        scores = vecs @ self.embed_query(query)
        order = np.lexsort((np.arange(len(candidates)), -scores))[:k]
        return [Hit(candidates[i], float(scores[i])) for i in order]
