// Teams: a team's memories as of a time (a slider over its groups' times, the last stop "now"), each with
// type, both texts and validity; one memory's decisions; a search showing each score that ranked a hit.
import { $, call, fill, guarded, h, table, num } from "./api.js";

const error = () => $("teams-error");
let team = null, times = [];

const asOf = () => {
  const i = Number($("team-slider").value);
  return i < times.length ? times[i] : null;
};
const valid = (m) => h("td", { class: m.valid ? "valid-yes" : "valid-no", text: m.valid ? "valid" : "invalid" });

export function show(whoami) {
  if (!$("team-name").value && whoami.team) $("team-name").value = whoami.team;
}

async function open(event) {
  event?.preventDefault();
  const name = $("team-name").value.trim();
  $("team-body").hidden = true;
  fill($("team-memories")), fill($("team-history")), fill($("team-hits"));
  if (!name) return;
  const now = await guarded(error(), () => call(`v1/teams/${encodeURIComponent(name)}/memories`));
  if (!now) return;
  team = name;
  times = [...new Set(now.memories.map((m) => m.time))].sort();
  Object.assign($("team-slider"), { min: 0, max: times.length, value: times.length });
  $("team-body").hidden = false;
  draw(now);
}

function draw(out) {
  $("team-asof").textContent = out.as_of ? `${out.as_of} (after group time ${Number($("team-slider").value) + 1} of ${times.length})`
    : `now (${times.length} group times)`;
  const rows = out.memories.map((m) => h("tr", { class: "memory", "data-id": m.memory_id },
    h("td", { text: m.memory_id }), h("td", { text: m.type }), h("td", { text: m.original }), h("td", { text: m.maintained }), valid(m),
    h("td", { text: `${m.group_id} · ${m.time}` }),
    h("td", {}, h("button", { type: "button", class: "history", onclick: () => history(m.memory_id), text: "history" }))));
  fill($("team-memories"), table(["memory", "type", "original", "maintained", "validity", "group · time", ""], rows));
}

async function slide() {
  const out = await guarded(error(), () => call(`v1/teams/${encodeURIComponent(team)}/memories`, { query: { as_of: asOf() } }));
  if (out) draw(out);
}

async function history(memoryId) {
  const out = await guarded(error(), () => call(`v1/teams/${encodeURIComponent(team)}/history`, { query: { memory_id: memoryId } }));
  if (!out) return;
  const m = out.memory;
  fill($("team-history"),
    h("h3", { text: `History of ${m.memory_id}: ${out.decisions.length} decision(s)` }),
    h("p", {}, `now: “${m.maintained}” `, h("span", { class: m.valid ? "valid-yes" : "valid-no", text: m.valid ? "valid" : "invalid" })),
    out.decisions.map((d) => h("div", { class: "decision", "data-id": d.decision_id },
      h("strong", { text: `${d.decided_at} · group ${d.group_id} · ${d.level} · ${d.relation} → ${d.action}` }),
      h("div", { text: `text: “${d.before}” → “${d.after}”` }),
      h("div", { text: `valid: ${d.valid_before} → ${d.valid_after} · by ${d.decided_by}${d.reason ? ` · ${d.reason}` : ""}` }))));
}

async function search(event) {
  event.preventDefault();
  const query = $("team-q").value.trim();
  if (!team || !query) return;
  const out = await guarded(error(), () => call(`v1/teams/${encodeURIComponent(team)}/search`,
    { method: "POST", body: { query, k: 10, as_of: asOf() } }));
  if (!out) return;
  $("team-sources").textContent = `S_sem: ${out.semantic_source} · S_val: ${out.validity_source}`;
  const rows = out.hits.map((hit) => h("tr", { class: "hit", "data-id": hit.memory.memory_id },
    h("td", { text: hit.memory.memory_id }), h("td", { text: hit.memory.maintained }), valid(hit.memory),
    ["dense", "semantic", "validity", "score"].map((k) => h("td", { class: `num ${k}`, text: num(hit[k]) }))));
  fill($("team-hits"), table(["memory", "maintained", "validity", "dense", "semantic", "S_val", "final"], rows));
}

export function init() {
  $("team-form").addEventListener("submit", open);
  $("team-slider").addEventListener("input", slide);
  $("team-search-form").addEventListener("submit", search);
}
