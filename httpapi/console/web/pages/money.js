// Money: payments sent (the agent's payment records, GET
// /agent/:id/payments, each with its status) and received (its received
// payment records, GET /agent/:id/payments/received) over time,
// invoices with their status and pay page (GET /agent/:id/invoices, a page
// at a time), schedules with their next runs, and the
// payments waiting for the owner's approval, decided by signing in the
// browser wallet.
import { h, fill, link, card, amount, errorBox, pill, when, short } from "../dom.js";
import { get, post, paths } from "../api.js";
import { connect, sign, approvalMessage } from "../wallet.js";
import { chart } from "../chart.js";
import { txHref } from "./explorer.js";

export async function render(ctx) {
  const { main, agent, signal } = ctx;
  if (!agent) {
    fill(main, h("h1", {}, "Money"), card(null, h("p", {}, "No agent yet. ", link("/console/agents", "Create one."))));
    return;
  }
  const payBox = h("div", { id: "payments-box" });
  const invBox = h("div", { id: "invoices-box" });
  const schedBox = h("div", { id: "schedules-box" });
  const apprBox = h("div", { id: "approvals-box" });
  fill(main, h("h1", {}, "Money · " + agent.name + ".veil"),
    card("Approvals waiting", apprBox), card("Payments", payBox), card("Invoices", invBox), card("Schedules", schedBox));
  const load = async () => {
    await Promise.all([
      payments(agent, payBox).catch((e) => fill(payBox, errorBox(e))),
      invoices(agent, invBox).catch((e) => fill(invBox, errorBox(e))),
      schedules(agent, schedBox, load).catch((e) => fill(schedBox, errorBox(e))),
      approvals(agent, apprBox, load).catch((e) => fill(apprBox, errorBox(e))),
    ]);
  };
  await load();
  // A new notification (a payment, an approval) reloads the page's data.
  const onNote = () => { if (!signal.aborted) load(); };
  window.addEventListener("veil:note", onNote);
  signal.addEventListener("abort", () => window.removeEventListener("veil:note", onNote));
}

// sentOf turns the agent's payment records into the list's rows (refused
// and failed ones moved nothing: they are listed, not charted).
export function sentOf(records) {
  return records.map((r) => ({
    id: r.id, at: new Date(r.createdAt), dir: "out", amountText: r.all ? "all" : r.amount, amount: r.all ? "0" : r.amount, asset: r.asset,
    title: "", body: "to " + ((r.recipient && (r.recipient.name || r.recipient.address)) || "") + (r.reason ? " — " + r.reason : ""),
    chain: r.chain, hash: r.txHash || "", href: r.txHash ? txHref(r.txHash, r.chain) : "", status: r.status,
    moved: r.status === "broadcast" || r.status === "confirmed" || r.status === "pending",
  }));
}

// receivedOf turns the agent's received payments (one per one-time
// address) into the list's rows.
export function receivedOf(payments) {
  return payments.map((p) => ({
    id: p.chain + ":" + p.stealthAddress, at: new Date(p.receivedAt), dir: "in", amountText: p.amount, amount: p.amount, asset: p.asset,
    title: "", body: "at " + p.stealthAddress + " on " + p.chain + (p.withdrawn ? " — withdrawn" : p.balance !== p.amount ? " — " + p.balance + " " + p.asset + " left" : ""),
    chain: p.chain, hash: p.txHash || "", href: p.txHash ? txHref(p.txHash, p.chain) : "", status: "received", moved: true,
  }));
}

// recordPages is how many pages of payment records (100 each) the page
// reads for its list and chart, sent and received each.
const recordPages = 5;

async function allPages(path) {
  const out = [];
  let cursor = "";
  for (let i = 0; i < recordPages; i++) {
    const page = await get(path({ limit: 100, cursor }));
    out.push(...(page.payments || []));
    cursor = page.nextCursor || "";
    if (!cursor) break;
  }
  return out;
}

async function payments(agent, box) {
  // Sent: the agent's payment records (GET /agent/:id/payments), each
  // with its honest status. Received: its received payment records (GET
  // /agent/:id/payments/received), which outlive the notification inbox.
  const [records, got] = await Promise.all([
    allPages((q) => paths.payments(agent.id, q)),
    allPages((q) => paths.received(agent.id, q)),
  ]);
  const list = [...sentOf(records), ...receivedOf(got)].sort((x, y) => y.at - x.at);
  const charted = list.filter((p) => p.moved);
  const assets = [...new Set(charted.map((p) => p.asset))];
  const counts = Object.fromEntries(assets.map((a) => [a, charted.filter((p) => p.asset === a).length]));
  assets.sort((a, b) => counts[b] - counts[a]);
  const pick = h("select", { id: "chart-asset" }, assets.map((a) => h("option", { value: a }, a)));
  const chartBox = h("div", {});
  const draw = () => fill(chartBox, chart(charted.filter((p) => p.asset === pick.value).map((p) => ({ at: p.at, dir: p.dir, amount: p.amount })), pick.value || ""));
  pick.addEventListener("change", draw);
  draw();
  fill(box,
    assets.length > 1 ? h("label", { class: "row" }, "Asset", pick) : null,
    chartBox,
    list.length === 0 ? null : h("table", { id: "payments" }, h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, ""), h("th", {}, "Amount"), h("th", {}, "Status"), h("th", {}, "Details"), h("th", {}, "Transaction"))),
      h("tbody", {}, list.map((p) => h("tr", { "data-dir": p.dir, "data-status": p.status, "data-payment": p.dir === "out" ? p.id : null, "data-received": p.dir === "in" ? p.id : null },
        h("td", {}, when(p.at)),
        h("td", { class: p.dir }, p.dir === "in" ? "received" : "sent"),
        h("td", { class: "pay-amount" }, amount(p.amountText, p.asset)),
        h("td", {}, pill(p.status)),
        h("td", { class: "small" }, p.body.replace(/\s*(Transaction|\(tx) \S+$/, "")),
        h("td", {}, txCell(p)))))),
    h("p", { class: "muted small" }, "Sent: the agent's payment records (pending and broadcast ones are on their way; refused ones moved nothing). Received: the stealth payments the agent received, one per one-time address."));
}

function txCell(p) {
  if (!p.href) return "";
  const text = short(p.hash || p.href);
  if (p.href.startsWith("/console/")) return link(p.href, h("code", { class: "tx-link" }, text));
  return h("a", { href: p.href, rel: "noopener noreferrer", target: "_blank", class: "tx-link" }, text);
}

// invoices lists the agent's invoices a page at a time (GET
// /agent/:id/invoices), filtered by status; "More" follows nextCursor.
async function invoices(agent, box) {
  const pick = h("select", { id: "invoice-status" },
    [["", "All"], ["pending", "Pending"], ["paid", "Paid"], ["expired", "Expired"]].map(([v, t]) => h("option", { value: v }, t)));
  const body = h("tbody", {});
  const table = h("table", { id: "invoices" }, h("thead", {}, h("tr", {}, h("th", {}, "Created"), h("th", {}, "Amount"), h("th", {}, "Memo"), h("th", {}, "Status"), h("th", {}, "Pay page"), h("th", {}, "Transaction"))), body);
  const note = h("p", { class: "muted", id: "invoices-note" });
  const more = h("button", { class: "secondary", id: "invoices-more", hidden: true }, "More");
  let cursor = "";
  const load = async (reset) => {
    if (reset) { cursor = ""; body.replaceChildren(); }
    more.disabled = true;
    const page = await get(paths.invoices(agent.id, { status: pick.value, cursor, limit: 25 }));
    const now = Date.now();
    for (const inv of page.invoices || []) {
      const expired = inv.status === "pending" && inv.expiresAt && Date.parse(inv.expiresAt) <= now;
      body.append(h("tr", { "data-invoice": inv.id, "data-status": expired ? "expired" : inv.status },
        h("td", {}, when(inv.createdAt)),
        h("td", {}, amount(inv.amount, inv.asset)),
        h("td", {}, inv.memo),
        h("td", {}, pill(expired ? "expired" : inv.status)),
        h("td", {}, h("a", { href: inv.paymentLink, target: "_blank", rel: "noopener" }, "pay page")),
        h("td", {}, inv.txHash ? link(txHref(inv.txHash, inv.chain), h("code", {}, short(inv.txHash))) : "")));
    }
    cursor = page.nextCursor || "";
    more.hidden = !cursor;
    more.disabled = false;
    table.hidden = body.children.length === 0;
    fill(note, body.children.length === 0 ? (pick.value ? "No " + pick.value + " invoices." : "No invoices yet. Ask the agent in chat, e.g. “create an invoice for 5 USDC for logo design”.") :
      body.children.length + " invoice(s)" + (cursor ? ", more below." : "."));
  };
  const fail = (e) => box.append(errorBox(e));
  pick.addEventListener("change", () => load(true).catch(fail));
  more.addEventListener("click", () => load(false).catch(fail));
  fill(box, h("label", { class: "row" }, "Status", pick), note, table, more);
  await load(true);
}

async function schedules(agent, box, reload) {
  const list = await get(paths.schedules(agent.id));
  const act = (s, action) => async (e) => {
    e.target.disabled = true;
    try { await post(paths.schedule(agent.id, s.id, action)); await reload(); } catch (x) { box.append(errorBox(x)); e.target.disabled = false; }
  };
  fill(box, list.length === 0 ? h("p", { class: "muted" }, "No schedules. Ask the agent in chat, e.g. “pay bob.veil 5 USDC every week”.") :
    h("table", { id: "schedules" }, h("thead", {}, h("tr", {}, h("th", {}, "Recipient"), h("th", {}, "Amount"), h("th", {}, "Every"), h("th", {}, "Status"), h("th", {}, "Next run"), h("th", {}, ""))),
      h("tbody", {}, list.map((s) => h("tr", { "data-schedule": s.id },
        h("td", {}, short(s.recipient)), h("td", {}, amount(s.amount, s.asset)), h("td", {}, s.interval), h("td", {}, pill(s.status)),
        h("td", {}, s.status === "cancelled" ? "" : when(s.nextRun)),
        h("td", { class: "row" },
          s.status === "active" ? h("button", { class: "secondary", onclick: act(s, "pause") }, "Pause") : null,
          s.status === "paused" ? h("button", { class: "secondary", onclick: act(s, "resume") }, "Resume") : null,
          s.status !== "cancelled" ? h("button", { class: "danger", onclick: act(s, "cancel") }, "Cancel") : null))))));
}

async function approvals(agent, box, reload) {
  const list = await get(paths.approvals(agent.id, "pending"));
  const decide = (a, deny) => async (e) => {
    const row = e.target.closest("tr");
    for (const b of row.querySelectorAll("button")) b.disabled = true;
    const msgBox = row.querySelector(".decision");
    try {
      fill(msgBox, h("span", { class: "muted" }, "Sign in your wallet…"));
      const wallet = await connect();
      const message = approvalMessage(a.id, agent.id, wallet, deny);
      const signature = await sign(message, wallet);
      fill(msgBox, h("span", { class: "muted" }, deny ? "Denying…" : "Approving and sending…"));
      const res = await post(paths.approval(agent.id, a.id), { decision: deny ? "deny" : "approve", message, signature });
      fill(msgBox, pill(res.status), res.txHash ? link(txHref(res.txHash, a.chain), " " + short(res.txHash)) : "", res.error ? h("span", { class: "error" }, " " + res.error) : "");
      await reload();
    } catch (x) {
      fill(msgBox, errorBox(x));
      for (const b of row.querySelectorAll("button")) b.disabled = false;
    }
  };
  fill(box, list.length === 0 ? h("p", { class: "muted", id: "no-approvals" }, "Nothing is waiting for you.") :
    h("table", { id: "approvals" }, h("thead", {}, h("tr", {}, h("th", {}, "Amount"), h("th", {}, "To"), h("th", {}, "Why it waits"), h("th", {}, "Expires"), h("th", {}, ""))),
      h("tbody", {}, list.map((a) => h("tr", { "data-approval": a.id },
        h("td", {}, amount(a.amount, a.asset), h("div", { class: "small muted" }, a.chain)),
        h("td", {}, short(a.recipient)),
        h("td", { class: "small" }, (a.reasons || []).join("; ")),
        h("td", {}, when(a.expiresAt)),
        h("td", {}, h("div", { class: "row" },
          h("button", { class: "approve", onclick: decide(a, false) }, "Approve"),
          h("button", { class: "danger deny", onclick: decide(a, true) }, "Deny")),
          h("div", { class: "decision small" })))))));
}
