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

// amount shows a decimal string cut (never rounded up) to 6 decimals,
// with "…" when the cut dropped digits; an amount the cut would show as 0
// (0.0000001 ETH) is shown exactly. The exact value stays in the title.
export function amount(v, sym) {
  const s = String(v ?? "");
  const out = amountText(s);
  return h("span", { class: "amount", title: s + (sym ? " " + sym : ""), "data-exact": s }, sym ? out + " " + sym : out);
}

// amountText is amount's text: a decimal string cut (never rounded up) to
// 6 decimals with "…" when digits were cut, and an amount the cut would
// show as 0 exactly. The lists and the chart's axis both use it.
export function amountText(v) {
  const s = String(v ?? "");
  const [i, f = ""] = s.split(".");
  const all = f.replace(/0+$/, "");
  let frac = all.slice(0, 6).replace(/0+$/, "");
  let cut = all.length > 6 && frac !== "";
  if (frac === "" && all !== "" && /^[-+]?0*$/.test(i)) { frac = all; cut = false; } // tiny: exact, never "0"
  else if (frac === "" && all !== "") cut = true;
  return (frac ? i + "." + frac : i) + (cut ? "…" : "");
}

// URL finds http(s) URLs in text; what ends a sentence after one
// (".", ",", ")" …) is not part of it.
const URL_RE = /https?:\/\/[^\s<>"'`]+/gi;
const TRAIL = /[.,;:!?)\]}'"]+$/;

// linkify is text with its http and https URLs as links: every piece is
// a text node, and an href is only ever a URL the browser parsed with the
// http: or https: protocol (never javascript:, data: or anything else).
// A link into this console stays in it; others open a new tab with
// rel="noopener noreferrer".
export function linkify(text) {
  const s = String(text ?? "");
  const out = [];
  let last = 0;
  for (const m of s.matchAll(URL_RE)) {
    let u = m[0];
    const t = TRAIL.exec(u);
    if (t) u = u.slice(0, u.length - t[0].length);
    let parsed = null;
    try { parsed = new URL(u); } catch { parsed = null; }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) continue;
    if (m.index > last) out.push(s.slice(last, m.index));
    if (parsed.origin === location.origin && parsed.pathname.startsWith("/console/")) {
      out.push(link(parsed.pathname + parsed.search, u));
    } else {
      out.push(h("a", { href: parsed.href, target: "_blank", rel: "noopener noreferrer", class: "ext" }, u));
    }
    last = m.index + u.length;
  }
  if (last < s.length) out.push(s.slice(last));
  return out;
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
