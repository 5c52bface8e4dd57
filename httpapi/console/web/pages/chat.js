// Conversations: read them, and chat with the agent. Tool calls show as
// cards (name, status and the result's fields, transaction links to the
// explorer).
import { h, fill, link, card, errorBox, pill, when, short, linkify } from "../dom.js";
import { get, post, paths } from "../api.js";

const enc = encodeURIComponent;

export async function render(ctx) {
  const { main, agent, query, navigate, signal } = ctx;
  if (!agent) {
    fill(main, h("h1", {}, "Chat"), card(null, h("p", {}, "No agent yet. ", link("/console/agents", "Create one."))));
    return;
  }
  let conv = query.get("c") || "";
  const convs = await get(paths.conversations(agent.id));
  const msgs = h("div", { class: "msgs", id: "messages" });
  const input = h("textarea", { id: "chat-input", rows: 2, placeholder: "Message " + agent.name + ".veil — e.g. “send 0.01 ETH to bob”", required: true });
  const send = h("button", { type: "submit", id: "chat-send" }, "Send");
  const form = h("form", { class: "stack", id: "chat-form" }, input, h("div", { class: "row" }, send));
  fill(main, h("h1", {}, "Chat · " + agent.name + ".veil"),
    h("div", { class: "chat" },
      card("Conversations", h("p", {}, link("/console/chat", "+ New conversation")),
        h("ul", { class: "convs", id: "conversations" }, convs.map((c) => h("li", {},
          h("a", { href: "/console/chat?c=" + enc(c.id), "data-link": true, class: c.id === conv ? "active" : "" }, c.title || "(untitled)",
            h("div", { class: "small muted" }, when(c.updatedAt))))))),
      card(null, msgs, form)));
  const show = async () => {
    if (!conv) {
      fill(msgs, h("p", { class: "muted" }, "A new conversation: say what the agent should do."));
      return;
    }
    const list = await get(paths.messages(agent.id, conv));
    if (signal.aborted) return;
    fill(msgs, ...list.map(message));
    msgs.scrollTop = msgs.scrollHeight;
  };
  await show();
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    send.disabled = true;
    msgs.append(h("div", { class: "msg user" }, text), h("div", { class: "msg agent muted", id: "thinking" }, "…"));
    input.value = "";
    try {
      const body = { message: text };
      if (conv) body.conversationId = conv;
      const res = await post(paths.chat(agent.id), body);
      if (!conv) {
        conv = res.conversationId;
        navigate("/console/chat?c=" + enc(conv), true);
        return;
      }
      await show();
    } catch (x) {
      const t = document.getElementById("thinking");
      if (t) t.replaceWith(errorBox(x));
    } finally {
      send.disabled = false;
    }
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  input.focus();
}

function message(m) {
  if (m.role === "tool") {
    let t;
    try { t = JSON.parse(m.text); } catch { t = { name: "tool", status: "", detail: m.text }; }
    return toolCard(t);
  }
  return h("div", { class: "msg " + m.role, title: m.createdAt }, linkify(m.text));
}

// A same-origin link (the devnet explorer) stays in the console.
function txAnchor(href, text) {
  if (href.startsWith(location.origin + "/console/")) return link(href.slice(location.origin.length), h("code", { class: "tx-link" }, text));
  return h("a", { href, target: "_blank", rel: "noopener noreferrer", class: "tx-link" }, h("code", {}, text));
}

export function toolCard(t) {
  let d = t.detail;
  if (typeof d === "string") {
    try { d = JSON.parse(d); } catch { /* plain text */ }
  }
  const rows = [];
  if (d && typeof d === "object" && !Array.isArray(d)) {
    for (const [k, v] of Object.entries(d)) {
      if (k === "txLink" || v === null || v === "" || typeof v === "object") continue;
      if (k === "txHash" && d.txLink) rows.push([k, txAnchor(String(d.txLink), short(v))]);
      else rows.push([k, linkify(String(v))]);
    }
  } else if (d) {
    rows.push(["detail", linkify(String(d))]);
  }
  return h("div", { class: "tool " + (t.status === "error" ? "error" : ""), "data-tool": t.name },
    h("h3", {}, t.name, " ", pill(t.status)),
    h("dl", { class: "facts" }, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}
