// Audit: the account's audit trail (an admin key), newest first, with
// filters, older pages and CSV / JSON Lines exports.
import { h, fill, card, errorBox, when, pill } from "../dom.js";
import { get, apiKey, paths } from "../api.js";

export async function render({ main, query, navigate, signal }) {
  const q = new URLSearchParams();
  for (const k of ["outcome", "action", "agent", "key", "cursor"]) if (query.get(k)) q.set(k, query.get(k));
  let page;
  try {
    page = await get(paths.audit(q));
  } catch (e) {
    if (e.status === 403) {
      fill(main, h("h1", {}, "Audit trail"), card(null, h("p", {}, "This API key cannot read the audit trail: it needs the admin scope. ", e.message)));
      return;
    }
    throw e;
  }
  const outcome = h("select", { id: "audit-outcome" }, [["", "any outcome"], ["ok", "ok"], ["failed", "failed"], ["refused", "refused"]].map(([v, t]) => h("option", { value: v, selected: v === (query.get("outcome") || "") }, t)));
  const action = h("input", { id: "audit-action", placeholder: "action, e.g. policy or key.revoke", value: query.get("action") || "" });
  const filter = h("form", { class: "row" }, outcome, action, h("button", { type: "submit" }, "Filter"));
  filter.addEventListener("submit", (e) => {
    e.preventDefault();
    const n = new URLSearchParams();
    if (outcome.value) n.set("outcome", outcome.value);
    if (action.value.trim()) n.set("action", action.value.trim());
    navigate("/console/audit" + (n.toString() ? "?" + n : ""));
  });
  const err = h("div");
  const download = (format) => h("button", { class: "secondary", id: "audit-" + format, type: "button", onclick: async () => {
    // The export needs the key in a header, so it is fetched, then saved.
    try {
      const e = new URLSearchParams(q);
      e.set("format", format);
      e.set("limit", "1000");
      const r = await fetch(paths.audit(e), { headers: { Authorization: "Bearer " + apiKey() }, cache: "no-store" });
      if (!r.ok) throw new Error((await r.json()).message);
      const a = h("a", { href: URL.createObjectURL(await r.blob()), download: "veil-audit." + format });
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (x) { fill(err, errorBox(x)); }
  } }, "Export " + format.toUpperCase());
  const rows = page.records.map((r) => h("tr", { "data-action": r.action, "data-outcome": r.outcome },
    h("td", {}, when(r.time)), h("td", {}, r.keyName ? r.keyName + " (" + r.keyId + ")" : r.keyId || "—"),
    h("td", {}, r.action), h("td", {}, r.method + " " + r.path), h("td", {}, String(r.status)), h("td", {}, pill(r.outcome)),
    h("td", { class: "small" }, r.detail || ""), h("td", { class: "small" }, r.source || "")));
  const more = page.nextCursor ? h("button", { class: "secondary", onclick: () => {
    const n = new URLSearchParams(q);
    n.set("cursor", page.nextCursor);
    navigate("/console/audit?" + n);
  } }, "Older") : null;
  if (signal.aborted) return;
  fill(main, h("h1", {}, "Audit trail"),
    card(null, h("p", { class: "muted" }, "Every change made through the API, and every refused attempt of a revoked, expired or out-of-scope key."),
      filter, h("div", { class: "row" }, download("csv"), download("jsonl")), err),
    card(null, page.records.length === 0 ? h("p", { class: "muted", id: "audit-empty" }, "No records.") :
      h("table", { id: "audit" }, h("tr", {}, ["Time", "Key", "Action", "Request", "Status", "Outcome", "Detail", "From"].map((c) => h("th", {}, c))), rows), more));
}
