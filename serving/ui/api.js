// The page's only door to the service: the token kept for this browser session, JSON calls with it,
// and small DOM builders that set text (never HTML), so no stored text can run as markup.

const KEY = "memgraft-token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function why(status, data) {
  const detail = data && data.detail;
  const text = typeof detail === "string" ? detail : JSON.stringify(detail ?? data);
  return `${status} ${(data && data.error) || ""}: ${text}`.replace(" :", ":");
}

// Paths are relative to the page (/ui/), so the page also works behind a route prefix.
export async function call(path, { method = "GET", body, query } = {}) {
  const url = new URL(`../${path}`, document.baseURI);
  for (const [name, value] of Object.entries(query || {})) {
    if (value == null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, one);
  }
  const headers = { Authorization: `Bearer ${token.get()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, why(res.status, data));
  return data;
}

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (name === "text") el.textContent = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
export const s = (tag, attrs, ...children) =>
  build(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);

export function fill(el, ...children) {
  el.replaceChildren();
  return build(el, {}, children);
}

export const $ = (id) => document.getElementById(id);

// Run an async action, showing its failure (with the service's status and reason) in one place.
export async function guarded(errorEl, action) {
  errorEl.textContent = "";
  try {
    return await action();
  } catch (err) {
    errorEl.textContent = err.message;
    return undefined;
  }
}

export function table(headers, rows, attrs = {}) {
  return h("table", { class: "grid", ...attrs },
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { text: name })))),
    h("tbody", {}, rows));
}

// Fixed decimals, and no "-0.000" for a score that rounds to zero from below.
export const num = (x, digits = 3) => (x == null ? "—" : (Number(x) + 0).toFixed(digits).replace(/^-(0\.0*)$/, "$1"));
