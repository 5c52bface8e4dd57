// Sign in: the API key is checked with GET /agents and kept in this tab's
// sessionStorage only (closing the tab forgets it).
import { h, fill, errorBox } from "../dom.js";
import { setApiKey, signOut, get, paths } from "../api.js";
import { signedIn } from "../app.js";

export function render({ main, next }) {
  const key = h("input", { id: "api-key", type: "password", autocomplete: "off", spellcheck: "false", placeholder: "vk_live_…", required: true });
  const err = h("div", { id: "signin-error" });
  const btn = h("button", { id: "signin", type: "submit" }, "Sign in");
  const form = h("form", { class: "stack", id: "signin-form" },
    h("label", {}, "API key", key), btn, err);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    btn.disabled = true;
    fill(err);
    setApiKey(key.value.trim());
    try {
      await get(paths.agents());
      signedIn(next);
    } catch (x) {
      signOut();
      fill(err, errorBox(x.status === 401 ? new Error("That API key is not valid.") : x));
    } finally {
      btn.disabled = false;
    }
  });
  fill(main,
    h("section", { class: "card" }, h("h1", {}, "Sign in to the Veil console"),
      h("p", { class: "muted" }, "Your API key stays in this browser tab (session storage) and is sent only to this server, on each API call."),
      form));
  key.focus();
}
