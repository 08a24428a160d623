// Graphs: pick a graph, find entities by name, open one: its neighbourhood, relations and source chunks.
import { $, call, fill, guarded, h, table, num } from "./api.js";
import { neighbourhood } from "./svg.js";

let current = null;
const error = () => $("graphs-error");

export const chunkBox = (c) => h("div", { class: "chunk", "data-id": c.chunk_id },
  h("span", { class: "id", text: c.chunk_id }), c.text);

export async function listGraphs() {
  const out = await guarded(error(), () => call("v1/graphs"));
  return out ? out.graphs : [];
}

function pick(graph, items) {
  current = graph;
  for (const li of items) li.classList.toggle("active", li.dataset.graph === graph);
  fill($("entity-hits"));
  fill($("entity-view"), h("p", { class: "note", text: `Search the entities of ${graph}.` }));
}

export async function show() {
  const graphs = await listGraphs();
  const items = graphs.map((g) => h("li", { class: "graph-item", "data-graph": g.graph, onclick: () => pick(g.graph, items) },
    h("strong", { text: g.graph }), " ",
    h("span", { class: "meta", text: Object.entries(g.counts).map(([k, v]) => `${v} ${k}`).join(", ") })));
  fill($("graph-list"), items.length ? items : h("li", { class: "meta", text: "no graphs are served" }));
  if (items.length && !graphs.some((g) => g.graph === current)) pick(graphs[0].graph, items);
}

async function search(event) {
  event.preventDefault();
  const q = $("entity-q").value.trim();
  if (!current || !q) return;
  const out = await guarded(error(), () => call(`v1/graphs/${current}/entities`, { query: { q, k: 10 } }));
  if (!out) return;
  fill($("entity-hits"), out.hits.map((e) => h("li", { class: "entity-hit", "data-id": e.entity_id, onclick: () => open(e.entity_id) },
    e.name, " ", h("span", { class: "meta", text: `${e.type} · ${num(e.score, 2)}` }))));
}

export async function open(entityId, graph = current) {
  const view = await guarded(error(), () => call(`v1/graphs/${graph}/entities/${encodeURIComponent(entityId)}`));
  if (!view) return;
  const names = new Map([view.entity, ...view.neighbours].map((e) => [e.entity_id, e.name]));
  const rows = view.relations.map((r) => {
    const other = r.source_id === view.entity.entity_id ? r.target_id : r.source_id;
    return h("tr", { class: "relation" }, h("td", { text: names.get(other) || other }), h("td", { text: r.description }),
      h("td", { class: "num", text: num(r.weight, 2) }), h("td", { text: r.chunk_ids.join(", ") }));
  });
  fill($("entity-view"),
    h("h2", { id: "entity-name", text: view.entity.name }),
    h("p", { class: "note", text: `${view.entity.type} · ${view.entity.entity_id}` }),
    h("p", { text: view.entity.description }),
    neighbourhood(view.entity, view.neighbours, view.relations, (id) => open(id, graph)),
    h("h3", { text: `Relations (${view.relations.length})` }),
    table(["with", "relation", "weight", "chunks"], rows, { id: "relations" }),
    h("h3", { text: `Source chunks (${view.chunks.length})` }),
    h("div", { id: "entity-chunks" }, view.chunks.map(chunkBox)));
}

export function init() {
  $("entity-form").addEventListener("submit", search);
}
