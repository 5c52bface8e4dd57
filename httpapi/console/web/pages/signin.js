// Sign in: the API key is checked with GET /agents and kept in this tab's
// sessionStorage only (closing the tab forgets it).
import { h, fill, errorBox } from "../dom.js";
import { setApiKey, checkKey } from "../api.js";
import { signedIn } from "../app.js";

export function render({ main, next }) {
  const key = h("input", { id: "api-key", type: "password", autocomplete: "off", spellcheck: "false", placeholder: "veil_live_…", required: true });
  const err = h("div", { id: "signin-error" });
  const btn = h("button", { id: "signin", type: "submit" }, "Sign in");
  const form = h("form", { class: "stack", id: "signin-form" },
    h("label", {}, "API key", key), btn, err);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    btn.disabled = true;
    fill(err);
    try {
      await checkKey(key.value.trim());
      setApiKey(key.value.trim());
      signedIn(next);
    } catch (x) {
      // The form stays as it was (the key typed, for a fix) with the
      // reason under it.
      fill(err, errorBox(x.status === 401 ? new Error("That API key was refused: " + x.message + ". Check it and try again.") : x));
      key.focus();
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
