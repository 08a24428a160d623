"""The graph folder on disk (or any pyarrow filesystem URI).

Layout (DESIGN.md, Data formats), plus what incremental updates need:
``chunks.parquet``, ``entities.parquet``, ``relations.parquet``,
``documents.parquet`` (doc_id, content hash), ``entity_mentions.parquet`` and
``relation_mentions.parquet`` (per-chunk extraction, so a merge can be redone
without re-extracting), ``vectors/<kind>.npy`` (row-aligned with its table),
``indexes/<kind>.faiss`` and ``manifest.json``. The manifest is written last
and removed first, so a folder without one is an unfinished build.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

TABLES = ("documents", "chunks", "entities", "relations", "entity_mentions", "relation_mentions")
VECTOR_KINDS = ("chunks", "entities", "relations")
MANIFEST = "manifest.json"


class GraphFolderError(RuntimeError):
    pass


@dataclass
class GraphData:
    tables: dict[str, pa.Table]
    vectors: dict[str, np.ndarray]
    manifest: dict[str, Any] = field(default_factory=dict)


class GraphFolder:
    """Reads and writes one graph folder through a pyarrow filesystem."""

    def __init__(self, uri: str):
        self.uri = str(uri)
        self.fs, self.root = pafs.FileSystem.from_uri(self.uri) if "://" in self.uri else (pafs.LocalFileSystem(), _abs(self.uri))

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def exists(self) -> bool:
        return self.fs.get_file_info(self.path(MANIFEST)).type == pafs.FileType.File

    # -- reading -------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any]:
        if not self.exists():
            raise GraphFolderError(f"{self.uri} holds no {MANIFEST}: not a graph folder, or its build did not finish (rerun it)")
        with self.fs.open_input_stream(self.path(MANIFEST)) as f:
            return json.loads(f.read().decode("utf-8"))

    def read_table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        return pq.read_table(self.path(f"{name}.parquet"), filesystem=self.fs, columns=columns)

    def read_vectors(self, kind: str) -> np.ndarray:
        with self.fs.open_input_stream(self.path("vectors", f"{kind}.npy")) as f:
            return np.load(io.BytesIO(f.read()), allow_pickle=False)

    def read_bytes(self, *parts: str) -> bytes:
        with self.fs.open_input_stream(self.path(*parts)) as f:
            return f.read()

    def read(self) -> GraphData:
        manifest = self.read_manifest()
        return GraphData(
            {name: self.read_table(name) for name in TABLES},
            {kind: self.read_vectors(kind) for kind in VECTOR_KINDS},
            manifest,
        )

    # -- writing -------------------------------------------------------------
    def write(self, data: GraphData, indexes: dict[str, bytes]) -> None:
        self.fs.create_dir(self.path("vectors"), recursive=True)
        self.fs.create_dir(self.path("indexes"), recursive=True)
        if self.exists():
            self.fs.delete_file(self.path(MANIFEST))
        for name in TABLES:
            pq.write_table(data.tables[name], self.path(f"{name}.parquet"), filesystem=self.fs)
        for kind in VECTOR_KINDS:
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(data.vectors[kind], dtype=np.float32), allow_pickle=False)
            self._write_bytes(buf.getvalue(), "vectors", f"{kind}.npy")
            self._write_bytes(indexes[kind], "indexes", f"{kind}.faiss")
        self._write_bytes(json.dumps(data.manifest, indent=2, sort_keys=True).encode("utf-8"), MANIFEST)

    def _write_bytes(self, data: bytes, *parts: str) -> None:
        with self.fs.open_output_stream(self.path(*parts)) as f:
            f.write(data)


def _abs(path: str) -> str:
    import os

    return os.path.abspath(os.path.expanduser(path))
