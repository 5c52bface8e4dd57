// Agents: the account's agents, creating one (the owner signs in the
// browser wallet or pastes a signature), and one agent's addresses, name
// and balances on each chain.
import { h, fill, link, card, facts, amount, errorBox, short } from "../dom.js";
import { call, get, paths } from "../api.js";
import { connect, sign, createMessage, hasWallet } from "../wallet.js";
import { reloadAgents, pickAgent, navigate } from "../app.js";

const CHAINS = ["horizen", "ethereum", "polygon", "base", "stellar", "solana", "all"];

export async function render(ctx) {
  if (ctx.parts[1]) return detail(ctx, ctx.parts[1]);
  const { main, agents } = ctx;
  const rows = agents.map((a) => h("tr", { "data-agent": a.name },
    h("td", {}, link("/console/agents/" + encodeURIComponent(a.id), a.name + ".veil")),
    h("td", {}, a.chains.join(", ")),
    h("td", {}, Object.entries(a.addresses || {}).map(([c, addr]) => h("div", { class: "small" }, c + ": ", explorerLink(c, addr))))));
  fill(main,
    h("h1", {}, "Agents"),
    card(null, agents.length === 0 ? h("p", { class: "muted", id: "no-agents" }, "No agents yet: create one below.") :
      h("table", { id: "agents" }, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Chains"), h("th", {}, "Addresses"))), h("tbody", {}, rows))),
    createForm());
}

// explorerLink links an address to the console's explorer (devnets).
export function explorerLink(chain, addr) {
  return link("/console/explorer/address/" + encodeURIComponent(addr) + "?chain=" + encodeURIComponent(chain), h("code", {}, short(addr)));
}

function createForm() {
  const name = h("input", { id: "create-name", required: true, pattern: "[a-z0-9-]{3,32}", placeholder: "my-agent", autocomplete: "off" });
  const chain = h("select", { id: "create-chain" }, CHAINS.map((c) => h("option", { value: c, selected: c === "ethereum" }, c)));
  const wallet = h("input", { id: "create-wallet", required: true, placeholder: "0x… (owner wallet)", autocomplete: "off" });
  const message = h("textarea", { id: "create-message", readonly: true, rows: 3 });
  const signature = h("input", { id: "create-signature", required: true, placeholder: "0x… or base64", autocomplete: "off" });
  const out = h("div", { id: "create-result" });
  const refresh = () => {
    message.value = name.value && wallet.value ? createMessage(name.value, chain.value, wallet.value) : "";
    signature.value = "";
  };
  for (const el of [name, chain, wallet]) el.addEventListener("input", refresh);
  const connectBtn = h("button", { type: "button", class: "secondary", id: "connect-wallet", onclick: async () => {
    fill(out);
    try { wallet.value = await connect(); refresh(); } catch (e) { fill(out, errorBox(e)); }
  } }, "Connect wallet");
  const signBtn = h("button", { type: "button", class: "secondary", id: "sign-create", onclick: async () => {
    fill(out);
    try {
      refresh();
      if (!message.value) throw new Error("Fill in the name and the wallet first.");
      signature.value = await sign(message.value, wallet.value);
    } catch (e) { fill(out, errorBox(e)); }
  } }, "Sign with wallet");
  const submit = h("button", { type: "submit", id: "create-submit" }, "Create agent");
  const form = h("form", { class: "stack", id: "create-form" },
    h("label", {}, "Name (3–32 of a-z, 0-9, -; the agent is name.veil)", name),
    h("label", {}, "Chain", chain),
    h("label", {}, "Owner wallet", h("div", { class: "row" }, wallet, connectBtn)),
    h("label", {}, "Message the owner signs", message),
    h("label", {}, "Signature", h("div", { class: "row" }, signature, signBtn)),
    h("div", { class: "row" }, submit), out);
  if (!hasWallet()) signBtn.title = connectBtn.title = "No browser wallet: paste a signature of the message";
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    submit.disabled = true;
    fill(out, h("p", { class: "muted" }, "Creating (keys, funding and the name on each chain)…"));
    try {
      const res = await call("POST", "/agent/create", { name: name.value, chain: chain.value, wallet: wallet.value, signature: signature.value, message: message.value });
      await reloadAgents();
      pickAgent(res.id);
      navigate("/console/agents/" + encodeURIComponent(res.id));
    } catch (x) {
      fill(out, errorBox(x));
    } finally {
      submit.disabled = false;
    }
  });
  return card("Create an agent", form);
}

async function detail({ main, signal }, id) {
  const a = await get(paths.agent(id));
  if (signal.aborted) return;
  const chainsBox = h("div", { class: "grid", id: "agent-chains" });
  fill(main,
    h("h1", { id: "agent-name" }, a.name + ".veil"),
    card(null, facts([["Id", h("code", {}, a.id)], ["Chains", a.chains.join(", ")]]),
      h("p", { class: "row" }, link("/console/money", "Money"), link("/console/chat", "Chat"), link("/console/notifications", "Notifications"))),
    chainsBox);
  await Promise.all(a.chains.map(async (c) => {
    const box = card(c);
    box.dataset.chain = c;
    chainsBox.append(box);
    try {
      const st = await get(paths.status(id, c));
      const tokens = Object.entries(st.tokens || {});
      box.append(facts([
        ["Name", a.name + ".veil"],
        ["Address", explorerLink(c, st.address)],
        ["Meta-address", h("code", { class: "small" }, short(st.metaAddress))],
        ["Balance", h("span", { class: "balance" }, amount(st.balance, nativeSymbol(c)))],
        ...tokens.map(([sym, v]) => [sym, amount(v, sym)]),
        ["Pending invoices", String(st.pendingInvoices)],
      ]));
    } catch (e) {
      box.append(errorBox(e));
    }
  }));
}

export function nativeSymbol(c) {
  return { horizen: "ZEN", ethereum: "ETH", polygon: "POL", base: "ETH", stellar: "XLM", solana: "SOL" }[c] || "";
}
