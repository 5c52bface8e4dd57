package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Key scopes, from the least to the most (docs/api.md, Key scopes).
const (
	ScopeRead  = "read"
	ScopeChat  = "chat"
	ScopeFull  = "full"
	ScopeAdmin = "admin"
)

// KeyRateLimit is a key's own token bucket.
type KeyRateLimit struct {
	PerSecond float64 `json:"perSecond"`
	Burst     int     `json:"burst"`
}

// APIKey is an API key as the server shows it; Secret (the key's text)
// only in the answer of CreateKey and RotateKey.
type APIKey struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	Scope     string        `json:"scope"`
	Account   string        `json:"account"`
	Test      bool          `json:"test"`
	CreatedAt time.Time     `json:"createdAt"`
	ExpiresAt *time.Time    `json:"expiresAt"`
	RevokedAt *time.Time    `json:"revokedAt"`
	RotatedTo *string       `json:"rotatedTo"`
	RateLimit *KeyRateLimit `json:"rateLimit"`
	// Status is active, expired or revoked.
	Status string `json:"status"`
	Secret string `json:"secret,omitempty"`
}

// CreateKeyRequest is POST /keys's body.
type CreateKeyRequest struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// ExpiresAt, or ExpiresIn (a duration such as "720h"); neither: the
	// key does not expire.
	ExpiresAt *time.Time    `json:"expiresAt,omitempty"`
	ExpiresIn string        `json:"expiresIn,omitempty"`
	RateLimit *KeyRateLimit `json:"rateLimit,omitempty"`
	Test      bool          `json:"test,omitempty"`
	// Account names another account (created if new): operator only.
	Account string `json:"account,omitempty"`
}

// RotatedKey is RotateKey's answer: the new key and the revoked one.
type RotatedKey struct {
	Key     APIKey `json:"key"`
	Revoked APIKey `json:"revoked"`
}

// AuditRecord is one entry of the audit trail.
type AuditRecord struct {
	ID         string    `json:"id"`
	Time       time.Time `json:"time"`
	AccountID  string    `json:"accountId"`
	KeyID      string    `json:"keyId,omitempty"`
	KeyName    string    `json:"keyName,omitempty"`
	RequestID  string    `json:"requestId,omitempty"`
	Source     string    `json:"source,omitempty"`
	Method     string    `json:"method"`
	Route      string    `json:"route"`
	Path       string    `json:"path"`
	AgentID    string    `json:"agentId,omitempty"`
	Action     string    `json:"action"`
	Status     int       `json:"status"`
	Outcome    string    `json:"outcome"`
	Detail     string    `json:"detail,omitempty"`
	PaymentIDs []string  `json:"paymentIds,omitempty"`
}

// AuditPage is a page of GET /audit.
type AuditPage struct {
	Records    []AuditRecord `json:"records"`
	NextCursor *string       `json:"nextCursor"`
}

// AuditQuery filters GET /audit; zero fields select everything.
type AuditQuery struct {
	Account, Agent, Key, Action, Outcome, Cursor string
	Since, Until                                 time.Time
	Limit                                        int
}

func (q AuditQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"account": q.Account, "agent": q.Agent, "key": q.Key, "action": q.Action, "outcome": q.Outcome, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// ListKeys calls GET /keys (account "": the caller's).
func (c *Client) ListKeys(ctx context.Context, account string, opts ...CallOption) ([]APIKey, error) {
	r := get("/keys", opts)
	if account != "" {
		r.query = url.Values{"account": {account}}
	}
	return answerList[APIKey](ctx, c, r)
}

// CreateKey calls POST /keys (not retried: a repeat would make a second
// key). Keep the answer's Secret: it is shown once.
func (c *Client) CreateKey(ctx context.Context, req CreateKeyRequest, opts ...CallOption) (*APIKey, error) {
	return answer[APIKey](ctx, c, apply(&call{method: http.MethodPost, path: "/keys", body: jsonBody(req), hasBody: true}, opts))
}

// RevokeKey calls DELETE /keys/:id; revoking a revoked key is no error.
func (c *Client) RevokeKey(ctx context.Context, keyID string, opts ...CallOption) (*APIKey, error) {
	return answer[APIKey](ctx, c, apply(&call{method: http.MethodDelete, path: "/keys/" + esc(keyID), retryable: true}, opts))
}

// RotateKey calls POST /keys/:id/rotate (not retried: the first attempt
// may have revoked the key).
func (c *Client) RotateKey(ctx context.Context, keyID string, opts ...CallOption) (*RotatedKey, error) {
	return answer[RotatedKey](ctx, c, apply(&call{method: http.MethodPost, path: "/keys/" + esc(keyID) + "/rotate"}, opts))
}

// Audit calls GET /audit: a page, newest first.
func (c *Client) Audit(ctx context.Context, q AuditQuery, opts ...CallOption) (*AuditPage, error) {
	r := get("/audit", opts)
	r.query = q.values()
	return answer[AuditPage](ctx, c, r)
}

// AuditExport calls GET /audit with format csv or jsonl and answers the
// body as it came.
func (c *Client) AuditExport(ctx context.Context, q AuditQuery, format string, opts ...CallOption) ([]byte, error) {
	r := get("/audit", opts)
	r.query = q.values()
	r.query.Set("format", format)
	return c.send(ctx, r)
}
