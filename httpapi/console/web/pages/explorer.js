// The devnet explorer: a transaction (sender, recipient, amount, the
// stealth announcement and, for the signed-in owner, which of their agents
// it was for), an address and a block, read from the chain's node by the
// server (/console/api/explorer). Real networks' transactions link to
// their own explorers instead.
import { h, fill, link, card, facts, amount, errorBox, pill, when, short } from "../dom.js";
import { get, apiKey } from "../api.js";
import { nativeSymbol } from "./agents.js";

const enc = encodeURIComponent;

function q(chain) { return chain ? "?chain=" + enc(chain) : ""; }

export function txHref(hash, chain) { return "/console/explorer/tx/" + enc(hash) + q(chain); }
export function addrHref(addr, chain) { return "/console/explorer/address/" + enc(addr) + q(chain); }
export function blockHref(n, chain) { return "/console/explorer/block/" + enc(n) + q(chain); }

export async function render(ctx) {
  const [, kind, id] = ctx.parts;
  const chain = ctx.query.get("chain") || "";
  switch (kind) {
    case "tx": return tx(ctx, id, chain);
    case "address": return address(ctx, id, chain);
    case "block": return block(ctx, id, chain);
    default: return home(ctx);
  }
}

function searchForm(navigate, chain) {
  const input = h("input", { id: "explorer-search", placeholder: "transaction hash, address or block number", size: 60 });
  const form = h("form", { class: "row" }, input, h("button", { type: "submit" }, "Look up"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const v = input.value.trim();
    if (/^\d+$/.test(v)) navigate(blockHref(v, chain));
    else if (/^0x[0-9a-fA-F]{64}$/.test(v) || (v.length > 60 && !v.startsWith("0x"))) navigate(txHref(v, chain));
    else navigate(addrHref(v, chain));
  });
  return form;
}

async function home({ main, navigate }) {
  const list = await get("/console/api/explorer");
  fill(main, h("h1", {}, "Devnet explorer"), card(null, searchForm(navigate, "")),
    card("Chains", list.length === 0 ? h("p", { class: "muted" }, "Every chain here is on a real network: its transactions are on the network's own explorer.") :
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Chain"), h("th", {}, "Latest block"))),
        h("tbody", {}, list.map((c) => h("tr", {}, h("td", {}, c.chain),
          h("td", {}, c.error ? h("span", { class: "error" }, c.error) : link(blockHref(c.head, c.chain), "#" + c.head))))))));
}

// owners asks which of the signed-in account's agents these addresses
// belong to ({} when signed out).
async function owners(chain, addrs) {
  addrs = [...new Set(addrs.filter(Boolean))].slice(0, 16);
  if (!apiKey() || !chain || addrs.length === 0) return {};
  try {
    return await get("/console/api/owned?chain=" + enc(chain) + addrs.map((a) => "&address=" + enc(a)).join(""));
  } catch {
    return {};
  }
}

function mineTag(o) {
  if (!o) return null;
  const what = { agent: "your agent ", payment: "received by your agent ", invoice: "invoice of your agent " }[o.kind] || "";
  return h("span", { class: "mine", "data-kind": o.kind }, what + o.agentName + ".veil");
}

function addrCell(addr, chain, own, label) {
  if (!addr) return h("span", { class: "muted" }, "—");
  return h("span", {}, link(addrHref(addr, chain), h("code", {}, addr)), label ? h("span", { class: "muted" }, " (" + label + ")") : null, mineTag(own[addr]));
}

// read fetches one explorer item, or shows why it cannot and answers null.
async function read(main, title, id, path) {
  try {
    return await get(path);
  } catch (e) {
    fill(main, h("h1", {}, title), card(null, h("p", {}, h("code", {}, id)), errorBox(e)));
    return null;
  }
}

const EVM = ["horizen", "ethereum", "polygon", "base"];

async function tx({ main, signal }, hash, chain) {
  const t = await read(main, "Transaction", hash, "/console/api/explorer/tx/" + enc(hash) + q(chain));
  if (!t) return;
  const anns = t.announcements || [];
  const transfers = t.transfers || [];
  const own = await owners(t.chain, [t.from, t.to, ...anns.map((a) => a.stealthAddress), ...transfers.map((x) => x.to)]);
  if (signal.aborted) return;
  // What a person asks first: who paid whom how much. A stealth payment's
  // recipient is its one-time address; otherwise the first transfer's.
  const pay = anns[0] ? { to: anns[0].stealthAddress, amount: anns[0].amount, asset: anns[0].asset }
    : transfers[0] ? { to: transfers[0].to, amount: transfers[0].amount, asset: transfers[0].asset }
    : { to: t.to, amount: t.value, asset: "" };
  const forAgent = own[pay.to];
  fill(main,
    h("h1", {}, "Transaction"),
    card(null, facts([
      ["Hash", h("code", { id: "tx-hash" }, t.hash)],
      ["Chain", h("span", { id: "tx-chain" }, t.chain)],
      ["Status", h("span", { id: "tx-status" }, pill(t.status))],
      t.block ? ["Block", link(blockHref(t.block, t.chain), "#" + t.block)] : null,
      t.time ? ["Time", when(t.time)] : null,
    ])),
    card("Payment", facts([
      ["Sender", h("span", { id: "tx-from" }, addrCell(t.from, t.chain, own))],
      ["Recipient", h("span", { id: "tx-recipient" }, addrCell(pay.to, t.chain, own, anns[0] ? "one-time stealth address" : ""))],
      ["Amount", h("span", { id: "tx-amount", "data-amount": pay.amount, "data-asset": pay.asset }, amount(pay.amount, pay.asset))],
      forAgent ? ["For", h("span", { id: "tx-for" }, forAgent.agentName + ".veil", forAgent.invoiceId ? " (invoice " + forAgent.invoiceId + ")" : "")] : null,
      ["Called", h("span", { id: "tx-to" }, addrCell(t.to, t.chain, own, t.toLabel))],
      t.fee ? ["Fee", amount(t.fee, nativeSymbol(t.chain))] : null,
    ])),
    anns.length ? card("Stealth announcement", ...anns.map((a) => facts([
      ["One-time address", h("code", { class: "ann-address" }, a.stealthAddress)],
      ["Ephemeral public key", h("code", {}, a.ephemeralPubKey)],
      ["View tag", String(a.viewTag)],
      ["Amount", amount(a.amount, a.asset)],
      ["Who it was for", own[a.stealthAddress] ? mineTag(own[a.stealthAddress]) :
        h("span", { class: "muted" }, apiKey() ? "not one of your agents (only the recipient's viewing key can tell)" : "sign in to see whether it was for one of your agents")],
    ]))) : null,
    transfers.length > 1 ? card("Transfers", h("table", {}, h("tbody", {}, transfers.map((x) =>
      h("tr", {}, h("td", {}, addrCell(x.to, t.chain, own)), h("td", {}, amount(x.amount, x.asset))))))) : null);
}

async function address({ main, signal }, addr, chain) {
  const a = await read(main, "Address", addr, "/console/api/explorer/address/" + enc(addr) + q(chain));
  if (!a) return;
  const own = await owners(a.chain, [a.address]);
  if (signal.aborted) return;
  const recent = a.scanned ? "Recent transactions (last " + a.scanned + " blocks)" : "Recent transactions";
  fill(main,
    h("h1", {}, "Address"),
    card(null, facts([
      ["Address", h("span", { id: "address" }, h("code", {}, a.address), mineTag(own[a.address]))],
      ["Chain", a.chain],
      a.name ? ["Veil name", a.name] : null,
      ["Balance", h("span", { id: "address-balance" }, amount(a.balance.native, nativeSymbol(a.chain)))],
      ...Object.entries(a.balance.tokens || {}).map(([s, v]) => [s, amount(v, s)]),
      EVM.includes(a.chain) ? ["Transactions sent", String(a.nonce)] : null,
    ])),
    card(recent, txTable(a.txs, a.chain, a.address)));
}

function txTable(txs, chain, self) {
  if (!txs || txs.length === 0) return h("p", { class: "muted" }, "None.");
  return h("table", { class: "txs" }, h("thead", {}, h("tr", {}, h("th", {}, "Hash"), h("th", {}, "Block"), h("th", {}, "From"), h("th", {}, "To"), h("th", {}, "Value"))),
    h("tbody", {}, txs.map((t) => h("tr", {},
      h("td", {}, link(txHref(t.hash, chain), h("code", {}, short(t.hash)))),
      h("td", {}, link(blockHref(t.block, chain), "#" + t.block)),
      h("td", {}, party(t.from, self, chain)),
      h("td", {}, party(t.to, self, chain)),
      h("td", {}, t.value ? amount(t.value, nativeSymbol(chain)) : "")))));
}

function party(addr, self, chain) {
  if (!addr) return h("span", { class: "muted" }, "—");
  if (addr === self) return "this address";
  return link(addrHref(addr, chain), h("code", {}, short(addr)));
}

async function block({ main }, n, chain) {
  const b = await read(main, "Block", n, "/console/api/explorer/block/" + enc(n) + q(chain));
  if (!b) return;
  fill(main,
    h("h1", {}, "Block #" + b.number),
    card(null, facts([
      ["Chain", b.chain], ["Hash", h("code", {}, b.hash)], ["Time", when(b.time)],
      ["Neighbours", h("span", { class: "row" }, b.number > 0 ? link(blockHref(b.number - 1, b.chain), "← #" + (b.number - 1)) : null,
        b.number < b.head ? link(blockHref(b.number + 1, b.chain), "#" + (b.number + 1) + " →") : h("span", { class: "muted" }, "latest"))],
    ])),
    card("Transactions", txTable(b.txs, b.chain, "")));
}
