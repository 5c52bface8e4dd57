package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/chains/walletsig"
)

// --- approvals (docs/approvals.md) ---

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// Approval is a payment held for the owner's approval.
type Approval struct {
	ID             string     `json:"id"`
	AgentID        string     `json:"agentId"`
	Status         string     `json:"status"`
	Kind           string     `json:"kind"`
	Chain          string     `json:"chain"`
	Asset          string     `json:"asset"`
	Amount         string     `json:"amount"`
	Recipient      string     `json:"recipient"`
	PayTo          string     `json:"payTo"`
	Reasons        []string   `json:"reasons"`
	ScheduleID     string     `json:"scheduleId,omitempty"`
	ConversationID string     `json:"conversationId,omitempty"`
	TxHash         string     `json:"txHash,omitempty"`
	Error          string     `json:"error,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      time.Time  `json:"expiresAt"`
	DecidedAt      *time.Time `json:"decidedAt,omitempty"`
}

// ApprovalDecision is the answer of a decision.
type ApprovalDecision struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	TxHash string `json:"txHash,omitempty"`
	Error  string `json:"error,omitempty"`
}

// DecideApprovalRequest is the body of POST /agent/:id/approvals/:approvalId.
type DecideApprovalRequest struct {
	Decision  string `json:"decision"`
	Message   string `json:"message"`
	Signature string `json:"signature"`
}

// ListApprovals calls GET /agent/:id/approvals, newest first; status ""
// lists all, else one of the Approval* statuses.
func (c *Client) ListApprovals(ctx context.Context, id, status string, opts ...CallOption) ([]Approval, error) {
	r := get("/agent/"+esc(id)+"/approvals", opts)
	if status != "" {
		r.query = url.Values{"status": {status}}
	}
	return answerList[Approval](ctx, c, r)
}

// GetApproval calls GET /agent/:id/approvals/:approvalId.
func (c *Client) GetApproval(ctx context.Context, id, approvalID string, opts ...CallOption) (*Approval, error) {
	return answer[Approval](ctx, c, get("/agent/"+esc(id)+"/approvals/"+esc(approvalID), opts))
}

// ApprovalMessage is the text the owner signs to approve (or deny) a held
// payment.
func ApprovalMessage(approvalID, agentID, wallet string, deny bool, at time.Time) string {
	return walletsig.ApprovalMessage(approvalID, agentID, wallet, deny, at)
}

// SignApproval builds the body of a decision with Issued At = at. s must
// be the agent's owner wallet.
func SignApproval(s Signer, agentID, approvalID string, deny bool, at time.Time) (DecideApprovalRequest, error) {
	msg := walletsig.ApprovalMessage(approvalID, agentID, s.Address(), deny, at)
	sig, err := s.Sign(msg)
	if err != nil {
		return DecideApprovalRequest{}, err
	}
	d := "approve"
	if deny {
		d = "deny"
	}
	return DecideApprovalRequest{Decision: d, Message: msg, Signature: sig}, nil
}

// DecideApproval calls POST /agent/:id/approvals/:approvalId. It is never
// retried: a repeat after a lost answer is a 409 (or a 400 for the reused
// signature); read the approval with GetApproval instead.
func (c *Client) DecideApproval(ctx context.Context, id, approvalID string, req DecideApprovalRequest, opts ...CallOption) (*ApprovalDecision, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/approvals/" + esc(approvalID), body: jsonBody(req), hasBody: true}, opts)
	return answer[ApprovalDecision](ctx, c, r)
}

// Approve approves a held payment with s's signature issued now; the
// answer carries the payment's txHash (or its error).
func (c *Client) Approve(ctx context.Context, id, approvalID string, s Signer, opts ...CallOption) (*ApprovalDecision, error) {
	req, err := SignApproval(s, id, approvalID, false, timeNow())
	if err != nil {
		return nil, err
	}
	return c.DecideApproval(ctx, id, approvalID, req, opts...)
}

// Deny denies a held payment with s's signature issued now.
func (c *Client) Deny(ctx context.Context, id, approvalID string, s Signer, opts ...CallOption) (*ApprovalDecision, error) {
	req, err := SignApproval(s, id, approvalID, true, timeNow())
	if err != nil {
		return nil, err
	}
	return c.DecideApproval(ctx, id, approvalID, req, opts...)
}

// --- policy preview ---

// PolicyPreview is the answer of POST /agent/:id/policy/preview.
type PolicyPreview struct {
	Hash    string `json:"hash"`
	Message string `json:"message"`
	// InvoiceRule says how invoices meet the allowlist: by their issuer,
	// not their one-time address.
	InvoiceRule string `json:"invoiceRule,omitempty"`
	// InvoiceCheck answers PreviewPolicyForInvoice.
	InvoiceCheck *InvoiceCheck `json:"invoiceCheck,omitempty"`
}

// InvoiceCheck is the preview's answer for one invoice of the server:
// the issuer it was checked by and whether a payment of it would pass.
type InvoiceCheck struct {
	InvoiceID string `json:"invoiceId"`
	Issuer    string `json:"issuer"`
	Chain     string `json:"chain"`
	PayTo     string `json:"payTo"`
	Asset     string `json:"asset"`
	Amount    string `json:"amount"`
	CheckedBy string `json:"checkedBy"`
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
}

// PreviewPolicyForInvoice is PreviewPolicy that also checks a payment of
// invoice (an id or payment link of the server) against policy, as the
// server would: by the invoice's issuer, not its one-time address.
func (c *Client) PreviewPolicyForInvoice(ctx context.Context, id string, policy any, invoice string, opts ...CallOption) (*PolicyPreview, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/policy/preview", body: jsonBody(map[string]any{"policy": policy, "invoice": invoice}), hasBody: true, retryable: true}, opts)
	return answer[PolicyPreview](ctx, c, r)
}

// PreviewPolicy calls POST /agent/:id/policy/preview: the hash of policy
// (any JSON object of the policy's fields) and the message to sign now to
// set it. It changes nothing, so it is retried.
func (c *Client) PreviewPolicy(ctx context.Context, id string, policy any, opts ...CallOption) (*PolicyPreview, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/policy/preview", body: jsonBody(map[string]any{"policy": policy}), hasBody: true, retryable: true}, opts)
	return answer[PolicyPreview](ctx, c, r)
}

// --- webhooks (docs/webhooks.md) ---

// Webhook is a subscription; Secret only in CreateWebhook's answer.
type Webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	AgentID   *string   `json:"agentId"`
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateWebhookRequest is the body of POST /webhooks.
type CreateWebhookRequest struct {
	URL     string   `json:"url"`
	Events  []string `json:"events,omitempty"`
	AgentID string   `json:"agentId,omitempty"`
}

// WebhookDelivery is one delivery of an event to a webhook.
type WebhookDelivery struct {
	ID             string     `json:"id"`
	Type           string     `json:"type"`
	AgentID        *string    `json:"agentId"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode *int       `json:"lastStatusCode"`
	LastError      *string    `json:"lastError"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt"`
	CreatedAt      time.Time  `json:"createdAt"`
	DeliveredAt    *time.Time `json:"deliveredAt"`
}

// CreateWebhook calls POST /webhooks (not retried: a repeat would make a
// second webhook). Keep the answer's Secret: it is shown once.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest, opts ...CallOption) (*Webhook, error) {
	r := apply(&call{method: http.MethodPost, path: "/webhooks", body: jsonBody(req), hasBody: true}, opts)
	return answer[Webhook](ctx, c, r)
}

// ListWebhooks calls GET /webhooks.
func (c *Client) ListWebhooks(ctx context.Context, opts ...CallOption) ([]Webhook, error) {
	return answerList[Webhook](ctx, c, get("/webhooks", opts))
}

// DeleteWebhook calls DELETE /webhooks/:id.
func (c *Client) DeleteWebhook(ctx context.Context, webhookID string, opts ...CallOption) error {
	return c.do(ctx, apply(&call{method: http.MethodDelete, path: "/webhooks/" + esc(webhookID)}, opts), nil)
}

// TestWebhook calls POST /webhooks/:id/test: a test event is queued.
func (c *Client) TestWebhook(ctx context.Context, webhookID string, opts ...CallOption) (*WebhookDelivery, error) {
	return answer[WebhookDelivery](ctx, c, apply(&call{method: http.MethodPost, path: "/webhooks/" + esc(webhookID) + "/test"}, opts))
}

// WebhookDeliveries calls GET /webhooks/:id/deliveries (newest first).
func (c *Client) WebhookDeliveries(ctx context.Context, webhookID string, opts ...CallOption) ([]WebhookDelivery, error) {
	return answerList[WebhookDelivery](ctx, c, get("/webhooks/"+esc(webhookID)+"/deliveries", opts))
}

// --- notification stream ---

// FollowOptions tune FollowNotifications.
type FollowOptions struct {
	// After: start with the notifications whose id is above it; 0 replays
	// every one still stored, FollowNew only those stored from now on.
	After int64
	// Reconnect is the wait before reopening a dropped stream (default 2s).
	Reconnect time.Duration
	// OnError, when set, is told of each error after which the stream is
	// reopened (the server restarting, a 5xx, a network error).
	OnError func(error)
}

// FollowNew makes FollowNotifications start with the notifications stored
// after the stream opened.
const FollowNew int64 = -1

// FollowNotifications reads GET /agent/:id/notifications/stream and calls
// fn with each notification in id order until ctx ends or fn returns an
// error (which it returns). The payment events of the stream come in the
// same order, as a Notification whose Type is EventPaymentConfirmed or
// EventPaymentFailed (the PaymentEvent's payment record left out). A dropped stream, a 5xx or a 429 is reopened
// after opts.Reconnect with the last id seen, so nothing is missed; any
// other HTTP error (401, 404, …) ends it with that error.
func (c *Client) FollowNotifications(ctx context.Context, id string, opts FollowOptions, fn func(Notification) error) error {
	if opts.Reconnect <= 0 {
		opts.Reconnect = 2 * time.Second
	}
	last := opts.After
	for {
		err := c.streamOnce(ctx, id, &last, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fe fnError
		if errors.As(err, &fe) {
			return fe.err
		}
		if code := StatusCode(err); code != 0 && code < 500 && code != http.StatusTooManyRequests {
			return err
		}
		if opts.OnError != nil {
			opts.OnError(err)
		}
		if err := c.sleep(ctx, opts.Reconnect); err != nil {
			return err
		}
	}
}

type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

func (c *Client) streamOnce(ctx context.Context, id string, last *int64, fn func(Notification) error) error {
	path := "/agent/" + esc(id) + "/notifications/stream"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if *last >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*last, 10))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return newError(http.MethodGet, path, resp, raw, 0)
	}
	rd := bufio.NewReader(resp.Body)
	var data strings.Builder
	var evID string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() > 0 {
				var n Notification
				if err := json.Unmarshal([]byte(data.String()), &n); err != nil {
					return fmt.Errorf("veil: notification stream: %w", err)
				}
				if err := fn(n); err != nil {
					return fnError{err}
				}
				if v, err := strconv.ParseInt(evID, 10, 64); err == nil {
					*last = v
				}
			}
			data.Reset()
			evID = ""
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, "id:"):
			evID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		}
	}
}

// SetPolicySigned sets the agent's spending policy (any JSON object of the
// policy's fields, approval rules included): it asks the server for the
// exact message (PreviewPolicy), has s (the owner wallet) sign it, and
// calls PUT /agent/:id/policy. It answers the policy's hash.
func (c *Client) SetPolicySigned(ctx context.Context, id string, policy any, s Signer, opts ...CallOption) (string, error) {
	pre, err := c.PreviewPolicy(ctx, id, policy, opts...)
	if err != nil {
		return "", err
	}
	sig, err := s.Sign(pre.Message)
	if err != nil {
		return "", err
	}
	body := map[string]any{"policy": policy, "message": pre.Message, "signature": sig}
	r := apply(&call{method: http.MethodPut, path: "/agent/" + esc(id) + "/policy", body: jsonBody(body), hasBody: true}, opts)
	var out struct {
		Hash string `json:"hash"`
	}
	if err := c.do(ctx, r, &out); err != nil {
		return "", err
	}
	return out.Hash, nil
}
