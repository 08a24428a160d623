"""Retrieval for one HGMem step: entities, then their relations, then chunks.

Global exploration searches the entity index beyond memory (memory's
entities excluded, as in the paper, unless ``exclude_memory_entities`` is off);
local investigation ranks the entities within ``local_hops`` of the asked-about
memory points' vertices. Each entity brings at most ``relations_per_entity``
relations (most relevant to the subquery first), each subquery at most
``top_chunks`` chunks per evidence mode (the paper's two: chunks of the entities it
found, and chunks of the relations it found, ranked separately), and a step at most
``max_chunks_per_step`` chunks in all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memgraft.config import HGMemSettings
from memgraft.graph.store import GraphStore
from memgraft.hgmem.memory import HypergraphMemory

Kind = Literal["initial", "global", "local"]


@dataclass
class Subquery:
    text: str
    kind: Kind = "global"
    point_ids: list[str] = field(default_factory=list)


@dataclass
class Retrieved:
    subquery: Subquery
    entity_ids: list[str]
    relation_ids: list[str]
    chunk_ids: list[str]


@dataclass
class StepEvidence:
    per_subquery: list[Retrieved]

    def _union(self, attr: str) -> list[str]:
        return list(dict.fromkeys(i for r in self.per_subquery for i in getattr(r, attr)))

    @property
    def entity_ids(self) -> list[str]:
        return self._union("entity_ids")

    @property
    def relation_ids(self) -> list[str]:
        return self._union("relation_ids")

    @property
    def chunk_ids(self) -> list[str]:
        return self._union("chunk_ids")


class Retriever:
    def __init__(self, store: GraphStore, settings: HGMemSettings, *, explore: bool = True):
        self.store = store
        self.settings = settings
        self.explore = explore  # False: the local-only ablation, whose local subqueries never search globally

    def entities(self, sq: Subquery, memory: HypergraphMemory) -> list[str]:
        s = self.settings
        if sq.kind == "local":
            seeds = [v.entity_id for p in sq.point_ids if _active(memory, p) for v in memory.vertices_of(p) if v.in_graph]
            if not seeds:  # nothing to investigate around: fall back to exploring, where exploring is allowed
                return self.entities(Subquery(sq.text, "global"), memory) if self.explore else []
            near = self.store.neighbours(seeds, hops=s.local_hops)
            return [h.id for h in self.store.rank("entities", sq.text, list(near), s.top_entities)]
        exclude = memory.entity_ids() if (sq.kind == "global" and s.exclude_memory_entities) else ()
        return [h.id for h in self.store.search_entities(sq.text, s.top_entities, exclude=exclude)]

    def relations(self, sq: Subquery, entity_ids: list[str]) -> list[str]:
        out: list[str] = []
        for e in entity_ids:
            own = [r["relation_id"] for r in self.store.top_relations(e, k=10_000)]
            out.extend(h.id for h in self.store.rank("relations", sq.text, own, self.settings.relations_per_entity))
        return list(dict.fromkeys(out))

    def chunks(self, sq: Subquery, entity_ids: list[str], relation_ids: list[str]) -> list[str]:
        """The top chunks of each mode, entity-linked first; a chunk both modes found counts once."""
        k, query = self.settings.top_chunks, self.store.embed_query(sq.text)
        by_entity = [c for e in entity_ids for c in self.store.entity_chunks(e)]
        by_relation = [c for r in relation_ids for c in self.store.relation(r)["chunk_ids"]]
        return list(dict.fromkeys(h.id for pool in (by_entity, by_relation) for h in self.store.rank("chunks", query, pool, k)))

    def retrieve(self, subqueries: list[Subquery], memory: HypergraphMemory) -> StepEvidence:
        """Evidence for all of a step's subqueries, within the step's chunk cap."""
        results: list[Retrieved] = []
        seen_chunks: set[str] = set()
        for sq in subqueries:
            ents = self.entities(sq, memory)
            rels = self.relations(sq, ents)
            budget = self.settings.max_chunks_per_step - len(seen_chunks)
            chunks = [c for c in self.chunks(sq, ents, rels) if c not in seen_chunks][:max(budget, 0)] if budget > 0 else []
            seen_chunks.update(chunks)
            results.append(Retrieved(sq, ents, rels, chunks))
        return StepEvidence(results)


def _active(memory: HypergraphMemory, point_id: str) -> bool:
    try:
        return memory.point(point_id).active
    except KeyError:
        return False
