"""Browsing a graph: list the graphs, find entities by name, an entity's neighbourhood, chunk texts.

Plain blocking functions over a :class:`~serving.service.Service` (it owns the
loaded stores and their reload on a new manifest); :mod:`serving.reads` serves
them to the web page. Nothing here changes a graph.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from serving import caps, schemas
from serving.names import NAME
from serving.service import NotFound, Service


def graphs(service: Service) -> schemas.GraphsResponse:
    """Every folder under graphs_dir with a manifest, read without loading the graph."""
    root = Path(service.serving.graphs_dir)
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if not NAME.fullmatch(folder.name) or not (folder / "manifest.json").is_file():
            continue
        try:
            manifest = json.loads((folder / "manifest.json").read_text())
        except (OSError, ValueError):  # half written by a build: listed when it is done
            continue
        out.append(schemas.GraphInfo(graph=folder.name, counts=manifest.get("counts") or {},
                                     embedder=(manifest.get("models") or {}).get("embedder")))
    return schemas.GraphsResponse(graphs=out)


def _entity(row: dict[str, Any]) -> schemas.EntityOut:
    return schemas.EntityOut(entity_id=row["entity_id"], name=row["name"], type=row.get("type") or "",
                             description=row.get("description") or "")


def search_entities(service: Service, graph: str, query: str, k: int) -> schemas.EntitySearchResponse:
    caps.check_k(service.serving, k)
    store = service.graph(graph)
    hits = store.search_entities(query, k=min(k, store.count("entities")))
    return schemas.EntitySearchResponse(graph=graph, query=query, hits=[
        schemas.EntityHit(**_entity(store.entity(h.id)).model_dump(), score=h.score) for h in hits])


def _chunks(store: Any, ids: Iterable[str]) -> list[schemas.ChunkOut]:
    out = []
    for cid in dict.fromkeys(ids):
        try:
            row = store.chunk(cid)
        except KeyError:
            continue
        out.append(schemas.ChunkOut(chunk_id=cid, doc_id=row.get("doc_id") or "", text=row["text"]))
    return out


def chunks(service: Service, graph: str, ids: list[str]) -> schemas.ChunksResponse:
    caps.check_k(service.serving, len(ids), "the number of chunk ids")
    return schemas.ChunksResponse(graph=graph, chunks=_chunks(service.graph(graph), ids))


def entity(service: Service, graph: str, entity_id: str) -> schemas.EntityView:
    store = service.graph(graph)
    if not store.has_entity(entity_id):
        raise NotFound(f"graph {graph!r} has no entity {entity_id!r}")
    rels = store.top_relations(entity_id, k=service.serving.max_k)
    others = dict.fromkeys(r["target_id"] if r["source_id"] == entity_id else r["source_id"] for r in rels)
    return schemas.EntityView(
        graph=graph, entity=_entity(store.entity(entity_id)),
        neighbours=[_entity(store.entity(e)) for e in others if store.has_entity(e)],
        relations=[schemas.RelationOut(relation_id=r["relation_id"], source_id=r["source_id"],
                                       target_id=r["target_id"], description=r.get("description") or "",
                                       weight=float(r.get("weight") or 0.0), chunk_ids=list(r.get("chunk_ids") or []))
                   for r in rels],
        chunks=_chunks(store, store.entity_chunks(entity_id)))
