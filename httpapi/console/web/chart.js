// A bar chart of payments received and sent over time, in plain SVG: one
// pair of bars per time bucket (minutes, hours or days, whichever gives at
// most a couple of dozen buckets over the span of the payments).
import { svg, h } from "./dom.js";

const W = 720, H = 220, PAD = { l: 56, r: 12, t: 12, b: 28 };

function bucketSize(span) {
  const min = 60e3, hour = 60 * min, day = 24 * hour;
  for (const b of [min, 5 * min, 15 * min, hour, 6 * hour, day, 7 * day]) {
    if (span / b <= 24) return b;
  }
  return 30 * day;
}

function label(t, size) {
  const d = new Date(t);
  if (size < 864e5) return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return d.toLocaleDateString([], { month: "short", day: "numeric" });
}

// chart draws payments ({at: Date, dir: "in"|"out", amount: Number}) of one
// asset.
export function chart(payments, asset) {
  const box = h("div", { class: "chart", id: "money-chart", "data-asset": asset });
  if (payments.length === 0) {
    box.append(h("p", { class: "muted" }, "No payments yet."));
    return box;
  }
  const times = payments.map((p) => p.at.getTime());
  const lo = Math.min(...times), hi = Math.max(...times, Date.now());
  const size = bucketSize(Math.max(hi - lo, 60e3));
  const start = Math.floor(lo / size) * size;
  const n = Math.floor((hi - start) / size) + 1;
  const buckets = Array.from({ length: n }, (_, i) => ({ t: start + i * size, in: 0, out: 0 }));
  for (const p of payments) buckets[Math.floor((p.at.getTime() - start) / size)][p.dir] += p.amount;
  const max = Math.max(...buckets.map((b) => Math.max(b.in, b.out)), 1e-18);
  const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
  const slot = iw / n, bw = Math.max(2, Math.min(18, slot / 2 - 2));
  const y = (v) => PAD.t + ih - (v / max) * ih;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Payments in ${asset} over time` });
  for (const f of [0, 0.5, 1]) {
    root.append(svg("line", { class: "grid-line", x1: PAD.l, x2: W - PAD.r, y1: y(max * f), y2: y(max * f) }));
    root.append(svg("text", { x: PAD.l - 6, y: y(max * f) + 4, "text-anchor": "end" }, fmt(max * f)));
  }
  root.append(svg("line", { class: "axis", x1: PAD.l, x2: W - PAD.r, y1: y(0), y2: y(0) }));
  const every = Math.ceil(n / 8);
  buckets.forEach((b, i) => {
    const x = PAD.l + i * slot + slot / 2;
    for (const [dir, dx] of [["in", -bw - 1], ["out", 1]]) {
      if (b[dir] <= 0) continue;
      const r = svg("rect", { class: "bar-" + dir, x: x + dx, y: y(b[dir]), width: bw, height: Math.max(1, y(0) - y(b[dir])), "data-amount": String(b[dir]), "data-dir": dir });
      r.append(svg("title", {}, `${dir === "in" ? "Received" : "Sent"} ${fmt(b[dir])} ${asset} (${label(b.t, size)})`));
      root.append(r);
    }
    if (i % every === 0) root.append(svg("text", { x, y: H - 8, "text-anchor": "middle" }, label(b.t, size)));
  });
  box.append(root, h("div", { class: "legend" },
    h("span", {}, h("span", { class: "sw in" }), "received"), h("span", {}, h("span", { class: "sw out" }), "sent"),
    h("span", { class: "muted" }, asset)));
  return box;
}

function fmt(v) {
  if (v === 0) return "0";
  return Number(v.toPrecision(3)).toString();
}
