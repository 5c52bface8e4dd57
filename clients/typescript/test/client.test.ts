// Every endpoint group of the client against a real veild (one per file),
// and each signer (viem EVM, Stellar raw and SEP-53, Solana) signing
// create, export, policy and approval messages that the server accepts.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ed25519 } from "@noble/curves/ed25519";
import { hexToBytes } from "@noble/hashes/utils";
import {
  Veil, VeilError, isVeilError, evmSigner, stellarSigner, stellarSecret, solanaSigner, signCreate,
  stellarAddress, solanaAddress, createMessage, type Signer, type CreateAgentResponse, type ChatResponse,
} from "../src/index.js";
import { startVeild, type Veild } from "./veild.js";

let veild: Veild;
let veil: Veil;

before(async () => {
  veild = await startVeild(["--webhook-allow-private"]);
  veil = new Veil({ baseUrl: veild.url, apiKey: veild.key });
});
after(async () => {
  await veild?.stop();
});

/** until polls cond until it answers a value, for at most 120 s (a loaded machine), never sleeping a fixed time as the test's logic. */
async function until<T>(what: string, cond: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const v = await cond();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; veild log:\n${veild.logs().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const evm = () => evmSigner(privateKeyToAccount(generatePrivateKey()));
const seed = () => ed25519.utils.randomPrivateKey();

function toolCall(out: ChatResponse, name: string) {
  const call = out.toolCalls?.find((c) => c.name === name);
  assert.ok(call, `no ${name} in ${JSON.stringify(out)}`);
  assert.equal(call.status, "success", JSON.stringify(call));
  return JSON.parse(call.detail ?? "{}") as Record<string, unknown>;
}

test("health, readiness, OpenAPI document, TEE info", async () => {
  assert.deepEqual(await veil.health(), { status: "ok" });
  const ready = await veil.readiness();
  assert.equal(typeof ready.ready, "boolean");
  assert.ok(Array.isArray(ready.checks));
  const doc = await veil.openapi();
  assert.equal(doc.openapi, "3.1.0");
  const tee = await veil.teeInfo();
  assert.equal(typeof tee, "object");
});

test("errors are VeilError with the spec's status and message", async () => {
  const anon = new Veil({ baseUrl: veild.url, apiKey: "veil_live_" + "A".repeat(43) });
  await assert.rejects(anon.listAgents(), (e: unknown) => isVeilError(e, 401) && e.message.length > 0);
  await assert.rejects(veil.getAgent("00000000-0000-4000-8000-000000000000"), (e: unknown) => {
    assert.ok(e instanceof VeilError);
    assert.equal(e.status, 404);
    assert.equal(e.message, "agent not found");
    assert.ok(e.notFound);
    return true;
  });
  const s = evm();
  await assert.rejects(
    veil.createAgent({ name: "Bad Name", chain: "ethereum", wallet: s.address, signature: "0x00" }),
    (e: unknown) => isVeilError(e, 400) && /name/.test((e as Error).message),
  );
  // A signature of another message: 400, nothing created.
  const req = await signCreate(s, "sig-mismatch", "ethereum", new Date());
  await assert.rejects(veil.createAgent({ ...req, name: "sig-mismatch2" }), (e: unknown) => isVeilError(e, 400));
  // Client-side checks fail before any request.
  await assert.rejects(veil.createAgentSigned("ok-name", "stellar", s), /needs a stellar wallet/);
});

// The agents of the tests below, one owner signer each.
const owners = {
  evm: evm(),
  evmPayee: evm(),
  stellar: stellarSigner(stellarSecret(seed())),
  stellarPayee: stellarSigner(seed(), { sep53: true }),
  solana: solanaSigner(seed()),
  solanaPayee: (() => {
    const s = seed();
    const kp = new Uint8Array(64);
    kp.set(s);
    kp.set(ed25519.getPublicKey(s), 32);
    return solanaSigner(JSON.stringify([...kp]));
  })(),
};
const agents: Record<keyof typeof owners, CreateAgentResponse> = {} as never;
const names: Record<keyof typeof owners, string> = {
  evm: "ts-alice", evmPayee: "ts-bob", stellar: "ts-stella", stellarPayee: "ts-steve", solana: "ts-sol", solanaPayee: "ts-sam",
};
const chainOf: Record<keyof typeof owners, "ethereum" | "stellar" | "solana"> = {
  evm: "ethereum", evmPayee: "ethereum", stellar: "stellar", stellarPayee: "stellar", solana: "solana", solanaPayee: "solana",
};

test("create with each signer (viem, Stellar raw and SEP-53, Solana seed and keypair), then read the agent every way", async () => {
  for (const k of Object.keys(owners) as Array<keyof typeof owners>) {
    const a = await veil.createAgentSigned(names[k] + ".veil", chainOf[k], owners[k]);
    agents[k] = a;
    assert.equal(a.name, names[k]);
    assert.equal(a.chain, chainOf[k]);
    // The additive AgentInfo fields (docs/compat-wraith.md).
    assert.deepEqual(a.chains, [chainOf[k]]);
    assert.equal(a.addresses[chainOf[k]], a.address);
    assert.equal(a.metaAddresses[chainOf[k]], a.metaAddress);

    const info = await veil.getAgent(a.id);
    assert.deepEqual(info, { id: a.id, name: a.name, chains: a.chains, addresses: a.addresses, metaAddresses: a.metaAddresses });
    assert.deepEqual(await veil.agentByName(a.name + ".veil"), info);
    assert.deepEqual(await veil.agentByWallet(owners[k].address), info);
    const st = await veil.agentStatus(a.id);
    assert.equal(st.address, a.address);
    assert.deepEqual((await veil.agentStatus(a.id, chainOf[k])).address, a.address);
  }
  const list = await veil.listAgents();
  assert.deepEqual(list.map((i) => i.name), Object.values(names));
  // The name is taken: 409.
  await assert.rejects(veil.createAgentSigned(names.evm, "ethereum", evm()), (e: unknown) => isVeilError(e, 409));
  // A create without "message": the server checks the first two lines alone.
  const s = evm();
  const twoLines = createMessage("ts-short", "base", s.address, new Date()).split("\n").slice(0, 2).join("\n");
  const short = await veil.createAgent({ name: "ts-short", chain: "base", wallet: s.address, signature: await s.sign(twoLines) });
  assert.equal(short.chain, "base");
});

test("export with each signer: the secret is the agent's key", async () => {
  const e = await veil.exportKeySigned(agents.evm.id, owners.evm);
  assert.equal(privateKeyToAccount(e.secret as `0x${string}`).address, agents.evm.address);
  for (const [k, addr] of [["stellar", stellarAddress], ["solana", solanaAddress]] as const) {
    const out = await veil.exportKeySigned(agents[k].id, owners[k]);
    const raw = hexToBytes(out.secret.replace(/^0x/, ""));
    assert.equal(addr(ed25519.getPublicKey(raw.slice(0, 32))), agents[k].address, k);
  }
  // Another wallet's signature: 400.
  await assert.rejects(veil.exportKeySigned(agents.evm.id, owners.evmPayee), (e: unknown) => isVeilError(e, 400));
});

test("chat and conversations", async () => {
  const id = agents.evm.id;
  const first = await veil.chat(id, { message: "what's my balance?" });
  toolCall(first, "get_balance");
  const again = await veil.chat(id, { message: "and my balance now?", conversationId: first.conversationId }, { idempotencyKey: crypto.randomUUID() });
  assert.equal(again.conversationId, first.conversationId);
  const msgs = await veil.listMessages(id, first.conversationId);
  assert.deepEqual(msgs.filter((m) => m.role === "user").map((m) => m.text), ["what's my balance?", "and my balance now?"]);
  const empty = await veil.createConversation(id);
  assert.equal(empty.title, "");
  const convs = await veil.listConversations(id);
  assert.deepEqual(new Set(convs.map((c) => c.id)), new Set([first.conversationId, empty.id]));
  assert.equal(await veil.deleteConversation(id, empty.id), undefined);
  await assert.rejects(veil.listMessages(id, empty.id), (e: unknown) => isVeilError(e, 404));
});

test("invoices: made in chat, read, its pay page status, and paid refused while nothing was paid", async () => {
  const out = await veil.chat(agents.evm.id, { message: "invoice 0.001 ETH memo \"ts client\"" });
  const { id } = toolCall(out, "create_invoice") as { id: string };
  const inv = await veil.getInvoice(id);
  assert.equal(inv.status, "pending");
  assert.equal(inv.txHash, null);
  assert.equal(inv.agentName, names.evm);
  const view = await veil.payStatus(id);
  assert.equal(typeof view, "object");
  await assert.rejects(veil.markInvoicePaid(id), (e: unknown) => isVeilError(e, 400) && /no payment/.test((e as Error).message));
});

test("invoices list: newest first, filtered, paged by cursor to the end; a bad filter is a 400", async () => {
  const id = agents.evm.id;
  const made: string[] = [];
  for (const memo of ["ts list a", "ts list b", "ts list c"]) {
    const out = await veil.chat(id, { message: `invoice 0.001 ETH memo "${memo}"` });
    made.push((toolCall(out, "create_invoice") as { id: string }).id);
  }
  const first = await veil.listInvoices(id, { limit: 2 });
  assert.equal(first.invoices.length, 2);
  assert.equal(first.invoices[0]!.id, made[2]);
  assert.ok(first.nextCursor);
  const second = await veil.listInvoices(id, { limit: 2, cursor: first.nextCursor });
  assert.ok(!second.invoices.some((i) => first.invoices.some((j) => j.id === i.id)), "a page repeats an invoice");
  const all: string[] = [];
  for await (const inv of veil.invoices(id, { limit: 1, status: "pending" })) all.push(inv.id);
  for (const m of made) assert.ok(all.includes(m), `${m} not listed`);
  assert.deepEqual(all.slice(0, 3), [...made].reverse());
  assert.equal((await veil.listInvoices(id, { status: "paid" })).invoices.length, 0);
  const later = new Date(Date.now() + 3600_000);
  assert.deepEqual(await veil.listInvoices(id, { since: later }), { invoices: [] });
  await assert.rejects(veil.listInvoices(id, { limit: 101 }), (e: unknown) => isVeilError(e, 400) && /limit/.test((e as Error).message));
  await assert.rejects(veil.listInvoices(id, { cursor: "nope" }), (e: unknown) => isVeilError(e, 400) && /cursor/.test((e as Error).message));
  await assert.rejects(veil.listInvoices(id, { status: "open" as "paid" }), (e: unknown) => isVeilError(e, 400));
});

test("schedules: made in chat, paused, resumed, cancelled", async () => {
  const id = agents.evm.id;
  const out = await veil.chat(id, { message: `pay ${names.evmPayee} 0.001 ETH weekly` });
  toolCall(out, "schedule_payment");
  const [sc] = await veil.listSchedules(id);
  assert.ok(sc);
  assert.equal((await veil.pauseSchedule(id, sc.id)).status, "paused");
  assert.equal((await veil.resumeSchedule(id, sc.id)).status, "active");
  assert.equal((await veil.cancelSchedule(id, sc.id)).status, "cancelled");
  await assert.rejects(veil.pauseSchedule(id, sc.id), (e: unknown) => isVeilError(e, 409));
});

/** hold sets a policy that holds every payment of asset (signed by the owner), asks the agent to pay, and answers the approval id. */
async function hold(k: "evm" | "stellar" | "solana", payee: string, asset: string, amount: string): Promise<string> {
  const id = agents[k].id;
  const set = await veil.setPolicySigned(id, { approvalAbove: { [asset]: "0" }, approvalExpiry: "1h" }, owners[k]);
  assert.match(set.hash ?? "", /^[0-9a-f]{64}$/);
  assert.equal((await veil.getPolicy(id)).hash, set.hash);
  const out = await veil.chat(id, { message: `send ${amount} ${asset} to ${payee}` });
  const d = toolCall(out, out.toolCalls?.[0]?.name ?? "send_payment") as { approvalId?: string; status?: string };
  assert.equal(d.status, "pending_approval", JSON.stringify(out));
  return d.approvalId!;
}

test("policy and approvals: each signer sets a policy; EVM approves a held payment (paid), Stellar and Solana deny theirs", async () => {
  const evmHeld = await hold("evm", names.evmPayee, "ETH", "0.001");
  const pending = await veil.listApprovals(agents.evm.id, "pending");
  assert.deepEqual(pending.map((a) => a.id), [evmHeld]);
  assert.equal((await veil.getApproval(agents.evm.id, evmHeld)).status, "pending");
  const ok = await veil.approve(agents.evm.id, evmHeld, owners.evm);
  assert.equal(ok.status, "approved");
  assert.match(ok.txHash ?? "", /^0x[0-9a-f]{64}$/, JSON.stringify(ok));
  await assert.rejects(veil.approve(agents.evm.id, evmHeld, owners.evm), (e: unknown) => isVeilError(e, 409));

  for (const [k, payee, asset, amount] of [["stellar", names.stellarPayee, "XLM", "1"], ["solana", names.solanaPayee, "SOL", "0.01"]] as const) {
    const held = await hold(k, payee, asset, amount);
    // The payee's owner may not decide: 400.
    await assert.rejects(veil.deny(agents[k].id, held, owners[`${k}Payee`] as Signer), (e: unknown) => isVeilError(e, 400), k);
    const no = await veil.deny(agents[k].id, held, owners[k]);
    assert.equal(no.status, "denied", k);
    assert.equal((await veil.getApproval(agents[k].id, held)).status, "denied", k);
  }
});

test("notifications: listed, streamed, marked read, deleted", async () => {
  const id = agents.evm.id;
  const list = await until("notifications", async () => {
    const l = await veil.notifications(id);
    return l.notifications.length > 0 ? l : undefined;
  });
  assert.ok(list.unreadCount > 0);
  const ctl = new AbortController();
  const seen = [];
  for await (const n of veil.streamNotifications(id, { after: 0, signal: ctl.signal })) {
    seen.push(n);
    if (seen.length === list.notifications.length) break;
  }
  ctl.abort();
  assert.deepEqual(seen.map((n) => n.id), list.notifications.map((n) => n.id).reverse());
  // A notification stored after these calls (none is expected) would be
  // unread and kept: the checks look at the ones listed above.
  const listed = new Set(list.notifications.map((n) => n.id));
  assert.equal(await veil.markNotificationsRead(id), undefined);
  const read = await veil.notifications(id);
  assert.ok(read.notifications.filter((n) => listed.has(n.id)).every((n) => n.read), JSON.stringify(read));
  assert.equal(read.unreadCount, read.notifications.filter((n) => !n.read).length);
  assert.equal(await veil.deleteNotifications(id), undefined);
  assert.deepEqual((await veil.notifications(id)).notifications.filter((n) => listed.has(n.id)), []);
});

test("TEE attestation of an agent", async () => {
  const att = await veil.attest(agents.solana.id, "ts-nonce-1");
  assert.equal(att.agentId, agents.solana.id);
  assert.ok(att.publicKeys.solana);
});

test("webhooks: created, listed, tested (delivered to a local receiver), deliveries, deleted", async () => {
  const got: string[] = [];
  const srv: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push(body);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
    const wh = await veil.createWebhook({ url, events: ["payment_received"], agentId: agents.evm.id });
    assert.match(wh.secret ?? "", /^whsec_/);
    assert.deepEqual((await veil.listWebhooks()).map((w) => w.id), [wh.id]);
    const d = await veil.testWebhook(wh.id);
    const delivered = await until("the test delivery", async () => {
      const ds = await veil.webhookDeliveries(wh.id, 10);
      return ds.find((x) => x.id === d.id && x.status === "delivered");
    });
    assert.equal(delivered.attempts, 1);
    assert.equal(got.length, 1);
    await veil.deleteWebhook(wh.id);
    assert.deepEqual(await veil.listWebhooks(), []);
    await assert.rejects(veil.deleteWebhook(wh.id), (e: unknown) => isVeilError(e, 404));
  } finally {
    srv.close();
  }
});

test("payments list: the approved payment is recorded; paged, filtered, read by id; a bad filter or unknown payment refused", async () => {
  const id = agents.evm.id;
  const page = await veil.listPayments(id, { chain: "ethereum" });
  const sent = page.payments.find((p) => p.status === "broadcast" || p.status === "confirmed");
  assert.ok(sent, JSON.stringify(page));
  assert.equal(sent.asset, "ETH");
  assert.equal((await veil.getPayment(id, sent.id)).id, sent.id);
  assert.deepEqual(await veil.listPayments(id, { chain: "solana" }), { payments: [] });
  const seen: string[] = [];
  for await (const p of veil.payments(id, { limit: 1 })) seen.push(p.id);
  assert.equal(seen.length, (await veil.listPayments(id)).payments.length);
  assert.equal(new Set(seen).size, seen.length, "a page repeats a payment");
  await assert.rejects(veil.listPayments(id, { status: "sent" as "pending" }), (e: unknown) => isVeilError(e, 400) && /status/.test((e as Error).message));
  await assert.rejects(veil.listPayments(id, { chain: "mars" as "base" }), (e: unknown) => isVeilError(e, 400) && /chain/.test((e as Error).message));
  await assert.rejects(veil.getPayment(id, "00000000-0000-7000-8000-000000000000"), (e: unknown) => isVeilError(e, 404) && /payment not found/.test((e as Error).message));
});

test("received list: the payee finds the approved payment (the scanner's record), paged and filtered; a bad filter refused", async () => {
  const id = agents.evmPayee.id;
  const got = await until("the payee's received payment", async () => (await veil.listReceived(id, { chain: "ethereum" })).payments.find((p) => p.amount === "0.001"));
  assert.equal(got.asset, "ETH");
  assert.match(got.txHash, /^0x[0-9a-f]{64}$/);
  assert.ok(got.stealthAddress && got.ephemeralPubKey && got.receivedAt);
  assert.deepEqual(await veil.listReceived(id, { chain: "solana" }), { payments: [] });
  assert.ok((await veil.listReceived(id, { status: "held" })).payments.some((p) => p.txHash === got.txHash));
  const seen: string[] = [];
  for await (const p of veil.received(id, { limit: 1 })) seen.push(p.stealthAddress);
  assert.equal(seen.length, (await veil.listReceived(id)).payments.length);
  await assert.rejects(veil.listReceived(id, { status: "confirmed" as "held" }), (e: unknown) => isVeilError(e, 400) && /status/.test((e as Error).message));
  await assert.rejects(veil.listReceived(id, { cursor: "nope" }), (e: unknown) => isVeilError(e, 400) && /cursor/.test((e as Error).message));
});
