// Compatibility with Wraith's TypeScript SDK (docs/compat-wraith.md),
// tested against a real veild with a client of our own, written from the
// SDK's published types (compat/wraith-types.ts), not from its code: each of
// the SDK's 16 agent methods sends the request its types describe, with the
// SDK's headers (Authorization: Bearer, Content-Type: application/json),
// and the answer is checked against the response type the SDK declares.
//
// Verdicts: "unchanged" — the method works as its users would call it;
// "empty body" — Veil answers the spec's 200 with an empty body, which a
// client that parses every answer as JSON (the SDK does) reports as an
// error after the action was done; "shape" — the SDK expects a shape the
// spec does not give.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ed25519 } from "@noble/curves/ed25519";
import { createMessage, exportMessage, stellarSigner } from "../src/index.js";
import { startVeild, type Veild } from "../test/veild.js";
import { Chain, type AgentConfig, type AgentInfo, type Balance, type ChatResponse, type Conversation, type Notification, type Payment, type WraithConfig } from "./wraith-types.js";

// --- shape checks, one per declared type ---

type Check = (v: unknown, at: string) => void;
const fail = (at: string, want: string, v: unknown) => assert.fail(`${at}: want ${want}, got ${JSON.stringify(v)}`);
const str: Check = (v, at) => void (typeof v === "string" || fail(at, "string", v));
const num: Check = (v, at) => void (typeof v === "number" || fail(at, "number", v));
const bool: Check = (v, at) => void (typeof v === "boolean" || fail(at, "boolean", v));
const chain: Check = (v, at) => void ((Object.values(Chain) as unknown[]).includes(v) || fail(at, "a Chain", v));
const arr = (of: Check): Check => (v, at) => (Array.isArray(v) ? v.forEach((x, i) => of(x, `${at}[${i}]`)) : fail(at, "array", v));
const rec = (key: Check, of: Check): Check => (v, at) =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? Object.entries(v).forEach(([k, x]) => (key(k, `${at} key`), of(x, `${at}.${k}`)))
    : fail(at, "object", v);
const obj = (fields: Record<string, Check>, optional: Record<string, Check> = {}): Check => (v, at) => {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return fail(at, "object", v);
  const o = v as Record<string, unknown>;
  for (const [k, c] of Object.entries(fields)) c(o[k], `${at}.${k}`);
  for (const [k, c] of Object.entries(optional)) if (o[k] !== undefined) c(o[k], `${at}.${k}`);
};

const agentInfoT = obj({ id: str, name: str, chains: arr(chain), addresses: rec(chain, str), metaAddresses: rec(chain, str) });
const toolCallT = obj({ name: str, status: str }, { detail: str });
const chatResponseT = obj({ response: str, conversationId: str }, { toolCalls: arr(toolCallT) });
const balanceT = obj({ native: str, tokens: rec(str, str) });
const paymentT = obj({ stealthAddress: str, balance: str, ephemeralPubKey: str });
const conversationT = obj({ id: str, title: str, createdAt: str, updatedAt: str });
const messageT = obj({ role: str, text: str });
const notificationT = obj({ id: num, type: str, title: str, body: str, read: bool, createdAt: str });
const inboxT = obj({ notifications: arr(notificationT), unreadCount: num });
const secretT = obj({ secret: str });

// --- the client: requests as the SDK's types and the spec describe them ---

interface Answer {
  status: number;
  text: string;
}

class WraithShaped {
  constructor(readonly cfg: WraithConfig) {}

  async send(method: string, path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { "Content-Type": "application/json", Authorization: `Bearer ${this.cfg.apiKey}` };
    if (this.cfg.ai) Object.assign(headers, { "X-AI-Provider": this.cfg.ai.provider, "X-AI-Key": this.cfg.ai.apiKey });
    const res = await fetch(this.cfg.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  }

  /** json: a 2xx answer parsed as JSON, the way a client of the declared return types reads it. */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const a = await this.send(method, path, body);
    assert.ok(a.status >= 200 && a.status < 300, `${method} ${path} = ${a.status} ${a.text}`);
    return JSON.parse(a.text) as T;
  }
}

let veild: Veild;
let sdk: WraithShaped;
before(async () => {
  veild = await startVeild();
  sdk = new WraithShaped({ apiKey: veild.key, baseUrl: veild.url });
});
after(async () => {
  await veild?.stop();
});

const owner = privateKeyToAccount(generatePrivateKey());
let info: AgentInfo;
/** infoOnly keeps AgentInfo's declared fields (the create answer also has the spec's five). */
const infoOnly = (a: AgentInfo): AgentInfo => ({ id: a.id, name: a.name, chains: a.chains, addresses: a.addresses, metaAddresses: a.metaAddresses });
let conversationId: string;
const verdicts = new Map<string, "unchanged" | "empty body" | "shape">();

/** emptyOK checks the spec's empty 200 and that parsing it as JSON, as the SDK does, throws. */
function emptyOK(name: string, a: Answer) {
  assert.equal(a.status, 200, `${name}: ${a.text}`);
  assert.equal(a.text, "", name);
  assert.throws(() => JSON.parse(a.text), SyntaxError);
  verdicts.set(name, "empty body");
}

test("Wraith.createAgent: AgentConfig in, AgentInfo out (chains, addresses, metaAddresses are additive fields)", async () => {
  const message = createMessage("wraith-alice", Chain.Ethereum, owner.address, new Date());
  const config: AgentConfig = { name: "wraith-alice", chain: Chain.Ethereum, wallet: owner.address, signature: await owner.signMessage({ message }), message };
  info = await sdk.json<AgentInfo>("POST", "/agent/create", config);
  agentInfoT(info, "createAgent");
  assert.deepEqual(info.chains, [Chain.Ethereum]);
  assert.match(info.addresses.ethereum, /^0x[0-9a-fA-F]{40}$/);
  assert.match(info.metaAddresses.ethereum, /^st:eth:0x/);
  // An ed25519 owner (Stellar) through the same AgentConfig.
  const st = stellarSigner(ed25519.utils.randomPrivateKey());
  const m2 = createMessage("wraith-stella", Chain.Stellar, st.address, new Date());
  agentInfoT(await sdk.json("POST", "/agent/create", { name: "wraith-stella", chain: Chain.Stellar, wallet: st.address, signature: await st.sign(m2), message: m2 } satisfies AgentConfig), "createAgent stellar");
  // The SDK's types allow chain: Chain[]; the spec's chain is one identifier (or "all"): 400.
  const m3 = createMessage("wraith-multi", Chain.Ethereum, owner.address, new Date());
  const multi = await sdk.send("POST", "/agent/create", { name: "wraith-multi", chain: [Chain.Ethereum, Chain.Base], wallet: owner.address, signature: await owner.signMessage({ message: m3 }), message: m3 });
  assert.equal(multi.status, 400, multi.text);
  verdicts.set("createAgent", "unchanged");
});

test("Wraith.agent(id): no request; the agent's calls below use the id alone", () => {
  verdicts.set("agent", "unchanged");
});

test("Wraith.getAgentByWallet, getAgentByName (name and name.veil), listAgents: AgentInfo", async () => {
  const byWallet = await sdk.json<AgentInfo>("GET", `/agent/wallet/${owner.address}`);
  agentInfoT(byWallet, "getAgentByWallet");
  assert.deepEqual(byWallet, infoOnly(info));
  for (const n of ["wraith-alice", "wraith-alice.veil"]) {
    const byName = await sdk.json<AgentInfo>("GET", `/agent/info/${n}`);
    agentInfoT(byName, "getAgentByName");
    assert.deepEqual(byName, infoOnly(info));
  }
  const list = await sdk.json<AgentInfo[]>("GET", "/agents");
  arr(agentInfoT)(list, "listAgents");
  assert.deepEqual(list.map((a) => a.name), ["wraith-alice", "wraith-stella"]);
  verdicts.set("getAgentByWallet", "unchanged");
  verdicts.set("getAgentByName", "unchanged");
  verdicts.set("listAgents", "unchanged");
});

test("WraithAgent.chat: ChatResponse, a conversation continued by conversationId", async () => {
  const first = await sdk.json<ChatResponse>("POST", `/agent/${info.id}/chat`, { message: "what's my balance?", conversationId: undefined });
  chatResponseT(first, "chat");
  const next = await sdk.json<ChatResponse>("POST", `/agent/${info.id}/chat`, { message: "thanks", conversationId: first.conversationId });
  chatResponseT(next, "chat");
  assert.equal(next.conversationId, first.conversationId);
  conversationId = first.conversationId;
  // The SDK's ai.provider "gemini" is not one Veil serves: a 400 naming those it does.
  const gemini = new WraithShaped({ ...sdk.cfg, ai: { provider: "gemini", apiKey: "k" } });
  const g = await gemini.send("POST", `/agent/${info.id}/chat`, { message: "hi" });
  assert.equal(g.status, 400, g.text);
  assert.match(JSON.parse(g.text).message, /claude/);
  verdicts.set("chat", "unchanged");
});

test("WraithAgent.getStatus and getBalance: the status answer has balance and tokens", async () => {
  const status = await sdk.json<Record<string, unknown>>("GET", `/agent/${info.id}/status`);
  const balance: Balance = { native: (status.balance as string) || "0", tokens: (status.tokens as Record<string, string>) || {} };
  balanceT(balance, "getBalance");
  assert.notEqual(balance.native, "0", "the devnet funds a new agent");
  verdicts.set("getStatus", "unchanged");
  verdicts.set("getBalance", "unchanged");
});

test("WraithAgent.scanPayments: asks in chat; scan_payments' detail is an object (count), not the Payment[] the SDK expects", async () => {
  const out = await sdk.json<ChatResponse>("POST", `/agent/${info.id}/chat`, { message: "Scan for incoming stealth payments" });
  chatResponseT(out, "scanPayments");
  const scans = (out.toolCalls ?? []).filter((c) => c.name === "scan_payments");
  assert.equal(scans.length, 1, JSON.stringify(out));
  const detail = JSON.parse(scans[0]!.detail ?? "null") as unknown;
  assert.ok(detail !== null && typeof detail === "object" && !Array.isArray(detail), scans[0]!.detail);
  assert.equal(typeof (detail as { count?: unknown }).count, "number");
  // What a Payment[] reader gets from it: one element that is not a Payment.
  assert.throws(() => arr(paymentT)([detail] as Payment[], "scanPayments"));
  verdicts.set("scanPayments", "shape");
});

test("WraithAgent.exportKey(signature, message): { secret }", async () => {
  const message = exportMessage(info.id, owner.address, new Date());
  const out = await sdk.json<{ secret: string }>("POST", `/agent/${info.id}/export`, { signature: await owner.signMessage({ message }), message });
  secretT(out, "exportKey");
  assert.equal(privateKeyToAccount(out.secret as `0x${string}`).address, info.addresses.ethereum);
  verdicts.set("exportKey", "unchanged");
});

test("WraithAgent.getConversations and getMessages", async () => {
  const convs = await sdk.json<Conversation[]>("GET", `/agent/${info.id}/conversations`);
  arr(conversationT)(convs, "getConversations");
  assert.ok(convs.some((c) => c.id === conversationId));
  const msgs = await sdk.json<Array<{ role: string; text: string }>>("GET", `/agent/${info.id}/conversations/${conversationId}/messages`);
  arr(messageT)(msgs, "getMessages");
  assert.deepEqual(msgs.filter((m) => m.role === "user").map((m) => m.text), ["what's my balance?", "thanks"]);
  verdicts.set("getConversations", "unchanged");
  verdicts.set("getMessages", "unchanged");
});

test("WraithAgent.getNotifications: { notifications, unreadCount }", async () => {
  const inbox = await sdk.json<{ notifications: Notification[]; unreadCount: number }>("GET", `/agent/${info.id}/notifications`);
  inboxT(inbox, "getNotifications");
  verdicts.set("getNotifications", "unchanged");
});

test("WraithAgent.markNotificationsRead, clearNotifications, deleteConversation: done, with the spec's empty 200 body", async () => {
  emptyOK("markNotificationsRead", await sdk.send("POST", `/agent/${info.id}/notifications/read`, {}));
  assert.equal((await sdk.json<{ unreadCount: number }>("GET", `/agent/${info.id}/notifications`)).unreadCount, 0);
  emptyOK("clearNotifications", await sdk.send("DELETE", `/agent/${info.id}/notifications`));
  assert.deepEqual((await sdk.json<{ notifications: unknown[] }>("GET", `/agent/${info.id}/notifications`)).notifications, []);
  emptyOK("deleteConversation", await sdk.send("DELETE", `/agent/${info.id}/conversations/${conversationId}`));
  assert.equal((await sdk.send("GET", `/agent/${info.id}/conversations/${conversationId}/messages`)).status, 404);
});

test("the tally of docs/compat-wraith.md: 12 of 16 unchanged, 3 empty bodies, 1 shape", () => {
  const count = (v: string) => [...verdicts.values()].filter((x) => x === v).length;
  assert.equal(verdicts.size, 16, [...verdicts.keys()].join(", "));
  assert.deepEqual([count("unchanged"), count("empty body"), count("shape")], [12, 3, 1]);
});
