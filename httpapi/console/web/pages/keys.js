// Keys: the account's API keys (an admin key): create one (its text is
// shown once, here), revoke or rotate one. The audit trail of who did what
// is on the Audit page.
import { h, fill, card, errorBox, when, pill } from "../dom.js";
import { get, call, paths } from "../api.js";

export async function render({ main, signal }) {
  let keys;
  try {
    keys = await get(paths.keys());
  } catch (e) {
    if (e.status === 403) {
      fill(main, h("h1", {}, "API keys"), card(null, h("p", { id: "keys-forbidden" }, "This API key cannot manage keys: it needs the admin scope. ", e.message)));
      return;
    }
    throw e;
  }
  const secretBox = h("div", { id: "key-secret-box" });
  const err = h("div", { id: "keys-error" });
  const name = h("input", { id: "key-name", placeholder: "what it is for, e.g. ci", required: true, maxlength: 64 });
  const scope = h("select", { id: "key-scope" }, ["read", "chat", "full", "admin"].map((s) => h("option", { value: s, selected: s === "read" }, s)));
  const expires = h("select", { id: "key-expires" }, [["", "never"], ["24h", "in a day"], ["720h", "in 30 days"], ["2160h", "in 90 days"]].map(([v, t]) => h("option", { value: v }, t)));
  const form = h("form", { class: "row", id: "key-form" }, h("label", {}, "Name ", name), h("label", {}, "Scope ", scope), h("label", {}, "Expires ", expires), h("button", { type: "submit", id: "key-create" }, "Create key"));
  const showSecret = (k, what) => fill(secretBox, card(what,
    h("p", {}, "Copy it now: it is shown once and cannot be read again."),
    h("code", { id: "key-secret", class: "secret" }, k.secret)));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    fill(err);
    const body = { name: name.value.trim(), scope: scope.value };
    if (expires.value) body.expiresIn = expires.value;
    try {
      const k = await call("POST", paths.keys(), body);
      showSecret(k, "New key " + k.id + " (" + k.scope + ")");
      name.value = "";
      fill(table, ...rows(await get(paths.keys())));
    } catch (x) { fill(err, errorBox(x)); }
  });
  const act = async (method, path, done) => {
    fill(err);
    try {
      const r = await call(method, path);
      if (done) done(r);
      fill(table, ...rows(await get(paths.keys())));
    } catch (x) { fill(err, errorBox(x)); }
  };
  const rows = (list) => [h("tr", {}, ["ID", "Name", "Scope", "Status", "Created", "Expires", ""].map((c) => h("th", {}, c)))].concat(list.map((k) =>
    h("tr", { "data-key": k.id, "data-status": k.status },
      h("td", {}, h("code", {}, k.id)), h("td", {}, k.name || "—"), h("td", {}, k.scope), h("td", {}, pill(k.status)),
      h("td", {}, when(k.createdAt)), h("td", {}, k.expiresAt ? when(k.expiresAt) : "never"),
      h("td", {}, k.status === "active" ? [
        h("button", { class: "secondary", "data-action": "rotate", onclick: () => act("POST", paths.key(k.id) + "/rotate", (r) => showSecret(r.key, "Key " + r.key.id + " replaces " + k.id)) }, "Rotate"),
        " ",
        h("button", { class: "secondary", "data-action": "revoke", onclick: () => { if (confirm("Revoke " + k.id + "? Requests with it are refused from now on.")) act("DELETE", paths.key(k.id)); } }, "Revoke"),
      ] : null))));
  const table = h("table", { id: "keys" }, ...rows(keys));
  if (signal.aborted) return;
  fill(main, h("h1", {}, "API keys"),
    card("New key", form, err), secretBox,
    card("Keys", h("p", { class: "muted" }, "Scopes: read (GET only), chat (also chat, MCP, conversations), full (everything but keys and the audit trail), admin. Revoking takes effect at once."), table));
}
