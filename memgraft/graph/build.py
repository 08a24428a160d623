"""Ray-free steps of a graph build: what to (re)process, and how new work joins the old graph.

A build only ever extracts and embeds the documents it must: on ``append``,
unchanged documents (same doc_id, same content hash) keep their chunks,
mentions and vectors; a changed document's old rows are dropped and it is
processed again; ``delete`` drops a document's rows, and the re-merge from the
remaining mentions removes entities and relations that only it supported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memgraft.graph.folder import GraphData
from memgraft.graph.merge import (
    ENTITY_MENTION_SCHEMA, RELATION_MENTION_SCHEMA, entity_text, mention_tables, merge_graph, relation_text,
)
from memgraft.text.chunking import CHUNK_COLUMNS

DOCUMENT_SCHEMA = pa.schema([
    ("doc_id", pa.string()), ("content_hash", pa.string()), ("source", pa.string()),
    ("title", pa.string()), ("n_chunks", pa.int64()), ("n_tokens", pa.int64()),
])
CHUNK_SCHEMA = pa.schema([
    ("chunk_id", pa.string()), ("doc_id", pa.string()), ("text", pa.string()),
    ("token_start", pa.int64()), ("token_end", pa.int64()), ("n_tokens", pa.int64()),
    ("char_start", pa.int64()), ("char_end", pa.int64()),
])


@dataclass
class UpdatePlan:
    process: list[str] = field(default_factory=list)  # doc_ids to chunk, extract and embed
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unknown_deletes: list[str] = field(default_factory=list)

    def keeps(self, old_doc_ids: list[str]) -> set[str]:
        """Old documents whose rows stay as they are."""
        gone = set(self.replaced) | set(self.deleted)
        return {d for d in old_doc_ids if d not in gone}


def plan_update(old: dict[str, str], incoming: dict[str, str], deletes: list[str]) -> UpdatePlan:
    """``old``/``incoming`` map doc_id to content hash; ``old`` is empty for a fresh build."""
    plan = UpdatePlan()
    for doc_id in sorted(incoming):
        if doc_id in deletes:
            continue
        if doc_id not in old:
            plan.added.append(doc_id)
        elif old[doc_id] != incoming[doc_id]:
            plan.replaced.append(doc_id)
        else:
            plan.unchanged.append(doc_id)
    plan.process = plan.added + plan.replaced
    for doc_id in deletes:
        (plan.deleted if doc_id in old else plan.unknown_deletes).append(doc_id)
    return plan


def _rows_of_docs(table: pa.Table, doc_ids: set[str]) -> pa.Array:
    return pc.is_in(table.column("doc_id"), value_set=pa.array(sorted(doc_ids), pa.string()))


def _sorted(table: pa.Table, keys: list[str]) -> tuple[pa.Table, np.ndarray]:
    order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys]).to_numpy()
    return table.take(order), order


@dataclass
class PendingEmbeddings:
    """Entity and relation texts that have no vector yet, by row of their table."""

    entity_rows: list[int]
    entity_texts: list[str]
    relation_rows: list[int]
    relation_texts: list[str]


def assemble(
    old: GraphData | None,
    plan: UpdatePlan,
    documents: pa.Table,
    new_chunks: pa.Table,
    chunk_vectors: np.ndarray,
    *,
    max_description_parts: int,
    dim: int,
) -> tuple[GraphData, PendingEmbeddings]:
    """Join kept old rows with newly processed chunks, re-merge, and list what still needs a vector.

    ``new_chunks`` holds the chunk columns plus the extractor's ``entities`` and
    ``relations`` lists; ``chunk_vectors`` is row-aligned with it.
    """
    ent_m, rel_m = mention_tables(
        new_chunks.column("chunk_id").to_pylist(), new_chunks.column("doc_id").to_pylist(),
        new_chunks.column("entities").to_pylist(), new_chunks.column("relations").to_pylist(),
    )
    chunks = new_chunks.select(list(CHUNK_COLUMNS)).cast(CHUNK_SCHEMA)
    vectors = np.asarray(chunk_vectors, np.float32).reshape(-1, dim)
    docs = documents.cast(DOCUMENT_SCHEMA)
    old_entities = old_relations = None
    if old is not None:
        keep = plan.keeps(old.tables["documents"].column("doc_id").to_pylist())
        old_chunk_mask = _rows_of_docs(old.tables["chunks"], keep)
        chunks = pa.concat_tables([old.tables["chunks"].filter(old_chunk_mask).cast(CHUNK_SCHEMA), chunks])
        vectors = np.concatenate([old.vectors["chunks"][old_chunk_mask.to_numpy(zero_copy_only=False)], vectors])
        docs = pa.concat_tables([old.tables["documents"].filter(_rows_of_docs(old.tables["documents"], keep)).cast(DOCUMENT_SCHEMA), docs])
        ent_m = pa.concat_tables([old.tables["entity_mentions"].filter(_rows_of_docs(old.tables["entity_mentions"], keep)).cast(ENTITY_MENTION_SCHEMA), ent_m])
        rel_m = pa.concat_tables([old.tables["relation_mentions"].filter(_rows_of_docs(old.tables["relation_mentions"], keep)).cast(RELATION_MENTION_SCHEMA), rel_m])
        old_entities, old_relations = old, old
    chunks, order = _sorted(chunks, ["chunk_id"])
    vectors = vectors[order] if len(order) else vectors
    docs, _ = _sorted(docs, ["doc_id"])
    ent_m, _ = _sorted(ent_m, ["chunk_id", "position"])
    rel_m, _ = _sorted(rel_m, ["chunk_id", "position"])
    entities, relations = merge_graph(ent_m, rel_m, max_description_parts)

    names = dict(zip(entities.column("entity_id").to_pylist(), entities.column("name").to_pylist()))
    ent_texts = [entity_text(n, d) for n, d in zip(entities.column("name").to_pylist(), entities.column("description").to_pylist())]
    rel_texts = [
        relation_text(names[s], names[t], d)
        for s, t, d in zip(relations.column("source_id").to_pylist(), relations.column("target_id").to_pylist(),
                           relations.column("description").to_pylist())
    ]
    ent_vecs, ent_missing = _reuse_vectors(old_entities, "entities", "entity_id", entities, ent_texts, dim)
    rel_vecs, rel_missing = _reuse_vectors(old_relations, "relations", "relation_id", relations, rel_texts, dim)
    graph = GraphData(
        {"documents": docs, "chunks": chunks, "entities": entities, "relations": relations,
         "entity_mentions": ent_m, "relation_mentions": rel_m},
        {"chunks": vectors, "entities": ent_vecs, "relations": rel_vecs},
    )
    pending = PendingEmbeddings(ent_missing, [ent_texts[i] for i in ent_missing],
                                rel_missing, [rel_texts[i] for i in rel_missing])
    return graph, pending


def _old_texts(old: GraphData, kind: str) -> list[str]:
    t = old.tables[kind]
    if kind == "entities":
        return [entity_text(n, d) for n, d in zip(t.column("name").to_pylist(), t.column("description").to_pylist())]
    ents = old.tables["entities"]
    names = dict(zip(ents.column("entity_id").to_pylist(), ents.column("name").to_pylist()))
    return [relation_text(names.get(s, ""), names.get(tg, ""), d) for s, tg, d in zip(
        t.column("source_id").to_pylist(), t.column("target_id").to_pylist(), t.column("description").to_pylist())]


def _reuse_vectors(old: GraphData | None, kind: str, key: str, table: pa.Table, texts: list[str], dim: int):
    """Copy the old vector of every row whose id and embedded text are unchanged."""
    vecs = np.zeros((table.num_rows, dim), np.float32)
    missing = list(range(table.num_rows))
    if old is None or old.tables[kind].num_rows == 0:
        return vecs, missing
    old_rows = {(i, t): r for r, (i, t) in enumerate(zip(old.tables[kind].column(key).to_pylist(), _old_texts(old, kind)))}
    missing = []
    for row, (ident, text) in enumerate(zip(table.column(key).to_pylist(), texts)):
        r = old_rows.get((ident, text))
        if r is None:
            missing.append(row)
        else:
            vecs[row] = old.vectors[kind][r]
    return vecs, missing


def fill_vectors(graph: GraphData, pending: PendingEmbeddings, entity_vecs: np.ndarray, relation_vecs: np.ndarray) -> None:
    if pending.entity_rows:
        graph.vectors["entities"][pending.entity_rows] = entity_vecs
    if pending.relation_rows:
        graph.vectors["relations"][pending.relation_rows] = relation_vecs


def counts(graph: GraphData) -> dict[str, Any]:
    return {name: graph.tables[name].num_rows for name in ("documents", "chunks", "entities", "relations")}
