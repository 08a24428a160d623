// HGMem: ask a graph a question (or open a stored trace), then step through the trace: each step's
// subqueries and evidence, the memory after it with the points it inserted, updated or merged marked,
// tokens and seconds per step, and the answer with the chunks it was given.
import { $, call, fill, guarded, h, table, num } from "./api.js";
import { memory } from "./svg.js";
import { chunkBox, listGraphs } from "./graphs.js";

const METHODS = ["hgmem", "hgmem-no-merge", "hgmem-no-update", "hgmem-local-only", "hgmem-global-only", "naive", "graph"];
const error = () => $("hgmem-error");
let trace = null;

export async function show() {
  const graphs = await listGraphs();
  const keep = $("hg-graph").value;
  fill($("hg-graph"), graphs.map((g) => h("option", { value: g.graph, text: g.graph, selected: g.graph === keep })));
}

// What each point went through at one step: inserted, updated, or the result of a merge.
export function marks(step) {
  const ops = step.operations || {};
  const out = {};
  for (const id of ops.inserts || []) out[id] = "inserted";
  for (const id of ops.updates || []) out[id] = "updated";
  for (const m of ops.merges || []) out[m.into] = "merged";
  return out;
}

const tokens = (st) => (st.prompt_tokens || 0) + (st.completion_tokens || 0);

function overview(steps) {
  const rows = steps.map((st) => {
    const ops = st.operations || {};
    return h("tr", {}, h("td", { text: st.step }),
      h("td", { text: st.judgement ? (st.judgement.sufficient ? "sufficient" : "not yet") : "—" }),
      h("td", { text: `${(ops.inserts || []).length} / ${(ops.updates || []).length} / ${(ops.merges || []).length}` }),
      h("td", { class: "num", text: st.llm_calls ?? "—" }), h("td", { class: "num", text: st.prompt_tokens ?? "—" }),
      h("td", { class: "num", text: st.completion_tokens ?? "—" }), h("td", { class: "num", text: num(st.seconds) }));
  });
  return table(["step", "judgement", "inserted / updated / merged", "LLM calls", "prompt tokens",
    "completion tokens", "seconds"], rows, { id: "hg-steps" });
}

function pointRows(snapshot, mark) {
  const names = new Map((snapshot.vertices || []).map((v) => [v.entity_id, v.name]));
  return (snapshot.points || []).map((p) => h("tr", { class: p.merged_into ? "gone" : mark[p.point_id] || "", "data-id": p.point_id },
    h("td", { text: p.point_id }),
    h("td", { text: [mark[p.point_id], p.merged_into && `merged into ${p.merged_into}`].filter(Boolean).join(", then ") }),
    h("td", { text: p.description }), h("td", { text: p.vertex_ids.map((v) => names.get(v) || v).join(", ") }),
    h("td", { text: p.chunk_ids.join(", ") })));
}

function showStep(index) {
  const st = trace.steps[index];
  for (const b of $("hg-stepper").querySelectorAll("button[data-step]")) b.classList.toggle("active", Number(b.dataset.step) === index);
  const mark = marks(st);
  const after = st.memory_after || { points: [], vertices: [] };
  const names = new Map((after.vertices || []).map((v) => [v.entity_id, v.name]));
  const concerns = st.judgement?.concerns || [];
  const subs = (st.subqueries || []).map((q) => h("tr", { class: "subquery" }, h("td", { text: q.text }), h("td", { text: q.kind }),
    h("td", { text: q.entity_ids.map((e) => names.get(e) || e).join(", ") }), h("td", { text: q.relation_ids.join(", ") }),
    h("td", { text: q.chunk_ids.join(", ") })));
  const rejected = [...(st.operations?.rejected || []), ...(st.operations?.rejected_merges || [])];
  fill($("hg-step"),
    h("h3", { text: `Step ${st.step}: ${tokens(st)} tokens, ${num(st.seconds)} s, ${st.llm_calls ?? 0} LLM calls` }),
    concerns.length ? h("ul", { class: "concerns" }, concerns.map((c) =>
      h("li", { text: `${c.kind} concern${c.point_ids.length ? ` about ${c.point_ids.join(", ")}` : ""}: ${c.subquery}` }))) : null,
    h("h4", { text: "Subqueries and retrieved evidence" }),
    table(["subquery", "kind", "entities", "relations", "chunks"], subs, { id: "hg-subqueries" }),
    h("h4", { text: "Memory after this step" }),
    h("p", { class: "legend" }, h("span", { class: "inserted", text: "inserted" }), h("span", { class: "updated", text: "updated" }),
      h("span", { class: "merged", text: "merged" })),
    memory(after, mark),
    table(["point", "at this step", "description", "entities", "chunks"], pointRows(after, mark), { id: "hg-points" }),
    rejected.length ? h("p", { class: "note", text: `rejected: ${rejected.map((r) => `${r.op}: ${r.reason}`).join("; ")}` }) : null);
}

async function render(graph, answer) {
  const steps = trace.steps || [];
  const used = trace.answer?.chunk_ids || [];
  const got = used.length ? await guarded(error(), () => call(`v1/graphs/${graph}/chunks`, { query: { ids: used } })) : null;
  fill($("hg-answer"),
    h("h3", { text: trace.question }),
    h("p", { class: "answer", id: "hg-final", text: answer ?? trace.answer?.text ?? "(the answer is in the query's response)" }),
    h("p", { class: "note", text: `stopped: ${trace.stopped ?? "—"} · answer from ${trace.answer?.source ?? "—"}` }),
    h("div", { id: "hg-used" }, (got?.chunks || []).map(chunkBox)));
  fill($("hg-overview"), steps.length ? overview(steps) : h("p", { class: "note", text: "this method keeps no working memory" }));
  fill($("hg-stepper"), steps.length ? [
    h("button", { type: "button", id: "hg-prev", onclick: () => move(-1), text: "◀" }),
    steps.map((st, i) => h("button", { type: "button", "data-step": i, onclick: () => showStep(i), text: `step ${st.step}` })),
    h("button", { type: "button", id: "hg-next", onclick: () => move(1), text: "▶" })] : []);
  fill($("hg-step"));
  if (steps.length) showStep(0);
}

function move(by) {
  const active = $("hg-stepper").querySelector("button.active");
  const at = active ? Number(active.dataset.step) : 0;
  showStep(Math.min(Math.max(at + by, 0), trace.steps.length - 1));
}

async function ask(event) {
  event.preventDefault();
  const graph = $("hg-graph").value, question = $("hg-question").value.trim();
  if (!graph || !question) return;
  $("hg-status").textContent = "thinking…";
  const out = await guarded(error(), () => call(`v1/graphs/${graph}/query`, { method: "POST", body: { question, method: $("hg-method").value } }));
  $("hg-status").textContent = out ? `trace ${out.trace_id}: ${out.steps} steps, ${out.llm_calls} LLM calls, ` +
    `${out.prompt_tokens + out.completion_tokens} tokens, ${num(out.seconds)} s` : "";
  if (!out) return;
  $("hg-trace-id").value = out.trace_id;
  trace = await guarded(error(), () => call(`v1/traces/${out.trace_id}`));
  if (trace) await render(graph, out.answer);
}

async function load() {
  const id = $("hg-trace-id").value.trim();
  if (!id) return;
  trace = await guarded(error(), () => call(`v1/traces/${encodeURIComponent(id)}`));
  if (trace) await render($("hg-graph").value, null);
}

export function init() {
  fill($("hg-method"), METHODS.map((m) => h("option", { value: m, text: m })));
  $("hg-form").addEventListener("submit", ask);
  $("hg-load").addEventListener("click", load);
}
