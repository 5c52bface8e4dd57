package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/veilhq/veil/chains"
)

func apply(r *call, opts []CallOption) *call {
	for _, o := range opts {
		o(r)
	}
	return r
}

func get(path string, opts []CallOption) *call {
	return apply(&call{method: http.MethodGet, path: path, retryable: true}, opts)
}

// Health calls GET /health (no API key needed).
func (c *Client) Health(ctx context.Context, opts ...CallOption) (*Health, error) {
	var out Health
	return &out, c.do(ctx, get("/health", opts), &out)
}

// --- agents ---

// CreateAgent calls POST /agent/create (201). It is never retried: build
// req with SignCreate, or use CreateAgentSigned. A taken name is a 409
// (IsConflict), a bad name or signature a 400 (IsBadRequest).
func (c *Client) CreateAgent(ctx context.Context, req CreateAgentRequest, opts ...CallOption) (*CreatedAgent, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/create", body: jsonBody(req), hasBody: true}, opts)
	return answer[CreatedAgent](ctx, c, r)
}

// CreateAgentSigned creates agent name on chain, owned by signer's wallet,
// with a message issued now.
func (c *Client) CreateAgentSigned(ctx context.Context, name, chain string, signer Signer, opts ...CallOption) (*CreatedAgent, error) {
	req, err := SignCreate(signer, name, chain, timeNow())
	if err != nil {
		return nil, err
	}
	return c.CreateAgent(ctx, req, opts...)
}

// ListAgents calls GET /agents: the account's agents, oldest first.
func (c *Client) ListAgents(ctx context.Context, opts ...CallOption) ([]AgentInfo, error) {
	return answerList[AgentInfo](ctx, c, get("/agents", opts))
}

func (c *Client) agentInfo(ctx context.Context, path string, opts []CallOption) (*AgentInfo, error) {
	return answer[AgentInfo](ctx, c, get(path, opts))
}

// GetAgent calls GET /agent/:id.
func (c *Client) GetAgent(ctx context.Context, id string, opts ...CallOption) (*AgentInfo, error) {
	return c.agentInfo(ctx, "/agent/"+esc(id), opts)
}

// AgentByName calls GET /agent/info/:name (alice or alice.veil).
func (c *Client) AgentByName(ctx context.Context, name string, opts ...CallOption) (*AgentInfo, error) {
	return c.agentInfo(ctx, "/agent/info/"+esc(name), opts)
}

// AgentByWallet calls GET /agent/wallet/:address: the oldest agent the
// owner wallet has in this account.
func (c *Client) AgentByWallet(ctx context.Context, address string, opts ...CallOption) (*AgentInfo, error) {
	return c.agentInfo(ctx, "/agent/wallet/"+esc(address), opts)
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsAgentID reports whether s has the form of an agent id (a UUID); agent
// names (3 to 32 characters) never do.
func IsAgentID(s string) bool { return uuidRE.MatchString(s) }

// ResolveAgent finds an agent by id (a UUID), name (alice, alice.veil) or
// owner wallet (0x…, G…: anything else that is not a valid name).
func (c *Client) ResolveAgent(ctx context.Context, ref string, opts ...CallOption) (*AgentInfo, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "":
		return nil, fmt.Errorf("veil: no agent given: pass an agent name or id")
	case IsAgentID(ref):
		return c.GetAgent(ctx, strings.ToLower(ref), opts...)
	case chains.ValidName(strings.TrimSuffix(ref, NameSuffix)):
		return c.AgentByName(ctx, ref, opts...)
	default:
		return c.AgentByWallet(ctx, ref, opts...)
	}
}

// ValidName reports whether name (without the suffix) satisfies the
// spec's name rule (chains.ValidName: 3 to 32 lowercase letters, digits
// and hyphens).
func ValidName(name string) bool { return chains.ValidName(name) }

// AgentStatus calls GET /agent/:id/status.
func (c *Client) AgentStatus(ctx context.Context, id string, opts ...CallOption) (*AgentStatus, error) {
	return answer[AgentStatus](ctx, c, get("/agent/"+esc(id)+"/status", opts))
}

// AgentStatusOn calls GET /agent/:id/status?chain=… : the balance, tokens
// and addresses on one of the agent's chains.
func (c *Client) AgentStatusOn(ctx context.Context, id, chain string, opts ...CallOption) (*AgentStatus, error) {
	r := get("/agent/"+esc(id)+"/status", opts)
	r.query = url.Values{"chain": {chain}}
	return answer[AgentStatus](ctx, c, r)
}

// ExportKey calls POST /agent/:id/export. It is never retried (a signature
// is accepted once). Build req with SignExport, or use ExportKeySigned.
func (c *Client) ExportKey(ctx context.Context, id string, req ExportRequest, opts ...CallOption) (*ExportedKey, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/export", body: jsonBody(req), hasBody: true}, opts)
	return answer[ExportedKey](ctx, c, r)
}

// ExportKeySigned exports the key of agent id with a fresh signature of
// signer, which must be the agent's owner wallet.
func (c *Client) ExportKeySigned(ctx context.Context, id string, signer Signer, opts ...CallOption) (*ExportedKey, error) {
	req, err := SignExport(signer, id, timeNow())
	if err != nil {
		return nil, err
	}
	return c.ExportKey(ctx, id, req, opts...)
}

// --- chat ---

// Chat calls POST /agent/:id/chat. The client adds a random
// Idempotency-Key (unless made WithoutAutoIdempotencyKey, or one is given
// WithIdempotencyKey), which makes the call safe to retry: the server runs
// no payment twice for one key.
func (c *Client) Chat(ctx context.Context, id string, req ChatRequest, opts ...CallOption) (*ChatResponse, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/chat", body: jsonBody(req), hasBody: true}, opts)
	if r.idemKey == "" && c.autoIdem {
		r.idemKey = NewIdempotencyKey()
	}
	r.retryable = r.idemKey != ""
	return answer[ChatResponse](ctx, c, r)
}

// NewIdempotencyKey returns a random key (a UUID v4 string).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// --- conversations ---

// ListConversations calls GET /agent/:id/conversations (most recently
// updated first).
func (c *Client) ListConversations(ctx context.Context, id string, opts ...CallOption) ([]Conversation, error) {
	return answerList[Conversation](ctx, c, get("/agent/"+esc(id)+"/conversations", opts))
}

// CreateConversation calls POST /agent/:id/conversations (201, an empty
// conversation). It is not retried: a repeat would make a second one.
func (c *Client) CreateConversation(ctx context.Context, id string, opts ...CallOption) (*Conversation, error) {
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/conversations"}, opts)
	return answer[Conversation](ctx, c, r)
}

// ListMessages calls GET /agent/:id/conversations/:convId/messages
// (chronological).
func (c *Client) ListMessages(ctx context.Context, id, convID string, opts ...CallOption) ([]Message, error) {
	return answerList[Message](ctx, c, get("/agent/"+esc(id)+"/conversations/"+esc(convID)+"/messages", opts))
}

// DeleteConversation calls DELETE /agent/:id/conversations/:convId. It is
// not retried: a repeat after a lost answer would report a 404 for a
// deletion that happened.
func (c *Client) DeleteConversation(ctx context.Context, id, convID string, opts ...CallOption) error {
	r := apply(&call{method: http.MethodDelete, path: "/agent/" + esc(id) + "/conversations/" + esc(convID)}, opts)
	return c.do(ctx, r, nil)
}

// --- invoices ---

// GetInvoice calls GET /invoice/:id.
func (c *Client) GetInvoice(ctx context.Context, invoiceID string, opts ...CallOption) (*Invoice, error) {
	return answer[Invoice](ctx, c, get("/invoice/"+esc(invoiceID), opts))
}

// MarkInvoicePaid calls POST /invoice/:id/paid, with {txHash} when txHash
// is not empty. The server verifies the payment on chain; the call is
// idempotent (retried) and answers the Invoice.
func (c *Client) MarkInvoicePaid(ctx context.Context, invoiceID, txHash string, opts ...CallOption) (*Invoice, error) {
	r := apply(&call{method: http.MethodPost, path: "/invoice/" + esc(invoiceID) + "/paid", retryable: true}, opts)
	if txHash != "" {
		r.body, r.hasBody = jsonBody(map[string]string{"txHash": txHash}), true
	}
	return answer[Invoice](ctx, c, r)
}

// --- notifications ---

// Notifications calls GET /agent/:id/notifications (newest first).
func (c *Client) Notifications(ctx context.Context, id string, opts ...CallOption) (*Inbox, error) {
	return answer[Inbox](ctx, c, get("/agent/"+esc(id)+"/notifications", opts))
}

// MarkNotificationsRead calls POST /agent/:id/notifications/read
// (idempotent, retried).
func (c *Client) MarkNotificationsRead(ctx context.Context, id string, opts ...CallOption) error {
	return c.do(ctx, apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/notifications/read", retryable: true}, opts), nil)
}

// DeleteNotifications calls DELETE /agent/:id/notifications (idempotent,
// retried): every notification is removed for good.
func (c *Client) DeleteNotifications(ctx context.Context, id string, opts ...CallOption) error {
	return c.do(ctx, apply(&call{method: http.MethodDelete, path: "/agent/" + esc(id) + "/notifications", retryable: true}, opts), nil)
}

// --- schedules (DESIGN.md) ---

// ListSchedules calls GET /agent/:id/schedules.
func (c *Client) ListSchedules(ctx context.Context, id string, opts ...CallOption) ([]Schedule, error) {
	return answerList[Schedule](ctx, c, get("/agent/"+esc(id)+"/schedules", opts))
}

// Schedule actions.
const (
	SchedulePause  = "pause"
	ScheduleResume = "resume"
	ScheduleCancel = "cancel"
)

// ScheduleAction calls POST /agent/:id/schedules/:scheduleId/{pause,resume,cancel}
// and returns the schedule after the transition. An action names the state
// it leads to, so a repeat cannot move the schedule further: the call is
// retried.
func (c *Client) ScheduleAction(ctx context.Context, id, scheduleID, action string, opts ...CallOption) (*Schedule, error) {
	switch action {
	case SchedulePause, ScheduleResume, ScheduleCancel:
	default:
		return nil, fmt.Errorf("veil: schedule action %q: use pause, resume or cancel", action)
	}
	r := apply(&call{method: http.MethodPost, path: "/agent/" + esc(id) + "/schedules/" + esc(scheduleID) + "/" + action, retryable: true}, opts)
	return answer[Schedule](ctx, c, r)
}

// PauseSchedule pauses an active schedule.
func (c *Client) PauseSchedule(ctx context.Context, id, scheduleID string, opts ...CallOption) (*Schedule, error) {
	return c.ScheduleAction(ctx, id, scheduleID, SchedulePause, opts...)
}

// ResumeSchedule resumes a paused schedule.
func (c *Client) ResumeSchedule(ctx context.Context, id, scheduleID string, opts ...CallOption) (*Schedule, error) {
	return c.ScheduleAction(ctx, id, scheduleID, ScheduleResume, opts...)
}

// CancelSchedule cancels a schedule for good.
func (c *Client) CancelSchedule(ctx context.Context, id, scheduleID string, opts ...CallOption) (*Schedule, error) {
	return c.ScheduleAction(ctx, id, scheduleID, ScheduleCancel, opts...)
}

// --- TEE ---

// TEEInfo calls GET /tee/info.
func (c *Client) TEEInfo(ctx context.Context, opts ...CallOption) (*TEEInfo, error) {
	return answer[TEEInfo](ctx, c, get("/tee/info", opts))
}

// Attest calls GET /tee/attest/:agentId?nonce=… . Pass a fresh nonce (at
// most 128 characters) to prove freshness; "" lets the server pick one.
func (c *Client) Attest(ctx context.Context, agentID, nonce string, opts ...CallOption) (*Attestation, error) {
	r := get("/tee/attest/"+esc(agentID), opts)
	if nonce != "" {
		r.query = url.Values{"nonce": {nonce}}
	}
	return answer[Attestation](ctx, c, r)
}
