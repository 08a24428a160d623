"""Draw a hypergraph memory for people: GraphML for graph tools, and one
standalone HTML file (inline SVG, no scripts, no network) to open offline.

A hypergraph is drawn as its bipartite incidence graph: one node per entity,
one per memory point, and an edge from each point to each entity it joins.
Everything here accepts a :class:`HypergraphMemory` or a snapshot dict, so a
stored trace can be drawn without re-running anything.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Iterable, Union

import networkx as nx

from memgraft.hgmem.memory import HypergraphMemory, MemoryPoint

MemoryLike = Union[HypergraphMemory, dict]

_W, _H, _MARGIN = 960, 600, 60


def _as_memory(memory: MemoryLike) -> HypergraphMemory:
    return memory if isinstance(memory, HypergraphMemory) else HypergraphMemory.from_dict(memory)


def entity_node(entity_id: str) -> str:
    return f"entity:{entity_id}"


def point_node(point_id: str) -> str:
    return f"point:{point_id}"


def _steps(p: MemoryPoint) -> str:
    return ",".join(str(s) for s in p.updated_steps)


def to_networkx(memory: MemoryLike, include_history: bool = False) -> nx.DiGraph:
    """The bipartite incidence graph (point → entity edges, ``kind=joins``). With
    ``include_history`` merged-away points are added too, each with a
    ``kind=merged_into`` edge to the point that replaced it. Attribute values are
    plain str/int/bool so GraphML can store them."""
    mem = _as_memory(memory)
    g = nx.DiGraph()
    for v in mem.vertices():
        g.add_node(entity_node(v.entity_id), kind="entity", entity_id=v.entity_id, name=v.name,
                   in_graph=v.in_graph, description=v.description, chunk_ids=",".join(v.chunk_ids))
    points = mem.all_points() if include_history else mem.active_points()
    for p in points:
        g.add_node(point_node(p.point_id), kind="memory_point", point_id=p.point_id,
                   description=p.description, active=p.active, created_step=p.created_step,
                   updated_steps=_steps(p), merged_from=",".join(p.merged_from),
                   merged_into=p.merged_into or "", chunk_ids=",".join(p.chunk_ids))
        for v in p.vertex_ids:
            g.add_edge(point_node(p.point_id), entity_node(v), kind="joins")
    if include_history:
        for p in points:
            if p.merged_into:
                g.add_edge(point_node(p.point_id), point_node(p.merged_into), kind="merged_into")
    return g


def to_graphml(memory: MemoryLike, path: str | Path, include_history: bool = False) -> Path:
    path = Path(path)
    nx.write_graphml(to_networkx(memory, include_history), path)
    return path


# ---- HTML -----------------------------------------------------------------------------

def _colour(i: int) -> str:
    """Golden-angle hues: neighbouring points get clearly different colours."""
    return f"hsl({(i * 137.508) % 360:.1f}, 65%, 42%)"


def _layout(g: nx.DiGraph, seed: int) -> dict[str, tuple[float, float]]:
    """Spring layout with a fixed seed (same memory, same picture), scaled to the SVG box."""
    if g.number_of_nodes() == 0:
        return {}
    raw = nx.spring_layout(g.to_undirected(), seed=seed)
    xs = [float(p[0]) for p in raw.values()]
    ys = [float(p[1]) for p in raw.values()]

    def scale(value: float, lo: float, hi: float, size: int) -> float:
        if hi - lo < 1e-9:
            return size / 2
        return _MARGIN + (value - lo) / (hi - lo) * (size - 2 * _MARGIN)

    return {n: (scale(float(p[0]), min(xs), max(xs), _W), scale(float(p[1]), min(ys), max(ys), _H))
            for n, p in raw.items()}


def _short(text: str, n: int = 28) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _svg(mem: HypergraphMemory, pos: dict[str, tuple[float, float]]) -> str:
    if not mem.vertices() and not mem.active_points():
        return '<p class="empty">(memory is empty)</p>'
    parts = [f'<svg viewBox="0 0 {_W} {_H}" role="img" aria-label="hypergraph memory">']
    for i, p in enumerate(mem.active_points()):
        colour = _colour(i)
        px, py = pos[point_node(p.point_id)]
        names = ", ".join(mem.vertex(v).name for v in p.vertex_ids)
        parts.append(f'<g class="point"><title>{escape(f"[{p.point_id}] {p.description} (entities: {names})")}</title>')
        for v in p.vertex_ids:
            vx, vy = pos[entity_node(v)]
            parts.append(f'<line x1="{px:.1f}" y1="{py:.1f}" x2="{vx:.1f}" y2="{vy:.1f}" stroke="{colour}"/>')
        d = 9
        parts.append(f'<polygon points="{px:.1f},{py - d:.1f} {px + d:.1f},{py:.1f} {px:.1f},{py + d:.1f} '
                     f'{px - d:.1f},{py:.1f}" fill="{colour}"/>')
        parts.append(f'<text class="pid" x="{px + 11:.1f}" y="{py - 8:.1f}" fill="{colour}">{escape(p.point_id)}</text></g>')
    for v in mem.vertices():
        x, y = pos[entity_node(v.entity_id)]
        tip = v.name + (f": {v.description}" if v.description else "") + ("" if v.in_graph else " (not in the graph)")
        dash = "" if v.in_graph else ' stroke-dasharray="4 3"'
        parts.append(f'<g class="entity"><title>{escape(tip)}</title>'
                     f'<circle cx="{x:.1f}" cy="{y:.1f}" r="10"{dash}/>'
                     f'<text x="{x:.1f}" y="{y + 24:.1f}">{escape(_short(v.name))}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def _table(mem: HypergraphMemory) -> str:
    rows = []
    for p in mem.all_points():
        names = ", ".join(mem.vertex(v).name for v in p.vertex_ids)
        steps = f"created {p.created_step}" + (f"; updated {', '.join(map(str, p.updated_steps))}"
                                               if p.updated_steps else "")
        status = "active" if p.active else f"merged into {p.merged_into}"
        history = "".join(f'<div class="old">was: {escape(h)}</div>' for h in p.history)
        cells = [p.point_id, status]
        rows.append(
            f'<tr class="{"active" if p.active else "inactive"}">'
            + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + f"<td>{escape(p.description)}{history}</td>"
            + "".join(f"<td>{escape(c)}</td>" for c in
                      [names, str(len(p.chunk_ids)), steps, ", ".join(p.merged_from)])
            + "</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in
                   ["id", "status", "description", "entities", "chunks", "steps", "merged from"])
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>"


def _section(mem: HypergraphMemory, heading: str, pos: dict[str, tuple[float, float]]) -> str:
    size = mem.size
    summary = (f'{size["active_points"]} active memory points ({size["all_points"]} made), '
               f'{size["vertices"]} entities, {size["chunks"]} chunks')
    return (f"<section><h2>{escape(heading)}</h2><p class=\"summary\">{escape(summary)}</p>\n"
            f"{_svg(mem, pos)}\n{_table(mem)}</section>")


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
svg { width: 100%; max-width: 960px; border: 1px solid #ddd; background: #fcfcfc; }
svg line { stroke-width: 1.6; opacity: 0.75; }
svg circle { fill: #fff; stroke: #333; stroke-width: 1.5; }
svg text { font-size: 11px; text-anchor: middle; }
svg text.pid { text-anchor: start; font-weight: bold; }
table { border-collapse: collapse; margin-top: 1em; max-width: 1200px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; font-size: 13px; text-align: left; }
tr.inactive { color: #888; }
.old { color: #999; font-size: 12px; }
.summary, .empty { color: #555; }
"""


def _page(title: str, sections: Iterable[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n"
            f"<body><h1>{escape(title)}</h1>\n" + "\n".join(sections) + "\n</body></html>\n")


def to_html(memory: MemoryLike, path: str | Path, title: str = "HGMem working memory",
            seed: int = 0) -> Path:
    """One standalone HTML file: the memory drawn as SVG, then a table of its points."""
    mem = _as_memory(memory)
    path = Path(path)
    path.write_text(_page(title, [_section(mem, "Memory", _layout(to_networkx(mem), seed))]), encoding="utf-8")
    return path


def to_html_steps(snapshots: list[MemoryLike], path: str | Path, title: str = "HGMem memory trace",
                  labels: list[str] | None = None, seed: int = 0) -> Path:
    """A trace in one file: one section per step's snapshot, in order.

    All steps share one layout of every node any step shows, so an entity keeps its
    place from step to step and the eye sees only what changed (and the layout, the
    costly part, runs once per trace rather than once per step)."""
    if labels is not None and len(labels) != len(snapshots):
        raise ValueError(f"{len(labels)} labels for {len(snapshots)} snapshots")
    headings = labels or [f"Step {i}" for i in range(len(snapshots))]
    mems = [_as_memory(s) for s in snapshots]
    pos = _layout(nx.compose_all([to_networkx(m) for m in mems]), seed) if mems else {}
    path = Path(path)
    path.write_text(_page(title, [_section(m, h, pos) for m, h in zip(mems, headings)]), encoding="utf-8")
    return path
