// The retry rules, against a scripted fetch: what is repeated, what never
// is, and how long the client waits (the Go client's rules, client/client.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Veil, VeilError, isVeilError } from "../src/index.js";

interface Seen {
  method: string;
  url: string;
  headers: Headers;
}

/** scripted answers one response per request, in order, and records the requests. */
function scripted(responses: Array<() => Response>) {
  const seen: Seen[] = [];
  const waits: number[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    seen.push({ method: init.method ?? "GET", url, headers: new Headers(init.headers) });
    const next = responses[seen.length - 1];
    if (!next) throw new Error("unexpected request " + url);
    return next();
  }) as unknown as typeof globalThis.fetch;
  const client = new Veil({ baseUrl: "http://veil.test", apiKey: "veil_live_x", fetch, sleep: async (ms) => void waits.push(ms) });
  return { client, seen, waits };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const errBody = (status: number, message: string, headers: Record<string, string> = {}) => json(status, { message, statusCode: status }, headers);
const netError = () => {
  throw new TypeError("fetch failed");
};

test("a GET is retried on 503, 429, 504, 502 and network errors, then answers", async () => {
  const { client, seen } = scripted([errBody(503, "draining"), errBody(429, "slow down"), netError, json(200, [])]);
  assert.deepEqual(await client.listAgents(), []);
  assert.equal(seen.length, 4);
  const b = scripted([errBody(502, "proxy"), json(200, { status: "ok" })]);
  assert.deepEqual(await b.client.health(), { status: "ok" });
  assert.equal(b.seen.length, 2);
});

test("a GET gives up after maxAttempts with the last error", async () => {
  const { client, seen } = scripted([errBody(503, "a"), errBody(503, "b"), errBody(503, "c"), errBody(503, "d"), errBody(503, "e")]);
  await assert.rejects(client.listAgents(), (e: unknown) => isVeilError(e, 503) && e.message === "d");
  assert.equal(seen.length, 4);
});

test("4xx other than 429 is not retried, and carries status and message", async () => {
  const { client, seen } = scripted([errBody(404, "agent not found", { "X-Request-Id": "r1" })]);
  await assert.rejects(client.getAgent("00000000-0000-4000-8000-000000000000"), (e: unknown) => {
    assert.ok(e instanceof VeilError);
    assert.equal(e.status, 404);
    assert.equal(e.message, "agent not found");
    assert.equal(e.requestId, "r1");
    assert.equal(e.method, "GET");
    return true;
  });
  assert.equal(seen.length, 1);
});

test("create, export, conversation writes, policy, approvals and webhook writes are never retried", async () => {
  const calls: Array<[string, (c: Veil) => Promise<unknown>]> = [
    ["createAgent", (c) => c.createAgent({ name: "abc", chain: "ethereum", wallet: "0x0", signature: "0x0" })],
    ["exportKey", (c) => c.exportKey("id", { message: "m", signature: "s" })],
    ["createConversation", (c) => c.createConversation("id")],
    ["deleteConversation", (c) => c.deleteConversation("id", "conv")],
    ["setPolicy", (c) => c.setPolicy("id", { policy: {}, message: "m", signature: "s" })],
    ["decideApproval", (c) => c.decideApproval("id", "ap", { decision: "approve", message: "m", signature: "s" })],
    ["createWebhook", (c) => c.createWebhook({ url: "http://x" })],
    ["deleteWebhook", (c) => c.deleteWebhook("w")],
    ["testWebhook", (c) => c.testWebhook("w")],
  ];
  for (const [name, call] of calls) {
    const { client, seen } = scripted([errBody(503, "down"), json(200, {})]);
    await assert.rejects(call(client), (e: unknown) => isVeilError(e, 503), name);
    assert.equal(seen.length, 1, name);
    const n = scripted([netError, json(200, {})]);
    await assert.rejects(call(n.client), TypeError, name);
    assert.equal(n.seen.length, 1, name);
  }
});

test("idempotent POSTs and DELETEs are retried", async () => {
  const calls: Array<[string, (c: Veil) => Promise<unknown>]> = [
    ["markNotificationsRead", (c) => c.markNotificationsRead("id")],
    ["deleteNotifications", (c) => c.deleteNotifications("id")],
    ["markInvoicePaid", (c) => c.markInvoicePaid("inv")],
    ["pauseSchedule", (c) => c.pauseSchedule("id", "s")],
    ["resumeSchedule", (c) => c.resumeSchedule("id", "s")],
    ["cancelSchedule", (c) => c.cancelSchedule("id", "s")],
    ["previewPolicy", (c) => c.previewPolicy("id", {})],
  ];
  for (const [name, call] of calls) {
    const { client, seen } = scripted([errBody(503, "down"), () => new Response("", { status: 200 })]);
    await call(client);
    assert.equal(seen.length, 2, name);
  }
  // A 502 is a proxy's only for a GET: a POST's 502 is the server's own.
  const { client, seen } = scripted([errBody(502, "model refused"), json(200, {})]);
  await assert.rejects(client.markInvoicePaid("inv"), (e: unknown) => isVeilError(e, 502));
  assert.equal(seen.length, 1);
});

test("chat carries an Idempotency-Key, reused on every attempt; without one it is not retried", async () => {
  const answer = { response: "hi", conversationId: "c" };
  const a = scripted([errBody(503, "busy"), netError, json(200, answer)]);
  assert.deepEqual(await a.client.chat("id", { message: "hi" }), answer);
  assert.equal(a.seen.length, 3);
  const keys = a.seen.map((s) => s.headers.get("Idempotency-Key"));
  assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
  assert.ok(keys.every((k) => k === keys[0]));

  const b = scripted([errBody(503, "busy"), json(200, answer)]);
  await b.client.chat("id", { message: "hi" }, { idempotencyKey: "mine" });
  assert.deepEqual(b.seen.map((s) => s.headers.get("Idempotency-Key")), ["mine", "mine"]);

  const fetch = (async () => {
    throw new TypeError("fetch failed");
  }) as unknown as typeof globalThis.fetch;
  let n = 0;
  const c = new Veil({ baseUrl: "http://veil.test", fetch: ((...a: Parameters<typeof fetch>) => (n++, fetch(...a))) as typeof fetch, autoIdempotencyKey: false, sleep: async () => {} });
  await assert.rejects(c.chat("id", { message: "hi" }), TypeError);
  assert.equal(n, 1);
});

test("Retry-After is honoured up to maxRetryAfterMs; a longer one ends the retries", async () => {
  const a = scripted([errBody(429, "slow", { "Retry-After": "2" }), json(200, [])]);
  await a.client.listAgents();
  assert.deepEqual(a.waits, [2000]);
  const b = scripted([errBody(503, "later", { "Retry-After": "120" }), json(200, [])]);
  await assert.rejects(b.client.listAgents(), (e: unknown) => isVeilError(e, 503) && e.retryAfterMs === 120000);
  assert.equal(b.seen.length, 1);
});

test("backoff is full jitter within [0, min(max, min·2^n)]", async () => {
  const { client, waits } = scripted([errBody(503, ""), errBody(503, ""), errBody(503, ""), json(200, [])]);
  await client.listAgents();
  assert.equal(waits.length, 3);
  waits.forEach((w, i) => assert.ok(w >= 0 && w <= Math.min(5000, 200 * 2 ** i), `wait ${i} = ${w}`));
});

test("a body that is not the spec's error keeps a short excerpt or the status text", async () => {
  const html = scripted([() => new Response("<html>bad gateway</html>", { status: 404 })]);
  await assert.rejects(html.client.getInvoice("x"), (e: unknown) => isVeilError(e, 404) && e.message === "Not Found");
  const text = scripted([() => new Response("upstream said no", { status: 400 })]);
  await assert.rejects(text.client.getInvoice("x"), (e: unknown) => isVeilError(e, 400) && e.message === "upstream said no");
});

test("an aborted call is not retried", async () => {
  const ctl = new AbortController();
  let n = 0;
  const fetch = (async () => {
    n++;
    ctl.abort();
    const e = new Error("aborted");
    e.name = "AbortError";
    throw e;
  }) as unknown as typeof globalThis.fetch;
  const c = new Veil({ baseUrl: "http://veil.test", fetch, sleep: async () => {} });
  await assert.rejects(c.listAgents({ signal: ctl.signal }), { name: "AbortError" });
  assert.equal(n, 1);
});
