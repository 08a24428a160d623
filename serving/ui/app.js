// The page's frame: without a token only the login field shows; with one, the views it reaches.
import { $, ApiError, call, token } from "./api.js";
import * as graphs from "./graphs.js";
import * as hgmem from "./hgmem.js";
import * as teams from "./teams.js";

const VIEWS = { graphs, hgmem, teams };
let whoami = null;

function reached(view) {
  return view === "teams" ? Boolean(whoami.team) : whoami.reader;
}

function select(view) {
  for (const b of document.querySelectorAll("#tabs button[data-view]")) b.classList.toggle("active", b.dataset.view === view);
  for (const name of Object.keys(VIEWS)) $(`view-${name}`).hidden = name !== view;
  VIEWS[view].show(whoami);
}

function loggedOut(message = "") {
  whoami = null;
  $("app").hidden = true;
  $("tabs").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message;
}

async function enter() {
  try {
    whoami = await call("v1/whoami");
  } catch (err) {
    token.clear();
    loggedOut(err instanceof ApiError ? err.message : `the service did not answer (${err.message})`);
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("tabs").hidden = false;
  $("who").textContent = whoami.team ? `team ${whoami.team}` : "reader";
  const tabs = [...document.querySelectorAll("#tabs button[data-view]")];
  tabs.forEach((b) => { b.hidden = !reached(b.dataset.view); });
  const first = tabs.find((b) => !b.hidden);
  if (first) select(first.dataset.view);
}

function init() {
  for (const view of Object.values(VIEWS)) view.init();
  for (const b of document.querySelectorAll("#tabs button[data-view]")) b.addEventListener("click", () => select(b.dataset.view));
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    token.set(value);
    $("token").value = "";
    enter();
  });
  $("logout").addEventListener("click", () => { token.clear(); loggedOut(); });
  if (token.get()) enter(); else loggedOut();
}

init();
