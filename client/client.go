// Package client is a typed Go client for Veil's HTTP API
// (spec/agent-platform-api.md and the endpoints DESIGN.md adds).
//
// Every method takes a context, which bounds the whole call including
// retries. A response whose status is not 2xx is returned as *Error, which
// carries the spec's error body {message, statusCode}:
//
//	c, err := client.New("http://127.0.0.1:8080", os.Getenv("VEIL_API_KEY"))
//	agent, err := c.AgentByName(ctx, "alice")
//	if client.IsNotFound(err) { … }
//
// Retries happen only where a repeat cannot do something twice: GETs, the
// idempotent POSTs and DELETEs (notifications read and delete, invoice
// paid, schedule transitions) and chat requests carrying an Idempotency-Key
// (the client adds one to every Chat call unless told not to). Creating an
// agent, exporting a key, creating and deleting a conversation are never
// retried. A retry waits with exponential backoff and full jitter, or for
// the server's Retry-After on 429 and 503.
//
// The client does not import the server's packages; its types mirror the
// spec's JSON. The signing helpers (sign.go) build the create and export
// messages of docs/signatures.md and sign them with an EVM key (raw or a
// go-ethereum keystore file) or an ed25519 key (Stellar, Solana).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is sent in the User-Agent header.
const Version = "0.1.0"

// DefaultURL is veild's default listen address.
const DefaultURL = "http://127.0.0.1:8080"

// Client talks to one Veil server with one API key. It is safe for
// concurrent use; its configuration does not change after New.
type Client struct {
	base        *url.URL
	apiKey      string
	hc          *http.Client
	provider    string
	providerKey string
	retry       RetryPolicy
	userAgent   string
	autoIdem    bool
	sleep       func(ctx context.Context, d time.Duration) error
}

// RetryPolicy says how often and how long a safe request is retried.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 1 disables retries.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff (full
	// jitter: a random wait in [0, min(MaxBackoff, MinBackoff·2^n)]).
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps how long a server's Retry-After is honoured; a
	// longer one ends the retries and returns the error (its RetryAfter
	// tells the caller how long to wait).
	MaxRetryAfter time.Duration
}

// DefaultRetry is the policy of a new Client: 4 attempts, 200 ms to 5 s
// backoff, Retry-After honoured up to 30 s.
var DefaultRetry = RetryPolicy{MaxAttempts: 4, MinBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxRetryAfter: 30 * time.Second}

// NoRetry makes every request a single attempt.
var NoRetry = RetryPolicy{MaxAttempts: 1}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client (timeouts, transport, proxies). The
// default is a client without a global timeout: use contexts.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithAIProvider sends X-AI-Provider and X-AI-Key on every request (the
// server uses them for chat). A per-call WithProvider overrides it.
func WithAIProvider(provider, key string) Option {
	return func(c *Client) { c.provider, c.providerKey = provider, key }
}

// WithRetry sets the retry policy.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithUserAgent prefixes the User-Agent header with ua.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua + " " + c.userAgent }
}

// WithoutAutoIdempotencyKey stops Chat from adding an Idempotency-Key of
// its own; chat requests are then retried only when the caller passes
// WithIdempotencyKey.
func WithoutAutoIdempotencyKey() Option { return func(c *Client) { c.autoIdem = false } }

// New returns a client of the server at baseURL (for example
// "http://127.0.0.1:8080" or "https://veil.example.com/api") using apiKey
// as the bearer key.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("veil: server URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("veil: server URL %q: want http(s)://host[:port][/path]", baseURL)
	}
	c := &Client{
		base:      u,
		apiKey:    strings.TrimSpace(apiKey),
		hc:        &http.Client{},
		retry:     DefaultRetry,
		userAgent: "veil-go/" + Version,
		autoIdem:  true,
		sleep:     sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	if c.retry.MaxAttempts < 1 {
		c.retry.MaxAttempts = 1
	}
	return c, nil
}

// BaseURL returns the server URL the client was made with.
func (c *Client) BaseURL() string { return c.base.String() }

// CallOption adjusts one call.
type CallOption func(*call)

// WithProvider sends X-AI-Provider and X-AI-Key on this call only (an empty
// provider with a key keeps the client's provider).
func WithProvider(provider, key string) CallOption {
	return func(r *call) { r.provider, r.providerKey, r.providerSet = provider, key, true }
}

// WithIdempotencyKey sets the Idempotency-Key header of a chat request: a
// retry with the same key never runs a payment twice. It makes the call
// retryable.
func WithIdempotencyKey(key string) CallOption { return func(r *call) { r.idemKey = key } }

// WithRequestID sets the X-Request-Id header, which the server logs and
// echoes; useful to correlate a call with server logs.
func WithRequestID(id string) CallOption { return func(r *call) { r.requestID = id } }

// call is one API call (all its attempts).
type call struct {
	method    string
	path      string // escaped path below the base URL
	query     url.Values
	body      []byte
	hasBody   bool
	retryable bool // the request may be repeated

	provider, providerKey string
	providerSet           bool
	idemKey               string
	requestID             string

	// attempts is set after the call: how many requests were sent.
	attempts int
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

// answer runs the call and returns its answer decoded into a new T (nil
// with the error when the call fails).
func answer[T any](ctx context.Context, c *Client, r *call) (*T, error) {
	var out T
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// answerList is answer for an answer that is a JSON array.
func answerList[T any](ctx context.Context, c *Client, r *call) ([]T, error) {
	out, err := answer[[]T](ctx, c, r)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// do runs the call and decodes a 2xx JSON answer into out (nil: ignore).
func (c *Client) do(ctx context.Context, r *call, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	if out == nil || len(resp) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp, out); err != nil {
		return fmt.Errorf("veil: %s %s: decoding the answer: %w", r.method, r.path, err)
	}
	return nil
}

func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the package's own types are marshalled.
		panic("veil client: " + err.Error())
	}
	return b
}

// send runs the attempts of r and returns the body of a 2xx answer.
func (c *Client) send(ctx context.Context, r *call) ([]byte, error) {
	var lastErr error
	for attempt := 0; ; attempt++ {
		r.attempts = attempt + 1
		body, wait, err := c.once(ctx, r)
		if err == nil {
			return body, nil
		}
		lastErr = err
		if !r.retryable || attempt+1 >= c.retry.MaxAttempts || ctx.Err() != nil || !retryableErr(r, err) {
			return nil, lastErr
		}
		if wait < 0 { // no Retry-After: backoff
			wait = c.backoff(attempt)
		} else if c.retry.MaxRetryAfter > 0 && wait > c.retry.MaxRetryAfter {
			return nil, lastErr
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, lastErr
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, lastErr
		}
	}
}

// retryableErr tells whether a failed attempt may be repeated: transport
// failures (not the caller's cancellation), 429, 503, 504, and 502 for
// GETs (a proxy's; the server's own 502 is a model provider's refusal,
// which a repeat does not fix).
func retryableErr(r *call, err error) bool {
	var ae *Error
	if errors.As(err, &ae) {
		switch ae.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		case http.StatusBadGateway:
			return r.method == http.MethodGet
		}
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func (c *Client) backoff(attempt int) time.Duration {
	max := c.retry.MinBackoff << attempt
	if max <= 0 || max > c.retry.MaxBackoff {
		max = c.retry.MaxBackoff
	}
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max) + 1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxResponse bounds what the client reads of one answer.
const maxResponse = 16 << 20

// once sends one request. wait is the server's Retry-After (-1 when absent).
func (c *Client) once(ctx context.Context, r *call) (body []byte, wait time.Duration, err error) {
	target := c.base.String() + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var rd io.Reader
	if r.hasBody {
		rd = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
	if err != nil {
		return nil, -1, fmt.Errorf("veil: %s %s: %w", r.method, r.path, err)
	}
	if r.hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	provider, key := c.provider, c.providerKey
	if r.providerSet {
		if r.provider != "" {
			provider = r.provider
		}
		key = r.providerKey
	}
	if provider != "" {
		req.Header.Set("X-AI-Provider", provider)
	}
	if key != "" {
		req.Header.Set("X-AI-Key", key)
	}
	if r.idemKey != "" {
		req.Header.Set("Idempotency-Key", r.idemKey)
	}
	if r.requestID != "" {
		req.Header.Set("X-Request-Id", r.requestID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		return nil, -1, fmt.Errorf("veil: %s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		return nil, -1, fmt.Errorf("veil: %s %s: reading the answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return raw, -1, nil
	}
	wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return nil, wait, newError(r.method, r.path, resp, raw, wait)
}

// retryAfter parses a Retry-After value (seconds or an HTTP date); -1 when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return -1
		}
		if n > 86400 {
			n = 86400
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d
	}
	return -1
}
