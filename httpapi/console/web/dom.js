// Small DOM helpers: every text goes in through textContent, never as
// HTML, so nothing an agent, a memo or a chain returns can run as markup.

// h builds an element: h("a", {href: "/x", class: "c"}, "text", child…).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// svg builds an SVG element.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// link is an in-console link (the router handles it without a reload).
export function link(href, ...children) {
  return h("a", { href, "data-link": true }, ...children);
}

// facts is a definition list of [term, value] pairs.
export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

export function pill(status) {
  return h("span", { class: "pill " + String(status || "").replace(/[^a-z_]/g, "") }, status);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, d.toLocaleString());
}

// short shortens a hash or address for a table cell.
export function short(s) {
  s = String(s || "");
  return s.length > 20 ? s.slice(0, 10) + "…" + s.slice(-6) : s;
}

// amount rounds a decimal string to at most 6 decimals for display
// (the exact value stays in the title).
export function amount(v, sym) {
  const s = String(v ?? "");
  const [i, f = ""] = s.split(".");
  const frac = f.slice(0, 6).replace(/0+$/, "");
  const out = frac ? i + "." + frac : i;
  return h("span", { title: s + (sym ? " " + sym : "") }, sym ? out + " " + sym : out);
}

export function card(title, ...children) {
  return h("section", { class: "card" }, title ? h("h2", {}, title) : null, ...children);
}

export function errorBox(err) {
  return h("p", { class: "error", role: "alert" }, err && err.message ? err.message : String(err));
}

export function toast(text) {
  const box = document.getElementById("toasts");
  const t = h("div", { class: "toast" }, text);
  box.append(t);
  setTimeout(() => t.remove(), 6000);
}

// fill replaces el's children, skipping null, undefined and false (the
// DOM's replaceChildren would write them as text).
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}
