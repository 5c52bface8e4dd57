/**
 * VeilError is a non-2xx answer of the server: the spec's error body
 * {message, statusCode}. `status` is the HTTP status; `message` the
 * server's human-readable text (or, for a body that is not the spec's, a
 * short printable excerpt or the status text).
 */
export class VeilError extends Error {
  override readonly name = "VeilError";
  /** The HTTP status. */
  readonly status: number;
  /** The request's method and path (below the base URL). */
  readonly method: string;
  readonly path: string;
  /** The server's X-Request-Id, for its logs. */
  readonly requestId: string | undefined;
  /** The server's Retry-After in milliseconds (429, 503), if it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(init: { status: number; message: string; method: string; path: string; requestId?: string; retryAfterMs?: number }) {
    super(init.message);
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** 404: the agent, conversation, invoice, approval or webhook does not exist or belongs to another account. */
  get notFound(): boolean {
    return this.status === 404;
  }
}

/** isVeilError tells whether err is a VeilError, and, with status, of that status. */
export function isVeilError(err: unknown, status?: number): err is VeilError {
  return err instanceof VeilError && (status === undefined || err.status === status);
}

const statusText: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** errorMessage reads the spec's {message, statusCode} body, or falls back as the Go client does. */
export function errorMessage(status: number, raw: string): string {
  try {
    const b = JSON.parse(raw) as unknown;
    if (b !== null && typeof b === "object" && typeof (b as { message?: unknown }).message === "string") {
      return (b as { message: string }).message;
    }
  } catch {
    // not JSON: below
  }
  let text = raw.trim();
  if (text.startsWith("<") || text.includes("\uFFFD")) text = "";
  if (text.length > 200) text = text.slice(0, 200) + "…";
  return text || statusText[status] || `HTTP ${status}`;
}
