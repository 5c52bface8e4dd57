// The console's client of Veil's public API: every call carries the API
// key from this tab's sessionStorage (never a URL or a cookie), so it sees
// exactly what the key's account may see.

const KEY = "veil.apiKey";

export function apiKey() { return sessionStorage.getItem(KEY) || ""; }
export function setApiKey(k) { sessionStorage.setItem(KEY, k); }
export function signOut() { sessionStorage.removeItem(KEY); sessionStorage.removeItem("veil.agent"); }

export class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// call sends one request; a JSON body is encoded. It answers the decoded
// JSON (or null for an empty body) and throws APIError with the server's
// message on a non-2xx status.
export async function call(method, path, body, headers = {}) {
  const h = { ...headers };
  const key = apiKey();
  if (key) h["Authorization"] = "Bearer " + key;
  const init = { method, headers: h, cache: "no-store" };
  if (body !== undefined) {
    h["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (!r.ok) {
    const msg = data && data.message ? data.message : r.status + " " + r.statusText;
    if (r.status === 401 && key) window.dispatchEvent(new CustomEvent("veil:unauthorized"));
    throw new APIError(r.status, msg);
  }
  return data;
}

export const get = (p) => call("GET", p);

// checkKey asks the server whether a key is good (GET /agents with it)
// before the tab keeps it: a refused key is an APIError here, and never
// signs the tab out or moves it (the sign-in form stays as typed).
export async function checkKey(key) {
  const r = await fetch("/agents", { headers: { Authorization: "Bearer " + key }, cache: "no-store" });
  if (r.ok) return;
  let msg = r.status + " " + r.statusText;
  try { msg = (await r.json()).message || msg; } catch { /* not JSON */ }
  throw new APIError(r.status, msg);
}
export const post = (p, b, h) => call("POST", p, b, h);

const enc = encodeURIComponent;
export const paths = {
  agents: () => "/agents",
  agent: (id) => "/agent/" + enc(id),
  status: (id, chain) => "/agent/" + enc(id) + "/status?chain=" + enc(chain),
  conversations: (id) => "/agent/" + enc(id) + "/conversations",
  messages: (id, c) => "/agent/" + enc(id) + "/conversations/" + enc(c) + "/messages",
  chat: (id) => "/agent/" + enc(id) + "/chat",
  notifications: (id) => "/agent/" + enc(id) + "/notifications",
  stream: (id) => "/agent/" + enc(id) + "/notifications/stream",
  schedules: (id) => "/agent/" + enc(id) + "/schedules",
  schedule: (id, s, action) => "/agent/" + enc(id) + "/schedules/" + enc(s) + "/" + action,
  approvals: (id, status) => "/agent/" + enc(id) + "/approvals" + (status ? "?status=" + enc(status) : ""),
  approval: (id, a) => "/agent/" + enc(id) + "/approvals/" + enc(a),
  // invoices: one page; q = {status, since, limit, cursor}, each optional.
  invoices: (id, q) => "/agent/" + enc(id) + "/invoices" + query(q),
  // payments: one page of payment records; q = {status, chain, since, limit, cursor}.
  payments: (id, q) => "/agent/" + enc(id) + "/payments" + query(q),
  // received: one page of received payments; q = {status, chain, since, limit, cursor}.
  received: (id, q) => "/agent/" + enc(id) + "/payments/received" + query(q),
  keys: () => "/keys",
  key: (k) => "/keys/" + enc(k),
  audit: (q) => "/audit" + (q && q.toString() ? "?" + q : ""),
};

// query is "?k=v&…" of q's non-empty values ("" when none).
function query(q) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q || {})) if (v !== undefined && v !== null && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? "?" + s : "";
}

// stream reads the agent's notification stream (server-sent events over
// fetch, since EventSource cannot send the Authorization header) and
// calls onNote for each notification until signal aborts. It reconnects
// after a dropped connection, resuming from the last event id.
export async function stream(agentID, onNote, signal) {
  let last = "";
  while (!signal.aborted) {
    try {
      const h = { Authorization: "Bearer " + apiKey(), Accept: "text/event-stream" };
      if (last) h["Last-Event-ID"] = last;
      const r = await fetch(paths.stream(agentID), { headers: h, signal, cache: "no-store" });
      if (!r.ok || !r.body) throw new APIError(r.status, "stream: " + r.status);
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let id = "", data = "", event = "message";
          for (const line of block.split("\n")) {
            if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
            else if (line.startsWith("event:")) event = line.slice(6).trim();
          }
          if (id) last = id;
          if (event === "notification" && data) {
            try { onNote(JSON.parse(data)); } catch { /* a malformed event is skipped */ }
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof APIError && (e.status === 401 || e.status === 404)) return;
    }
    await new Promise((res) => setTimeout(res, 2000));
  }
}
