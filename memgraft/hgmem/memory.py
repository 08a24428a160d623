"""HGMem's working memory: a hypergraph whose vertices are entities and whose
hyperedges are *memory points*, each a description joining two or more entities.

The reasoning loop evolves it with three operations (paper, Algorithm 1):
``insert`` new points, ``update`` existing ones and ``merge`` cohesive points
into a higher-order one. Nothing is ever deleted: merged parents stay stored,
marked with ``merged_into``, and updated descriptions go to ``history``, so a
trace can show how each piece of memory came to be.

Pure Python, no models and no Ray: the loop, the exporters and the tests all
drive it directly.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, NoReturn

FORMAT_VERSION = 1


class InvalidMemoryOperation(ValueError):
    """An insert/update/merge the memory refuses (the LLM proposed something impossible)."""


class MemoryInvariantError(AssertionError):
    """The stored memory is inconsistent: a bug, never an LLM mistake."""


def _unique(items: Iterable[str]) -> list[str]:
    """Order-preserving de-duplication: ids keep the order they were first seen in."""
    return list(dict.fromkeys(items))


@dataclass
class Vertex:
    """An entity in memory. ``in_graph`` is False when the LLM named an entity the
    graph lacks: kept (its point may still be right) but marked, so retrieval
    and readers know it has no graph neighbourhood."""

    entity_id: str
    name: str
    in_graph: bool
    chunk_ids: list[str] = field(default_factory=list)
    description: str = ""


@dataclass
class MemoryPoint:
    """A hyperedge: one piece of what the model has learnt, joining ≥ 2 entities."""

    point_id: str
    description: str
    vertex_ids: list[str]
    chunk_ids: list[str] = field(default_factory=list)
    created_step: int = 0
    updated_steps: list[int] = field(default_factory=list)
    merged_from: list[str] = field(default_factory=list)
    merged_into: str | None = None
    history: list[str] = field(default_factory=list)
    relation_ids: list[str] = field(default_factory=list)  # the graph's relations it came from

    @property
    def active(self) -> bool:
        return self.merged_into is None


class HypergraphMemory:
    """The per-question working memory. Point ids are ``p1``, ``p2``… in creation
    order, so the same sequence of operations always gives the same memory."""

    def __init__(self) -> None:
        self._vertices: dict[str, Vertex] = {}
        self._points: dict[str, MemoryPoint] = {}
        self._next = 1

    # ---- vertices -------------------------------------------------------------------

    def add_vertex(self, entity_id: str, name: str, in_graph: bool,
                   chunk_ids: Iterable[str] = (), description: str = "") -> Vertex:
        """Add an entity, or enrich it if present: chunks are unioned, ``in_graph``
        stays True once anyone saw it in the graph, a missing description is filled."""
        vertex = self._vertices.get(entity_id)
        if vertex is None:
            vertex = Vertex(entity_id, name, bool(in_graph), _unique(chunk_ids), description)
            self._vertices[entity_id] = vertex
            return vertex
        vertex.in_graph = vertex.in_graph or bool(in_graph)
        vertex.chunk_ids = _unique([*vertex.chunk_ids, *chunk_ids])
        vertex.name = vertex.name or name
        vertex.description = vertex.description or description
        return vertex

    def vertex(self, entity_id: str) -> Vertex:
        try:
            return self._vertices[entity_id]
        except KeyError:
            raise KeyError(f"no vertex {entity_id!r} in memory") from None

    def has_vertex(self, entity_id: str) -> bool:
        return entity_id in self._vertices

    # ---- the three operations -------------------------------------------------------

    def insert(self, description: str, vertex_ids: Iterable[str], chunk_ids: Iterable[str],
               step: int, *, fold: bool = True, relation_ids: Iterable[str] = ()) -> MemoryPoint:
        """Add a memory point joining ``vertex_ids`` (repeats dropped; ≥ 2 must remain).

        With ``fold``, if an active point already joins exactly the same vertex set,
        that point is updated with the new description and returned instead: two
        hyperedges over one vertex set would say two things about the same entities,
        which the paper's update operation exists to reconcile, and it keeps retrieval
        from seeing duplicates. The no-update ablation passes ``fold=False``: there,
        memory only grows, so the second point stands beside the first.
        """
        vids = self._checked_vertices(vertex_ids, "insert")
        description = self._checked_description(description, "insert")
        for point in self.active_points() if fold else ():
            if set(point.vertex_ids) == set(vids):
                return self.update(point.point_id, description, step, add_chunk_ids=chunk_ids,
                                   add_relation_ids=relation_ids)
        point = MemoryPoint(self._new_id(), description, vids, _unique(chunk_ids), created_step=step,
                            relation_ids=_unique(relation_ids))
        self._points[point.point_id] = point
        return point

    def update(self, point_id: str, description: str, step: int,
               add_vertex_ids: Iterable[str] = (), add_chunk_ids: Iterable[str] = (),
               add_relation_ids: Iterable[str] = ()) -> MemoryPoint:
        """Rewrite an active point's description (the old one goes to ``history``) and
        widen it with more vertices or chunks. Merged-away points are frozen: the
        model must update the point they were merged into."""
        point = self._active(point_id, "update")
        description = self._checked_description(description, "update")
        new_vids = list(add_vertex_ids)
        missing = [v for v in new_vids if v not in self._vertices]
        if missing:
            raise InvalidMemoryOperation(f"update {point_id}: unknown vertices {missing}")
        if description != point.description:
            point.history.append(point.description)
            point.description = description
        point.vertex_ids = _unique([*point.vertex_ids, *new_vids])
        point.chunk_ids = _unique([*point.chunk_ids, *add_chunk_ids])
        point.relation_ids = _unique([*point.relation_ids, *add_relation_ids])
        point.updated_steps.append(step)
        return point

    def merge(self, point_ids: Iterable[str], description: str, step: int) -> MemoryPoint:
        """Fuse ≥ 2 active points into one higher-order point over the union of their
        vertices and chunks. Parents become inactive (``merged_into``) but stay
        stored, so the trace can show what a merged point came from."""
        pids = _unique(point_ids)
        if len(pids) < 2:
            raise InvalidMemoryOperation(f"merge needs at least 2 distinct points, got {pids}")
        parents = [self._active(pid, "merge") for pid in pids]
        description = self._checked_description(description, "merge")
        point = MemoryPoint(
            self._new_id(), description,
            vertex_ids=_unique(v for p in parents for v in p.vertex_ids),
            chunk_ids=_unique(c for p in parents for c in p.chunk_ids),
            created_step=step, merged_from=pids,
            relation_ids=_unique(r for p in parents for r in p.relation_ids),
        )
        for parent in parents:
            parent.merged_into = point.point_id
        self._points[point.point_id] = point
        return point

    # ---- queries --------------------------------------------------------------------

    def point(self, point_id: str) -> MemoryPoint:
        try:
            return self._points[point_id]
        except KeyError:
            raise KeyError(f"no memory point {point_id!r}") from None

    def all_points(self) -> list[MemoryPoint]:
        """Every point ever made, merged-away ones included, in creation order."""
        return list(self._points.values())

    def active_points(self) -> list[MemoryPoint]:
        return [p for p in self._points.values() if p.active]

    def vertices_of(self, point_id: str) -> list[Vertex]:
        return [self._vertices[v] for v in self.point(point_id).vertex_ids]

    def points_of_vertex(self, entity_id: str) -> list[MemoryPoint]:
        return [p for p in self.active_points() if entity_id in p.vertex_ids]

    def vertices(self) -> list[Vertex]:
        return list(self._vertices.values())

    def entity_ids(self, active_only: bool = False) -> list[str]:
        """Entities in memory, in the order added. Points only join added vertices, so
        this already covers every active point; ``active_only`` keeps just those
        some active point joins (e.g. for "search beyond memory")."""
        if not active_only:
            return list(self._vertices)
        return _unique(v for p in self.active_points() for v in p.vertex_ids)

    def chunk_ids(self) -> list[str]:
        """Evidence for the answer: each active point's chunks, then its vertices'
        chunks, point by point in creation order, first occurrence wins."""
        out: list[str] = []
        for p in self.active_points():
            out.extend(p.chunk_ids)
            for v in p.vertex_ids:
                out.extend(self._vertices[v].chunk_ids)
        return _unique(out)

    def is_empty(self) -> bool:
        return not self.active_points()

    def __len__(self) -> int:
        return len(self.active_points())

    @property
    def size(self) -> dict[str, int]:
        """Counts for logs and traces."""
        active = self.active_points()
        return {"vertices": len(self._vertices), "active_points": len(active),
                "all_points": len(self._points), "merged_points": sum(bool(p.merged_from) for p in active),
                "chunks": len(self.chunk_ids())}

    # ---- consistency ----------------------------------------------------------------

    def check_invariants(self) -> None:
        """Raise :class:`MemoryInvariantError` on the first inconsistency found."""
        def fail(msg: str) -> NoReturn:
            raise MemoryInvariantError(msg)

        for key, v in self._vertices.items():
            if v.entity_id != key:
                fail(f"vertex stored under {key!r} has id {v.entity_id!r}")
        for key, p in self._points.items():
            if p.point_id != key:
                fail(f"point stored under {key!r} has id {p.point_id!r}")
            if len(p.vertex_ids) != len(set(p.vertex_ids)):
                fail(f"{key} repeats a vertex: {p.vertex_ids}")
            if p.active and len(p.vertex_ids) < 2:
                fail(f"active {key} joins fewer than 2 vertices")
            unknown = [v for v in p.vertex_ids if v not in self._vertices]
            if unknown:
                fail(f"{key} joins unknown vertices {unknown}")
            if p.merged_into is not None and p.merged_into not in self._points:
                fail(f"{key} merged into unknown point {p.merged_into}")
            for parent_id in p.merged_from:
                parent = self._points.get(parent_id)
                if parent is None:
                    fail(f"{key} merged from unknown point {parent_id}")
                if p.active and parent.active:
                    fail(f"{key} is active but its parent {parent_id} is too")
                if parent.merged_into != key:
                    fail(f"{parent_id} is a parent of {key} but merged into {parent.merged_into}")
                if not set(parent.vertex_ids) <= set(p.vertex_ids):
                    fail(f"{key} lost vertices of its parent {parent_id}")

    def check_grounded(self, is_entity: Callable[[str], bool]) -> None:
        """Raise :class:`MemoryInvariantError` unless memory is built from the graph: every vertex is one of
        its entities (``is_entity``) and every active point cites a chunk. The loop holds this by construction
        (its schemas offer only retrieved names); this says so after every step, loudly, if it ever stops."""
        for v in self._vertices.values():
            if not (v.in_graph and is_entity(v.entity_id)):
                raise MemoryInvariantError(f"vertex {v.name!r} ({v.entity_id}) is not an entity of the graph")
        for p in self.active_points():
            if not p.chunk_ids:
                raise MemoryInvariantError(f"{p.point_id} cites no chunk")

    # ---- serialisation --------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; ``from_dict`` rebuilds the exact memory."""
        return {
            "version": FORMAT_VERSION,
            "next_id": self._next,
            "vertices": [asdict(v) for v in self._vertices.values()],
            "points": [asdict(p) for p in self._points.values()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HypergraphMemory":
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unsupported memory format version {data.get('version')!r}")
        memory = cls()
        for v in data["vertices"]:
            v = copy.deepcopy(v)
            memory._vertices[v["entity_id"]] = Vertex(**v)
        for p in data["points"]:
            p = copy.deepcopy(p)
            memory._points[p["point_id"]] = MemoryPoint(**p)
        memory._next = int(data["next_id"])
        return memory

    def snapshot(self) -> dict[str, Any]:
        """A deep copy as a dict, safe to keep in a trace while memory evolves."""
        return copy.deepcopy(self.to_dict())

    # ---- prompts --------------------------------------------------------------------

    def render(self, max_chars: int | None = None, size: Callable[[str], int] = len) -> str:
        """Active points, one line each: ``[p3] description (entities: A, B, C)``.

        With ``max_chars`` whole lines are kept while they fit, then a note says how
        many were left out; the result never exceeds ``max_chars`` as ``size`` measures
        it (characters; or a token counter's ``count``, the limit then in tokens).
        """
        lines = [
            f"[{p.point_id}] {p.description} (entities: "
            + ", ".join(self._vertices[v].name for v in p.vertex_ids) + ")"
            for p in self.active_points()
        ]
        text = "\n".join(lines)
        if max_chars is None or size(text) <= max_chars:
            return text
        kept: list[str] = []
        for i, line in enumerate(lines):
            note = f"[... {len(lines) - i} more memory points left out]"
            if size("\n".join([*kept, line, note])) > max_chars:
                candidate = "\n".join([*kept, note])
                return candidate if size(candidate) <= max_chars else "\n".join(kept)
            kept.append(line)
        return "\n".join(kept)  # not reached: the full text did not fit

    # ---- internals ------------------------------------------------------------------

    def _new_id(self) -> str:
        pid = f"p{self._next}"
        self._next += 1
        return pid

    def _active(self, point_id: str, op: str) -> MemoryPoint:
        point = self._points.get(point_id)
        if point is None:
            raise InvalidMemoryOperation(f"{op}: no memory point {point_id!r}")
        if not point.active:
            raise InvalidMemoryOperation(
                f"{op}: {point_id} was merged into {point.merged_into} and is no longer active")
        return point

    def _checked_vertices(self, vertex_ids: Iterable[str], op: str) -> list[str]:
        vids = _unique(vertex_ids)
        missing = [v for v in vids if v not in self._vertices]
        if missing:
            raise InvalidMemoryOperation(f"{op}: unknown vertices {missing}; add_vertex them first")
        if len(vids) < 2:
            raise InvalidMemoryOperation(f"{op}: a memory point joins at least 2 distinct vertices, got {vids}")
        return vids

    @staticmethod
    def _checked_description(description: str, op: str) -> str:
        if not isinstance(description, str) or not description.strip():
            raise InvalidMemoryOperation(f"{op}: a memory point needs a non-empty description")
        return description.strip()
