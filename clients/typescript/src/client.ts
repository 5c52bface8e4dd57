import { VeilError, errorMessage } from "./errors.js";
import { createMessage, exportMessage, approvalMessage, nameSuffix } from "./messages.js";
import type { Signer } from "./signers.js";
import type {
  AgentInfo, AgentStatus, Approval, ApprovalDecision, Attestation, ChatRequest, ChatResponse, Conversation,
  CreateAgentRequest, CreateAgentResponse, CreateWebhookRequest, DecideApprovalRequest, ExportRequest, ExportResponse,
  Health, Invoice, InvoicePage, Message, PaymentPage, PaymentRecord, ReceivedPage, ReceivedPayment, ReceivedStatus, Notification, NotificationList, PayView, PolicyPreview, PolicyView, Readiness, Schedule,
  SetPolicyRequest, SpendingPolicy, TEEInfo, Webhook, WebhookDelivery,
} from "./types.js";

/** The client's version, sent in User-Agent. */
export const version = "0.1.0";

/** veild's default listen address. */
export const defaultBaseUrl = "http://127.0.0.1:8080";

/** How often and how long a safe request is retried (the Go client's RetryPolicy). */
export interface RetryPolicy {
  /** Counts the first try; 1 disables retries. */
  maxAttempts: number;
  /** Bounds of the exponential backoff with full jitter: a random wait in [0, min(max, min·2^n)]. */
  minBackoffMs: number;
  maxBackoffMs: number;
  /** A longer Retry-After ends the retries and the error is returned (its retryAfterMs says how long to wait). */
  maxRetryAfterMs: number;
}

/** The default policy: 4 attempts, 200 ms to 5 s backoff, Retry-After honoured up to 30 s. */
export const defaultRetry: RetryPolicy = { maxAttempts: 4, minBackoffMs: 200, maxBackoffMs: 5000, maxRetryAfterMs: 30000 };

/** Every request a single attempt. */
export const noRetry: RetryPolicy = { maxAttempts: 1, minBackoffMs: 0, maxBackoffMs: 0, maxRetryAfterMs: 0 };

export interface VeilOptions {
  /** The server, e.g. "http://127.0.0.1:8080" or "https://veil.example.com/api". */
  baseUrl?: string;
  /** The bearer API key (veil_live_…). */
  apiKey?: string;
  /** X-AI-Provider and X-AI-Key on every request (the server uses them for chat). */
  aiProvider?: { provider: string; key?: string };
  retry?: Partial<RetryPolicy>;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** Prefix of the User-Agent header. */
  userAgent?: string;
  /** chat() adds a random Idempotency-Key unless one is given (default true); false: chat is retried only with a key. */
  autoIdempotencyKey?: boolean;
  /** How the client waits between attempts (tests replace it). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Options of one call. */
export interface CallOptions {
  signal?: AbortSignal;
  /** X-Request-Id: the server logs and echoes it. */
  requestId?: string;
  /** X-AI-Provider / X-AI-Key for this call only. */
  aiProvider?: { provider?: string; key?: string };
}

/** Options of chat(). */
export interface ChatOptions extends CallOptions {
  /** Idempotency-Key: a retry with the same key never runs a payment twice; it makes the call retryable. */
  idempotencyKey?: string;
}

interface Call {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** A repeat cannot do something twice. */
  retryable: boolean;
  idempotencyKey?: string;
  /** Non-2xx statuses whose body is an answer, not an error (readiness's 503). */
  answerStatuses?: number[];
  opts?: CallOptions;
}

const enc = encodeURIComponent;

/** The status filter of listInvoices: a stored status, or expired (unpaid past expiresAt; its status stays pending). */
export type InvoiceStatusFilter = "pending" | "paid" | "expired";

/** Filters and paging of a list (docs/api.md, "Lists and paging"). */
export interface ListQuery<S extends string = string> {
  status?: S;
  /** Only what was created at or after it: a Date, or RFC 3339 / YYYY-MM-DD text. */
  since?: Date | string;
  /** The page's size, 1 to 100 (default 50). */
  limit?: number;
  /** The previous page's nextCursor, unchanged. */
  cursor?: string;
}

function listQuery(q: ListQuery): Call["query"] {
  return { status: q.status, since: q.since instanceof Date ? q.since.toISOString() : q.since, limit: q.limit, cursor: q.cursor };
}

/**
 * Veil is a client of one Veil server with one API key.
 *
 * Retries happen only where a repeat cannot do something twice, exactly as
 * in the Go client (client/client.go): GETs, the idempotent POSTs and
 * DELETEs (notifications read and delete, invoice paid, schedule
 * transitions, policy preview) and chat requests carrying an
 * Idempotency-Key (chat adds one unless autoIdempotencyKey is false).
 * Creating an agent, exporting a key, setting a policy, deciding an
 * approval, creating and deleting a conversation, and the webhook writes
 * are never retried. A retry follows a network error, 429, 503, 504, or a
 * 502 on a GET (the server's own 502 is a model provider's refusal, which a
 * repeat does not fix), after exponential backoff with full jitter or the
 * server's Retry-After.
 */
export class Veil {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #ai: { provider: string; key?: string } | undefined;
  readonly #retry: RetryPolicy;
  readonly #fetch: typeof fetch;
  readonly #userAgent: string;
  readonly #autoIdem: boolean;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(opts: VeilOptions = {}) {
    const base = (opts.baseUrl || defaultBaseUrl).replace(/\/+$/, "");
    const u = new URL(base);
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new TypeError(`veil: server URL ${base}: want http(s)://host[:port][/path]`);
    }
    this.baseUrl = base;
    this.#apiKey = (opts.apiKey ?? "").trim();
    this.#ai = opts.aiProvider;
    this.#retry = { ...defaultRetry, ...opts.retry };
    if (this.#retry.maxAttempts < 1) this.#retry.maxAttempts = 1;
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.#userAgent = (opts.userAgent ? opts.userAgent + " " : "") + "veil-ts/" + version;
    this.#autoIdem = opts.autoIdempotencyKey ?? true;
    this.#sleep = opts.sleep ?? sleep;
  }

  // --- health, readiness, documents ---

  /** GET /health (no API key needed). */
  health(opts?: CallOptions): Promise<Health> {
    return this.#get("/health", opts);
  }

  /** GET /readyz: the readiness checks; a 503 (not ready) is answered, not thrown. */
  readiness(opts?: CallOptions): Promise<Readiness> {
    return this.#do({ method: "GET", path: "/readyz", retryable: false, answerStatuses: [503], opts });
  }

  /** GET /openapi.json: the OpenAPI document this client's types are generated from. */
  openapi(opts?: CallOptions): Promise<Record<string, unknown>> {
    return this.#get("/openapi.json", opts);
  }

  // --- agents ---

  /** POST /agent/create (201; 200 for a retried signed request). Never retried: build req with signCreate, or use createAgentSigned. */
  createAgent(req: CreateAgentRequest, opts?: CallOptions): Promise<CreateAgentResponse> {
    return this.#do({ method: "POST", path: "/agent/create", body: req, retryable: false, opts });
  }

  /** Creates agent name on chain, owned by signer's wallet, with a message issued now. */
  async createAgentSigned(name: string, chain: CreateAgentRequest["chain"], signer: Signer, opts?: CallOptions): Promise<CreateAgentResponse> {
    return this.createAgent(await signCreate(signer, name, chain, new Date()), opts);
  }

  /** GET /agents: the account's agents, oldest first. */
  listAgents(opts?: CallOptions): Promise<AgentInfo[]> {
    return this.#get("/agents", opts);
  }

  /** GET /agent/:id. */
  getAgent(id: string, opts?: CallOptions): Promise<AgentInfo> {
    return this.#get(`/agent/${enc(id)}`, opts);
  }

  /** GET /agent/info/:name (alice or alice.veil). */
  agentByName(name: string, opts?: CallOptions): Promise<AgentInfo> {
    return this.#get(`/agent/info/${enc(name)}`, opts);
  }

  /** GET /agent/wallet/:address: the oldest agent the owner wallet has in this account. */
  agentByWallet(address: string, opts?: CallOptions): Promise<AgentInfo> {
    return this.#get(`/agent/wallet/${enc(address)}`, opts);
  }

  /** GET /agent/:id/status[?chain=…]. */
  agentStatus(id: string, chain?: string, opts?: CallOptions): Promise<AgentStatus> {
    return this.#get(`/agent/${enc(id)}/status`, opts, { chain });
  }

  /** POST /agent/:id/export. Never retried (a signature is accepted once). */
  exportKey(id: string, req: ExportRequest, opts?: CallOptions): Promise<ExportResponse> {
    return this.#do({ method: "POST", path: `/agent/${enc(id)}/export`, body: req, retryable: false, opts });
  }

  /** Exports the key of agent id with a fresh signature of signer, the agent's owner wallet. */
  async exportKeySigned(id: string, signer: Signer, opts?: CallOptions): Promise<ExportResponse> {
    return this.exportKey(id, await signExport(signer, id, new Date()), opts);
  }

  // --- chat ---

  /** POST /agent/:id/chat, with an Idempotency-Key (random unless given), which makes it safe to retry. */
  chat(id: string, req: ChatRequest, opts?: ChatOptions): Promise<ChatResponse> {
    let key = opts?.idempotencyKey;
    if (!key && this.#autoIdem) key = newIdempotencyKey();
    return this.#do({ method: "POST", path: `/agent/${enc(id)}/chat`, body: req, retryable: !!key, idempotencyKey: key, opts });
  }

  // --- conversations ---

  /** GET /agent/:id/conversations, most recently updated first. */
  listConversations(id: string, opts?: CallOptions): Promise<Conversation[]> {
    return this.#get(`/agent/${enc(id)}/conversations`, opts);
  }

  /** POST /agent/:id/conversations (201, empty). Not retried: a repeat would make a second one. */
  createConversation(id: string, opts?: CallOptions): Promise<Conversation> {
    return this.#do({ method: "POST", path: `/agent/${enc(id)}/conversations`, retryable: false, opts });
  }

  /** GET /agent/:id/conversations/:convId/messages, chronological. */
  listMessages(id: string, convId: string, opts?: CallOptions): Promise<Message[]> {
    return this.#get(`/agent/${enc(id)}/conversations/${enc(convId)}/messages`, opts);
  }

  /** DELETE /agent/:id/conversations/:convId (200, empty body). Not retried: a repeat after a lost answer would report a 404. */
  async deleteConversation(id: string, convId: string, opts?: CallOptions): Promise<void> {
    await this.#do({ method: "DELETE", path: `/agent/${enc(id)}/conversations/${enc(convId)}`, retryable: false, opts });
  }

  // --- invoices ---

  /** GET /invoice/:id. */
  getInvoice(invoiceId: string, opts?: CallOptions): Promise<Invoice> {
    return this.#get(`/invoice/${enc(invoiceId)}`, opts);
  }

  /** POST /invoice/:id/paid, with {txHash} when given (the server verifies it on chain). Idempotent: retried. */
  markInvoicePaid(invoiceId: string, txHash?: string, opts?: CallOptions): Promise<Invoice> {
    return this.#do({ method: "POST", path: `/invoice/${enc(invoiceId)}/paid`, body: txHash ? { txHash } : undefined, retryable: true, opts });
  }

  /** GET /agent/:id/invoices: one page of the agent's invoices, newest first (status pending: can still be paid; expired: unpaid past expiresAt). Pass the page's nextCursor as query.cursor for the next one. */
  listInvoices(id: string, query: ListQuery<InvoiceStatusFilter> = {}, opts?: CallOptions): Promise<InvoicePage> {
    return this.#get(`/agent/${enc(id)}/invoices`, opts, listQuery(query));
  }

  /** Every invoice query selects, page by page (listInvoices following nextCursor), newest first. */
  async *invoices(id: string, query: ListQuery<InvoiceStatusFilter> = {}, opts?: CallOptions): AsyncGenerator<Invoice> {
    let q = { ...query };
    for (;;) {
      const page = await this.listInvoices(id, q, opts);
      yield* page.invoices;
      if (!page.nextCursor || page.nextCursor === q.cursor) return;
      q = { ...q, cursor: page.nextCursor };
    }
  }

  // --- payments the agent made ---

  /** GET /agent/:id/payments: one page of the agent's payment records, newest first; pass nextCursor as query.cursor for the next one. */
  listPayments(id: string, query: ListQuery<PaymentRecord["status"]> & { chain?: PaymentRecord["chain"] } = {}, opts?: CallOptions): Promise<PaymentPage> {
    return this.#get(`/agent/${enc(id)}/payments`, opts, { ...listQuery(query), chain: query.chain });
  }

  /** Every payment record query selects, page by page (listPayments following nextCursor), newest first. */
  async *payments(id: string, query: ListQuery<PaymentRecord["status"]> & { chain?: PaymentRecord["chain"] } = {}, opts?: CallOptions): AsyncGenerator<PaymentRecord> {
    let q = { ...query };
    for (;;) {
      const page = await this.listPayments(id, q, opts);
      yield* page.payments;
      if (!page.nextCursor || page.nextCursor === q.cursor) return;
      q = { ...q, cursor: page.nextCursor };
    }
  }

  // --- payments the agent received ---

  /** GET /agent/:id/payments/received: one page of the stealth payments the agent received (one per one-time address), newest first; status is "held" or "withdrawn". */
  listReceived(id: string, query: ListQuery<ReceivedStatus> & { chain?: ReceivedPayment["chain"] } = {}, opts?: CallOptions): Promise<ReceivedPage> {
    return this.#get(`/agent/${enc(id)}/payments/received`, opts, { ...listQuery(query), chain: query.chain });
  }

  /** Every received payment query selects, page by page (listReceived following nextCursor), newest first. */
  async *received(id: string, query: ListQuery<ReceivedStatus> & { chain?: ReceivedPayment["chain"] } = {}, opts?: CallOptions): AsyncGenerator<ReceivedPayment> {
    let q = { ...query };
    for (;;) {
      const page = await this.listReceived(id, q, opts);
      yield* page.payments;
      if (!page.nextCursor || page.nextCursor === q.cursor) return;
      q = { ...q, cursor: page.nextCursor };
    }
  }

  /** GET /agent/:id/payments/:paymentId: one payment record. */
  getPayment(id: string, paymentId: string, opts?: CallOptions): Promise<PaymentRecord> {
    return this.#get(`/agent/${enc(id)}/payments/${enc(paymentId)}`, opts);
  }

  /** GET /pay/:id/status: the pay page's view of an invoice (no API key needed). */
  payStatus(invoiceId: string, opts?: CallOptions): Promise<PayView> {
    return this.#get(`/pay/${enc(invoiceId)}/status`, opts);
  }

  // --- notifications ---

  /** GET /agent/:id/notifications, newest first. */
  notifications(id: string, opts?: CallOptions): Promise<NotificationList> {
    return this.#get(`/agent/${enc(id)}/notifications`, opts);
  }

  /** POST /agent/:id/notifications/read (200, empty body). Idempotent: retried. */
  async markNotificationsRead(id: string, opts?: CallOptions): Promise<void> {
    await this.#do({ method: "POST", path: `/agent/${enc(id)}/notifications/read`, retryable: true, opts });
  }

  /** DELETE /agent/:id/notifications (200, empty body): every notification removed for good. Idempotent: retried. */
  async deleteNotifications(id: string, opts?: CallOptions): Promise<void> {
    await this.#do({ method: "DELETE", path: `/agent/${enc(id)}/notifications`, retryable: true, opts });
  }

  /**
   * GET /agent/:id/notifications/stream (server-sent events): yields each
   * notification in id order, those above `after` first, and the payment
   * events (`type` payment.confirmed / payment.failed, a PaymentEvent with
   * the payment record) in the same order, until the stream
   * ends or `signal` aborts. One connection: to resume after a drop, call
   * again with after = the last id seen.
   */
  async *streamNotifications(id: string, opts: CallOptions & { after?: number } = {}): AsyncGenerator<Notification> {
    const path = `/agent/${enc(id)}/notifications/stream`;
    const headers = this.#headers(false, opts);
    headers.set("Accept", "text/event-stream");
    if (opts.after !== undefined) headers.set("Last-Event-ID", String(opts.after));
    const res = await this.#fetch(this.baseUrl + path, { method: "GET", headers, signal: opts.signal });
    if (res.status !== 200 || !res.body) {
      throw await this.#error("GET", path, res);
    }
    const decoder = new TextDecoder();
    let buf = "";
    let data = "";
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (data) yield JSON.parse(data) as Notification;
          data = "";
        } else if (line.startsWith("data:")) {
          data += line.slice(5).replace(/^ /, "");
        }
      }
    }
  }

  // --- schedules ---

  /** GET /agent/:id/schedules. */
  listSchedules(id: string, opts?: CallOptions): Promise<Schedule[]> {
    return this.#get(`/agent/${enc(id)}/schedules`, opts);
  }

  /** POST /agent/:id/schedules/:scheduleId/pause. An action names the state it leads to, so it is retried. */
  pauseSchedule(id: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.#scheduleAction(id, scheduleId, "pause", opts);
  }

  /** POST /agent/:id/schedules/:scheduleId/resume (retried). */
  resumeSchedule(id: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.#scheduleAction(id, scheduleId, "resume", opts);
  }

  /** POST /agent/:id/schedules/:scheduleId/cancel (retried). */
  cancelSchedule(id: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.#scheduleAction(id, scheduleId, "cancel", opts);
  }

  #scheduleAction(id: string, scheduleId: string, action: "pause" | "resume" | "cancel", opts?: CallOptions): Promise<Schedule> {
    return this.#do({ method: "POST", path: `/agent/${enc(id)}/schedules/${enc(scheduleId)}/${action}`, retryable: true, opts });
  }

  // --- TEE ---

  /** GET /tee/info. */
  teeInfo(opts?: CallOptions): Promise<TEEInfo> {
    return this.#get("/tee/info", opts);
  }

  /** GET /tee/attest/:agentId[?nonce=…]: pass a fresh nonce (at most 128 characters) to prove freshness. */
  attest(agentId: string, nonce?: string, opts?: CallOptions): Promise<Attestation> {
    return this.#get(`/tee/attest/${enc(agentId)}`, opts, { nonce });
  }

  // --- spending policy ---

  /** GET /agent/:id/policy. */
  getPolicy(id: string, opts?: CallOptions): Promise<PolicyView> {
    return this.#get(`/agent/${enc(id)}/policy`, opts);
  }

  /** POST /agent/:id/policy/preview: the policy's hash and the message to sign now. It changes nothing: retried. */
  previewPolicy(id: string, policy: SpendingPolicy, opts?: CallOptions & { invoice?: string }): Promise<PolicyPreview> {
    // invoice: an invoice id or payment link of this server; the answer's invoiceCheck says whether
    // a payment of it would pass, checked by the invoice's issuer (not its one-time address).
    const body = opts?.invoice ? { policy, invoice: opts.invoice } : { policy };
    return this.#do({ method: "POST", path: `/agent/${enc(id)}/policy/preview`, body, retryable: true, opts });
  }

  /** PUT /agent/:id/policy with a signed message. Not retried. */
  setPolicy(id: string, req: SetPolicyRequest, opts?: CallOptions): Promise<PolicyView> {
    return this.#do({ method: "PUT", path: `/agent/${enc(id)}/policy`, body: req, retryable: false, opts });
  }

  /** Sets the policy: asks the server for the exact message (previewPolicy), has signer (the owner wallet) sign it, and PUTs it. */
  async setPolicySigned(id: string, policy: SpendingPolicy, signer: Signer, opts?: CallOptions): Promise<PolicyView> {
    const pre = await this.previewPolicy(id, policy, opts);
    const signature = await signer.sign(pre.message);
    return this.setPolicy(id, { policy, message: pre.message, signature }, opts);
  }

  // --- approvals ---

  /** GET /agent/:id/approvals[?status=…], newest first. */
  listApprovals(id: string, status?: Approval["status"], opts?: CallOptions): Promise<Approval[]> {
    return this.#get(`/agent/${enc(id)}/approvals`, opts, { status });
  }

  /** GET /agent/:id/approvals/:approvalId. */
  getApproval(id: string, approvalId: string, opts?: CallOptions): Promise<Approval> {
    return this.#get(`/agent/${enc(id)}/approvals/${enc(approvalId)}`, opts);
  }

  /** POST /agent/:id/approvals/:approvalId. Never retried: a repeat is a 409 (decided) or 400 (signature used); read the approval instead. */
  decideApproval(id: string, approvalId: string, req: DecideApprovalRequest, opts?: CallOptions): Promise<ApprovalDecision> {
    return this.#do({ method: "POST", path: `/agent/${enc(id)}/approvals/${enc(approvalId)}`, body: req, retryable: false, opts });
  }

  /** Approves a held payment with signer's signature issued now; the answer carries the payment's txHash (or its error). */
  async approve(id: string, approvalId: string, signer: Signer, opts?: CallOptions): Promise<ApprovalDecision> {
    return this.decideApproval(id, approvalId, await signApproval(signer, id, approvalId, false, new Date()), opts);
  }

  /** Denies a held payment with signer's signature issued now. */
  async deny(id: string, approvalId: string, signer: Signer, opts?: CallOptions): Promise<ApprovalDecision> {
    return this.decideApproval(id, approvalId, await signApproval(signer, id, approvalId, true, new Date()), opts);
  }

  // --- webhooks ---

  /** POST /webhooks (201). Not retried: a repeat would make a second webhook. Keep the answer's secret: it is shown once. */
  createWebhook(req: CreateWebhookRequest, opts?: CallOptions): Promise<Webhook> {
    return this.#do({ method: "POST", path: "/webhooks", body: req, retryable: false, opts });
  }

  /** GET /webhooks. */
  listWebhooks(opts?: CallOptions): Promise<Webhook[]> {
    return this.#get("/webhooks", opts);
  }

  /** DELETE /webhooks/:id. Not retried (as the Go client). */
  async deleteWebhook(webhookId: string, opts?: CallOptions): Promise<void> {
    await this.#do({ method: "DELETE", path: `/webhooks/${enc(webhookId)}`, retryable: false, opts });
  }

  /** POST /webhooks/:id/test (202): a test event is queued. Not retried. */
  testWebhook(webhookId: string, opts?: CallOptions): Promise<WebhookDelivery> {
    return this.#do({ method: "POST", path: `/webhooks/${enc(webhookId)}/test`, retryable: false, opts });
  }

  /** GET /webhooks/:id/deliveries[?limit=…], newest first. */
  webhookDeliveries(webhookId: string, limit?: number, opts?: CallOptions): Promise<WebhookDelivery[]> {
    return this.#get(`/webhooks/${enc(webhookId)}/deliveries`, opts, { limit });
  }

  // --- transport ---

  #get<T>(path: string, opts?: CallOptions, query?: Call["query"]): Promise<T> {
    return this.#do({ method: "GET", path, query, retryable: true, opts });
  }

  #headers(hasBody: boolean, opts?: CallOptions, idempotencyKey?: string): Headers {
    const h = new Headers({ Accept: "application/json", "User-Agent": this.#userAgent });
    if (hasBody) h.set("Content-Type", "application/json");
    if (this.#apiKey) h.set("Authorization", "Bearer " + this.#apiKey);
    let provider = this.#ai?.provider ?? "";
    let key = this.#ai?.key ?? "";
    if (opts?.aiProvider) {
      if (opts.aiProvider.provider) provider = opts.aiProvider.provider;
      key = opts.aiProvider.key ?? "";
    }
    if (provider) h.set("X-AI-Provider", provider);
    if (key) h.set("X-AI-Key", key);
    if (idempotencyKey) h.set("Idempotency-Key", idempotencyKey);
    if (opts?.requestId) h.set("X-Request-Id", opts.requestId);
    return h;
  }

  async #do<T>(c: Call): Promise<T> {
    let url = this.baseUrl + c.path;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(c.query ?? {})) if (v !== undefined && v !== "") q.set(k, String(v));
    if ([...q].length > 0) url += "?" + q.toString();
    const hasBody = c.body !== undefined;
    const init: RequestInit = {
      method: c.method,
      headers: this.#headers(hasBody, c.opts, c.idempotencyKey),
      body: hasBody ? JSON.stringify(c.body) : undefined,
      signal: c.opts?.signal,
    };
    const signal = c.opts?.signal;
    for (let attempt = 0; ; attempt++) {
      let err: unknown;
      let wait = -1;
      try {
        const res = await this.#fetch(url, init);
        if ((res.status >= 200 && res.status < 300) || c.answerStatuses?.includes(res.status)) {
          const text = await res.text();
          return (text === "" ? undefined : JSON.parse(text)) as T;
        }
        const e = await this.#error(c.method, c.path, res);
        err = e;
        wait = e.retryAfterMs ?? -1;
      } catch (e) {
        err = e;
      }
      if (!c.retryable || attempt + 1 >= this.#retry.maxAttempts || signal?.aborted || !retryableError(c, err)) {
        throw err;
      }
      if (wait < 0) {
        wait = this.#backoff(attempt);
      } else if (this.#retry.maxRetryAfterMs > 0 && wait > this.#retry.maxRetryAfterMs) {
        throw err;
      }
      try {
        await this.#sleep(wait, signal);
      } catch {
        throw err;
      }
    }
  }

  async #error(method: string, path: string, res: Response): Promise<VeilError> {
    const raw = await res.text().catch(() => "");
    const ra = retryAfter(res.headers.get("Retry-After"), Date.now());
    return new VeilError({
      status: res.status,
      message: errorMessage(res.status, raw),
      method,
      path,
      requestId: res.headers.get("X-Request-Id") ?? undefined,
      retryAfterMs: ra > 0 ? ra : undefined,
    });
  }

  #backoff(attempt: number): number {
    let max = this.#retry.minBackoffMs * 2 ** attempt;
    if (!(max > 0) || max > this.#retry.maxBackoffMs) max = this.#retry.maxBackoffMs;
    if (max <= 0) return 0;
    return Math.floor(Math.random() * (max + 1));
  }
}

/**
 * retryableError tells whether a failed attempt may be repeated: transport
 * failures (not the caller's abort), 429, 503, 504, and 502 for GETs.
 */
function retryableError(c: Call, err: unknown): boolean {
  if (err instanceof VeilError) {
    switch (err.status) {
      case 429:
      case 503:
      case 504:
        return true;
      case 502:
        return c.method === "GET";
    }
    return false;
  }
  const name = (err as { name?: string } | undefined)?.name;
  return name !== "AbortError" && name !== "TimeoutError" && !(err instanceof SyntaxError);
}

/** retryAfter parses a Retry-After value (seconds or an HTTP date) into milliseconds; -1 when absent or unreadable. */
export function retryAfter(v: string | null, now: number): number {
  const s = (v ?? "").trim();
  if (s === "") return -1;
  if (/^\d+$/.test(s)) return Math.min(Number(s), 86400) * 1000;
  const t = Date.parse(s);
  if (Number.isNaN(t)) return -1;
  return Math.max(0, t - now);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** newIdempotencyKey returns a random UUID v4. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

const nameRE = /^[a-z0-9-]{3,32}$/;

/** validName reports whether name (without the .veil suffix) satisfies the name rule: 3 to 32 lowercase letters, digits and hyphens. */
export function validName(name: string): boolean {
  return nameRE.test(name);
}

const chainSchemes: Record<string, Signer["scheme"]> = {
  horizen: "evm", ethereum: "evm", polygon: "evm", base: "evm", stellar: "stellar", solana: "solana",
};

/**
 * signCreate builds a signed POST /agent/create body: the three-line create
 * message with Issued At = at, signed by s. It checks the name rule and that
 * s's scheme fits chain, so a mistake fails here rather than at the server.
 */
export async function signCreate(s: Signer, name: string, chain: CreateAgentRequest["chain"], at: Date): Promise<CreateAgentRequest> {
  if (name.endsWith(nameSuffix)) name = name.slice(0, -nameSuffix.length);
  if (!validName(name)) {
    throw new TypeError(`veil: invalid agent name ${JSON.stringify(name)}: use 3 to 32 lowercase letters, digits and hyphens`);
  }
  const want = chainSchemes[chain];
  if (chain !== "all" && want === undefined) {
    throw new TypeError(`veil: unknown chain ${JSON.stringify(chain)}: use one of horizen, ethereum, polygon, base, stellar, solana or all`);
  }
  if (want !== undefined && want !== s.scheme) {
    throw new TypeError(`veil: chain ${chain} needs a ${want} wallet, not a ${s.scheme} one`);
  }
  const message = createMessage(name, chain, s.address, at);
  return { name, chain, wallet: s.address, signature: await s.sign(message), message };
}

/** signExport builds a signed POST /agent/:id/export body with Issued At = at. s must be the agent's owner wallet. */
export async function signExport(s: Signer, agentId: string, at: Date): Promise<ExportRequest> {
  const message = exportMessage(agentId, s.address, at);
  return { message, signature: await s.sign(message) };
}

/** signApproval builds the body of an approval decision with Issued At = at. s must be the agent's owner wallet. */
export async function signApproval(s: Signer, agentId: string, approvalId: string, deny: boolean, at: Date): Promise<DecideApprovalRequest> {
  const message = approvalMessage(approvalId, agentId, s.address, deny, at);
  return { decision: deny ? "deny" : "approve", message, signature: await s.sign(message) };
}
