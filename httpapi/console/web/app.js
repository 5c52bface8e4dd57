// The console's shell: sign-in state, the agent picker, in-page routing
// (history API under /console), and the live notification stream of the
// picked agent, which every page can listen to ("veil:note" events).
import { h, fill, errorBox, toast } from "./dom.js";
import { apiKey, signOut, get, paths, stream } from "./api.js";
import * as signin from "./pages/signin.js";
import * as agents from "./pages/agents.js";
import * as money from "./pages/money.js";
import * as chat from "./pages/chat.js";
import * as notifications from "./pages/notifications.js";
import * as explorer from "./pages/explorer.js";
import * as keys from "./pages/keys.js";
import * as audit from "./pages/audit.js";

const main = document.getElementById("app");
const AGENT = "veil.agent";
let page = null; // the current page's AbortController
let agentList = null;
let live = null; // the notification stream's AbortController
let unread = 0;

export function navigate(href, replace) {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  route();
}

// currentAgent is the picked agent (kept for the tab), else the first.
function currentAgent() {
  if (!agentList || agentList.length === 0) return null;
  const id = sessionStorage.getItem(AGENT);
  return agentList.find((a) => a.id === id) || agentList[0];
}

export function pickAgent(id) {
  sessionStorage.setItem(AGENT, id);
  syncPicker();
  startLive();
  route();
}

export async function reloadAgents() {
  agentList = await get(paths.agents());
  syncPicker();
  startLive();
  return agentList;
}

function syncPicker() {
  const sel = document.getElementById("agent-select");
  const cur = currentAgent();
  fill(sel, ...(agentList || []).map((a) => h("option", { value: a.id, selected: cur && a.id === cur.id }, a.name + ".veil")));
  document.getElementById("agent-pick").hidden = !agentList || agentList.length === 0;
}

function startLive() {
  const cur = currentAgent();
  if (live && live.agent === (cur && cur.id)) return;
  if (live) live.abort();
  live = null;
  unread = 0;
  showUnread();
  if (!cur || !apiKey()) return;
  live = new AbortController();
  live.agent = cur.id;
  stream(cur.id, (n) => {
    unread++;
    showUnread();
    toast(n.title);
    window.dispatchEvent(new CustomEvent("veil:note", { detail: n }));
  }, live.signal);
}

function showUnread() {
  const b = document.getElementById("unread");
  b.textContent = String(unread);
  b.hidden = unread === 0;
}

export function clearUnread() { unread = 0; showUnread(); }

function signedInChrome() {
  const on = !!apiKey();
  document.getElementById("signout").hidden = !on;
  if (!on) document.getElementById("agent-pick").hidden = true; // no agents to pick while signed out
  for (const a of document.querySelectorAll("[data-nav]")) a.hidden = !on && a.dataset.nav !== "explorer";
}

async function route() {
  if (page) page.abort();
  page = new AbortController();
  const url = new URL(location.href);
  const parts = url.pathname.replace(/^\/console\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const section = parts[0] || "agents";
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === section);
  signedInChrome();
  const ctx = { main, parts, query: url.searchParams, signal: page.signal, navigate };
  try {
    if (section === "explorer") {
      if (apiKey() && agentList === null) await reloadAgents().catch(() => {});
      return await explorer.render({ ...ctx, agents: agentList || [] });
    }
    if (!apiKey() || section === "signin") {
      document.getElementById("agent-pick").hidden = true;
      return signin.render({ ...ctx, next: section === "signin" ? url.searchParams.get("next") : url.pathname + url.search });
    }
    if (agentList === null) await reloadAgents();
    const c = { ...ctx, agents: agentList, agent: currentAgent() };
    switch (section) {
      case "agents": return await agents.render(c);
      case "money": return await money.render(c);
      case "chat": return await chat.render(c);
      case "notifications": return await notifications.render(c);
      case "keys": return await keys.render(c);
      case "audit": return await audit.render(c);
      default: fill(main, h("h1", {}, "Not found"), h("p", {}, "No console page here."));
    }
  } catch (e) {
    if (page.signal.aborted) return;
    fill(main, errorBox(e));
  }
}

document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[data-link]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  navigate(a.getAttribute("href"));
});
window.addEventListener("popstate", route);
window.addEventListener("veil:unauthorized", () => {
  signOut();
  agentList = null;
  if (live) live.abort();
  live = null;
  navigate(signinHref(), true);
});
document.getElementById("agent-select").addEventListener("change", (e) => pickAgent(e.target.value));
document.getElementById("signout").addEventListener("click", () => {
  signOut();
  agentList = null;
  if (live) live.abort();
  live = null;
  navigate("/console/signin", true);
});

// signinHref is the sign-in page with where to go after it: the page now,
// or, on the sign-in page itself, the next it already has (it never nests).
function signinHref() {
  const next = location.pathname.startsWith("/console/signin") ? new URL(location.href).searchParams.get("next") : location.pathname + location.search;
  return "/console/signin" + (next ? "?next=" + encodeURIComponent(next) : "");
}

export function signedIn(next) {
  agentList = null;
  navigate(next && next.startsWith("/console") && !next.startsWith("/console/signin") ? next : "/console/agents", true);
}

// devnetBanner marks every page when a chain here runs on test money (an
// embedded devnet, a public test network, a local node), naming them;
// GET /console/api/network is public, so it shows before sign-in too.
async function devnetBanner() {
  const el = document.getElementById("devnet");
  try {
    const r = await fetch("/console/api/network", { cache: "no-store" });
    if (!r.ok) return;
    const test = ((await r.json()).networks || []).filter((n) => n.test);
    if (test.length === 0) return;
    const label = (n) => n.chain + " (" + n.network + (n.chainId ? ", chain id " + n.chainId : "") + ")";
    fill(el, h("strong", {}, "DEVNET — test money"), " on " + test.map(label).join(", ") + ". Balances and payments here have no value.");
    el.dataset.chains = test.map((n) => n.chain).join(" ");
    el.hidden = false;
  } catch { /* no banner: the page works without it */ } finally {
    el.dataset.checked = "true";
  }
}

devnetBanner();
route();
