// A bar chart of payments received and sent over time, in plain SVG: one
// pair of bars per time bucket (minutes, hours or days, whichever gives at
// most a couple of dozen buckets over the span of the payments). Amounts
// are added up exactly (decimal strings as scaled BigInts, never floats),
// and the axis and the bars' titles show them as the lists do
// (dom.js amountText: 0.0000001, never 0 or 1e-7).
import { svg, h, amountText } from "./dom.js";

const W = 720, H = 220, PAD = { l: 84, r: 12, t: 12, b: 28 };

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

// DEC matches the decimals the API sends (no sign, no exponent).
const DEC = /^\d+(?:\.\d+)?$/;

// scaleOf is the number of decimals the sums need: the longest fraction
// among the amounts.
export function scaleOf(amounts) {
  let s = 0;
  for (const a of amounts) {
    const v = String(a);
    if (DEC.test(v) && v.includes(".")) s = Math.max(s, v.length - v.indexOf(".") - 1);
  }
  return s;
}

// units reads a decimal string as a BigInt of 10^-scale units (0 for
// anything that is not a plain decimal).
export function units(v, scale) {
  const s = String(v);
  if (!DEC.test(s)) return 0n;
  const [i, f = ""] = s.split(".");
  return BigInt(i + f.padEnd(scale, "0").slice(0, scale));
}

// decimal writes a BigInt of 10^-scale units as a decimal string, without
// trailing zeros.
export function decimal(n, scale) {
  let s = n.toString();
  if (scale === 0) return s;
  s = s.padStart(scale + 1, "0");
  const frac = s.slice(-scale).replace(/0+$/, "");
  return s.slice(0, -scale) + (frac ? "." + frac : "");
}

// chart draws payments ({at: Date, dir: "in"|"out", amount: decimal
// string}) of one asset.
export function chart(payments, asset) {
  const box = h("div", { class: "chart", id: "money-chart", "data-asset": asset });
  if (payments.length === 0) {
    box.append(h("p", { class: "muted" }, "No payments yet."));
    return box;
  }
  // One more decimal than the amounts have, so that half the top is exact.
  const scale = scaleOf(payments.map((p) => p.amount)) + 1;
  const times = payments.map((p) => p.at.getTime());
  const lo = Math.min(...times), hi = Math.max(...times, Date.now());
  const size = bucketSize(Math.max(hi - lo, 60e3));
  const start = Math.floor(lo / size) * size;
  const n = Math.floor((hi - start) / size) + 1;
  const buckets = Array.from({ length: n }, (_, i) => ({ t: start + i * size, in: 0n, out: 0n }));
  for (const p of payments) buckets[Math.floor((p.at.getTime() - start) / size)][p.dir] += units(p.amount, scale);
  let max = 0n;
  for (const b of buckets) for (const v of [b.in, b.out]) if (v > max) max = v;
  const top = max > 0n ? max : 1n;
  const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
  const slot = iw / n, bw = Math.max(2, Math.min(18, slot / 2 - 2));
  // The height is a ratio of two exact sums; only it is a float.
  const y = (v) => PAD.t + ih - ratio(v, top) * ih;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Payments in ${asset} over time` });
  for (const v of [0n, max / 2n, max]) {
    root.append(svg("line", { class: "grid-line", x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v) }));
    const text = amountText(decimal(v, scale));
    root.append(svg("text", { class: "axis-label", x: PAD.l - 6, y: y(v) + 4, "text-anchor": "end", "data-exact": decimal(v, scale) }, text));
  }
  root.append(svg("line", { class: "axis", x1: PAD.l, x2: W - PAD.r, y1: y(0n), y2: y(0n) }));
  const every = Math.ceil(n / 8);
  buckets.forEach((b, i) => {
    const x = PAD.l + i * slot + slot / 2;
    for (const [dir, dx] of [["in", -bw - 1], ["out", 1]]) {
      if (b[dir] <= 0n) continue;
      const exact = decimal(b[dir], scale);
      const r = svg("rect", { class: "bar-" + dir, x: x + dx, y: y(b[dir]), width: bw, height: Math.max(1, y(0n) - y(b[dir])), "data-amount": exact, "data-dir": dir });
      r.append(svg("title", {}, `${dir === "in" ? "Received" : "Sent"} ${amountText(exact)} ${asset} (${label(b.t, size)})`));
      root.append(r);
    }
    if (i % every === 0) root.append(svg("text", { x, y: H - 8, "text-anchor": "middle" }, label(b.t, size)));
  });
  box.append(root, h("div", { class: "legend" },
    h("span", {}, h("span", { class: "sw in" }), "received"), h("span", {}, h("span", { class: "sw out" }), "sent"),
    h("span", { class: "muted" }, asset)));
  return box;
}

// ratio is a / b (BigInts, 0 ≤ a ≤ b) as a float, exact to a millionth.
function ratio(a, b) {
  return Number((a * 1000000n) / b) / 1e6;
}
