"""The extraction protocol: chunk texts in, entity and relation mentions out.

Two extractors implement it: the LLM-free spaCy one (the embedded default) and
the schema-constrained LLM one. Mentions are per chunk; :mod:`memgraft.graph.merge`
turns all of them into one graph.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

ENTITY_TYPES = ("organization", "person", "geo", "event", "role", "concept")


@dataclass
class EntityMention:
    name: str
    type: str
    description: str


@dataclass
class RelationMention:
    source: str
    target: str
    description: str
    strength: float = 1.0


@dataclass
class Extraction:
    entities: list[EntityMention] = field(default_factory=list)
    relations: list[RelationMention] = field(default_factory=list)
    error: str | None = None  # set when the extractor gave up on this chunk
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class Extractor(Protocol):
    name: str

    def extract(self, texts: Sequence[str]) -> list[Extraction]: ...


def extract_batch(extractor: Extractor, batch: dict[str, Any]) -> dict[str, Any]:
    """Add ``entities``/``relations``/``extract_error`` columns to a batch of chunks."""
    results = extractor.extract(list(batch["text"]))
    out = dict(batch)
    out["entities"] = [[asdict(e) for e in r.entities] for r in results]
    out["relations"] = [[asdict(r_) for r_ in r.relations] for r in results]
    out["extract_error"] = [r.error or "" for r in results]
    out["extract_tokens"] = [r.prompt_tokens + r.completion_tokens for r in results]
    return out
