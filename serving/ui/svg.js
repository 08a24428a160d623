// Graph drawings in plain SVG, laid out deterministically (the same data always gives the same picture).
import { s } from "./api.js";

const short = (text, n = 24) => (text.length <= n ? text : `${text.slice(0, n - 1)}…`);

// An entity in the middle, its neighbours on a circle, one line per relation; a click opens a neighbour.
export function neighbourhood(center, neighbours, relations, onPick) {
  const W = 720, H = 460, cx = W / 2, cy = H / 2, r = Math.min(W, H) / 2 - 60;
  const pos = new Map([[center.entity_id, [cx, cy]]]);
  neighbours.forEach((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(neighbours.length, 1) - Math.PI / 2;
    pos.set(n.entity_id, [cx + r * Math.cos(a), cy + r * Math.sin(a)]);
  });
  const edges = relations.filter((rel) => pos.has(rel.source_id) && pos.has(rel.target_id)).map((rel) => {
    const [[x1, y1], [x2, y2]] = [pos.get(rel.source_id), pos.get(rel.target_id)];
    return s("line", { class: "edge", x1, y1, x2, y2 }, s("title", { text: rel.description }));
  });
  const node = (e, isCenter) => {
    const [x, y] = pos.get(e.entity_id);
    return s("g", { class: isCenter ? "node center" : "node", "data-id": e.entity_id,
                    onclick: isCenter ? null : () => onPick(e.entity_id) },
      s("title", { text: `${e.name} (${e.type}): ${e.description}` }),
      s("circle", { cx: x, cy: y, r: isCenter ? 14 : 10 }),
      s("text", { x, y: y + (isCenter ? 30 : 24), "text-anchor": "middle", text: short(e.name) }));
  };
  return s("svg", { class: "graph", id: "neighbourhood", viewBox: `0 0 ${W} ${H}`, role: "img",
                    "aria-label": `neighbourhood of ${center.name}` },
    edges, neighbours.map((n) => node(n, false)), node(center, true));
}

// A hypergraph memory as its incidence graph: active points on the left, entities on the right,
// a line from each point to each entity it joins; `marks` maps a point id to its class at this step.
export function memory(snapshot, marks) {
  const points = (snapshot?.points || []).filter((p) => !p.merged_into);
  const vertices = snapshot?.vertices || [];
  const W = 760, rowP = 44, rowE = 30;
  const H = Math.max(points.length * rowP, vertices.length * rowE, 60) + 30;
  const px = 20, pw = 300, ex = 560;
  const py = (i) => 20 + i * rowP + (H - 30 - points.length * rowP) / 2;
  const ey = new Map(vertices.map((v, i) => [v.entity_id, 25 + i * rowE + (H - 30 - vertices.length * rowE) / 2]));
  const lines = points.flatMap((p, i) => p.vertex_ids.filter((v) => ey.has(v)).map((v) =>
    s("line", { class: "edge", x1: px + pw, y1: py(i) + 15, x2: ex - 10, y2: ey.get(v) })));
  const boxes = points.map((p, i) =>
    s("g", { class: `point ${marks[p.point_id] || ""}`.trim(), "data-id": p.point_id },
      s("title", { text: `[${p.point_id}] ${p.description}` }),
      s("rect", { x: px, y: py(i), width: pw, height: 30, rx: 4 }),
      s("text", { x: px + 8, y: py(i) + 19, text: `${p.point_id}  ${short(p.description, 44)}` })));
  const ents = vertices.map((v) =>
    s("g", { class: v.in_graph ? "entity" : "entity new" },
      s("title", { text: v.in_graph ? v.name : `${v.name} (not in the graph)` }),
      s("circle", { cx: ex, cy: ey.get(v.entity_id), r: 8 }),
      s("text", { x: ex + 14, y: ey.get(v.entity_id) + 4, text: short(v.name, 26) })));
  return s("svg", { class: "graph", id: "hg-memory", viewBox: `0 0 ${W} ${H}`, role: "img",
                    "aria-label": "hypergraph memory after this step" }, lines, boxes, ents);
}
