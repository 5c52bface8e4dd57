// Notifications: the agent's inbox, and new ones live from its stream
// (GET /agent/:id/notifications/stream, which app.js reads).
import { h, fill, link, card, errorBox, when, linkify } from "../dom.js";
import { get, post, paths } from "../api.js";
import { clearUnread } from "../app.js";

export async function render({ main, agent, signal }) {
  if (!agent) {
    fill(main, h("h1", {}, "Notifications"), card(null, h("p", {}, "No agent yet. ", link("/console/agents", "Create one."))));
    return;
  }
  const inbox = await get(paths.notifications(agent.id));
  const list = h("ul", { class: "notes", id: "notes" }, (inbox.notifications || []).map(item));
  const status = h("p", { class: "muted", id: "live" }, "Live: new notifications appear here as they happen.");
  const markRead = h("button", { class: "secondary", onclick: async () => {
    try {
      await post(paths.notifications(agent.id) + "/read");
      for (const li of list.querySelectorAll("li.unread")) li.classList.remove("unread");
      clearUnread();
    } catch (e) { main.append(errorBox(e)); }
  } }, "Mark all read");
  fill(main, h("h1", {}, "Notifications · " + agent.name + ".veil"),
    card(null, h("div", { class: "row" }, h("span", {}, `${inbox.unreadCount} unread`), markRead), status, list));
  clearUnread();
  const onNote = (e) => { list.prepend(item(e.detail)); clearUnread(); };
  window.addEventListener("veil:note", onNote);
  signal.addEventListener("abort", () => window.removeEventListener("veil:note", onNote));
}

function item(n) {
  return h("li", { class: n.read ? "" : "unread", "data-type": n.type, "data-id": n.id },
    h("div", { class: "title" }, linkify(n.title)), h("div", { class: "small body" }, linkify(n.body)), h("div", { class: "small muted" }, n.type, " · ", when(n.createdAt)));
}
