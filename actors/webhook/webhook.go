// Package webhook pushes an account's notifications to the URLs it
// registered (docs/webhooks.md). It owns three tables:
//
//   - webhooks: the subscriptions, keyed by account, so every read is
//     account-scoped by construction;
//   - webhook_outbox: one record per notification of an account that has a
//     webhook, written by the agent actor in the SAME store batch as the
//     notification itself (OutboxOps), so a crash between the two cannot
//     lose an event;
//   - webhook_deliveries (+ webhook_pending, the deliverer's work index):
//     one record per (webhook, event), created by the deliverer's fan-out in
//     one batch with the removal of the outbox record, and updated after
//     every attempt.
//
// The Deliverer runs under a lease (one per cluster), signs every attempt
// with the webhook's secret, and retries with exponential backoff and
// jitter for MaxAge before marking the delivery failed. Every attempt of
// one event carries the same event id: delivery is at least once.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Tables this package owns.
const (
	TableWebhooks   = "webhooks"           // account id/webhook id → Webhook
	TableOutbox     = "webhook_outbox"     // created (20-digit unix nanos)/event id → Event
	TableDeliveries = "webhook_deliveries" // webhook id/event key → Delivery
	TablePending    = "webhook_pending"    // webhook id/event key → account id (deliveries still to attempt)
)

// Limits of a subscription.
const (
	MaxPerAccount = 20
	MaxURLLen     = 2048
	MaxEvents     = 32
)

// TypeTest is the event type of POST /webhooks/:id/test.
const TypeTest = "test"

// Errors; httpapi maps them to statuses.
var (
	// ErrNotFound: no such webhook in the caller's account (404).
	ErrNotFound = errors.New("webhook not found")
	// ErrInvalid: a malformed subscription (400). The message says what.
	ErrInvalid = errors.New("invalid webhook")
	// ErrTooMany: the account has MaxPerAccount webhooks (409).
	ErrTooMany = errors.New("too many webhooks")
)

// Webhook is a stored subscription. Secret signs every delivery; the API
// shows it once, in the answer of the create.
type Webhook struct {
	ID        string `json:"id"`
	AccountID string `json:"accountId"`
	URL       string `json:"url"`
	// Events are the notification types delivered; empty means all.
	Events []string `json:"events"`
	// AgentID restricts the webhook to one agent; empty means every agent
	// of the account.
	AgentID   string    `json:"agentId,omitempty"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
}

// wants says whether the webhook subscribes to ev.
func (w *Webhook) wants(ev *Event) bool {
	if ev.Type == TypeTest {
		return false // a test event goes to one webhook, never fanned out
	}
	if w.AgentID != "" && w.AgentID != ev.AgentID {
		return false
	}
	if len(w.Events) == 0 {
		return true
	}
	for _, t := range w.Events {
		if t == ev.Type {
			return true
		}
	}
	return false
}

// Payload is the JSON body of a delivery, exactly as docs/webhooks.md
// gives it. Its bytes are fixed when the delivery is created, so every
// attempt sends the same body.
type Payload struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	AgentID   string          `json:"agentId"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// Event is one outbox record: the payload of what happened and the account
// it happened in, which picks the webhooks it fans out to.
type Event struct {
	Payload
	AccountID string `json:"accountId"`
}

// Statuses of a delivery.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Delivery is one event's delivery to one webhook.
type Delivery struct {
	EventID   string `json:"id"`
	WebhookID string `json:"webhookId"`
	Type      string `json:"type"`
	AgentID   string `json:"agentId,omitempty"`
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	// LastStatusCode is the HTTP status of the last attempt (0: no
	// answer); LastError says why it did not count as delivered.
	LastStatusCode int        `json:"lastStatusCode,omitempty"`
	LastError      string     `json:"lastError,omitempty"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	DeliveredAt    *time.Time `json:"deliveredAt,omitempty"`
	// Body is the payload sent on every attempt.
	Body json.RawMessage `json:"body"`
}

func eventKey(createdAt time.Time, id string) string {
	return fmt.Sprintf("%020d/%s", createdAt.UnixNano(), id)
}

func hookKey(accountID, id string) string { return accountID + "/" + id }

func deliveryKey(webhookID, evKey string) string { return webhookID + "/" + evKey }

// HasWebhooks says whether the account has at least one webhook.
func HasWebhooks(ctx context.Context, st persistence.Store, accountID string) (bool, error) {
	recs, err := st.List(ctx, TableWebhooks, persistence.Query{Prefix: accountID + "/", Limit: 1})
	return len(recs) > 0, err
}

// OutboxOps returns the operations that queue a notification for the
// account's webhooks, for the caller to apply in the same batch as the
// notification. It returns none when the account has no webhook (a webhook
// created later does not receive older notifications).
func OutboxOps(ctx context.Context, st persistence.Store, accountID, agentID, typ string, createdAt time.Time, data any) ([]persistence.Op, error) {
	if accountID == "" {
		return nil, nil
	}
	ok, err := HasWebhooks(ctx, st, accountID)
	if err != nil || !ok {
		return nil, err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	ev := Event{Payload: Payload{ID: "evt_" + uuid.NewString(), Type: typ, AgentID: agentID, CreatedAt: createdAt.UTC(), Data: raw}, AccountID: accountID}
	val, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return []persistence.Op{persistence.Put(TableOutbox, eventKey(ev.CreatedAt, ev.ID), val, persistence.Absent())}, nil
}

// Registry is the account-scoped CRUD of subscriptions.
type Registry struct {
	st  persistence.Store
	now func() time.Time
}

// NewRegistry returns the registry on st; now is the clock (nil: time.Now).
func NewRegistry(st persistence.Store, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{st: st, now: now}
}

// NewSecret returns a fresh signing secret: "whsec_" + base64url of 32
// random bytes. The HMAC key is the whole string's bytes.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Create stores a new webhook. url must already be checked (CheckURL) and
// events validated by the caller, which knows the notification types.
func (r *Registry) Create(ctx context.Context, accountID, url string, events []string, agentID string) (*Webhook, error) {
	existing, err := r.st.List(ctx, TableWebhooks, persistence.Query{Prefix: accountID + "/", Limit: MaxPerAccount})
	if err != nil {
		return nil, err
	}
	if len(existing) >= MaxPerAccount {
		return nil, fmt.Errorf("%w: the account has %d webhooks already, the most it may have; delete one first", ErrTooMany, MaxPerAccount)
	}
	if events == nil {
		events = []string{}
	}
	// A time-ordered id (UUIDv7, increasing within this process even in
	// one millisecond) breaks the tie of two webhooks created in the same
	// millisecond in the order they were created: List is oldest first.
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	w := &Webhook{ID: id.String(), AccountID: accountID, URL: url, Events: events, AgentID: agentID,
		Secret: NewSecret(), CreatedAt: r.now().UTC().Truncate(time.Millisecond)}
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if _, err := r.st.Apply(ctx, persistence.Put(TableWebhooks, hookKey(accountID, w.ID), raw, persistence.Absent())); err != nil {
		return nil, fmt.Errorf("webhook: create: %w", err)
	}
	return w, nil
}

// List returns the account's webhooks, oldest first.
func (r *Registry) List(ctx context.Context, accountID string) ([]Webhook, error) {
	out, err := jsonrec.List[Webhook](ctx, r.st, TableWebhooks, persistence.Query{Prefix: accountID + "/"})
	if err != nil {
		return nil, err
	}
	sortByCreated(out)
	return out, nil
}

// Get returns one webhook of the account, or ErrNotFound.
func (r *Registry) Get(ctx context.Context, accountID, id string) (*Webhook, error) {
	return getHook(ctx, r.st, accountID, id)
}

func getHook(ctx context.Context, st persistence.Store, accountID, id string) (*Webhook, error) {
	w, err := jsonrec.Get[Webhook](ctx, st, TableWebhooks, hookKey(accountID, id))
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, ErrNotFound
	}
	return w, err
}

// Delete removes the webhook with its deliveries; pending ones are never
// attempted again.
func (r *Registry) Delete(ctx context.Context, accountID, id string) error {
	if _, err := r.Get(ctx, accountID, id); err != nil {
		return err
	}
	_, err := r.st.Apply(ctx,
		persistence.Delete(TableWebhooks, hookKey(accountID, id), persistence.Any()),
		persistence.DeletePrefix(TablePending, id+"/"),
		persistence.DeletePrefix(TableDeliveries, id+"/"),
	)
	return err
}

// Test queues a "test" event for the webhook alone; the deliverer sends
// it like any other. It answers the pending delivery.
func (r *Registry) Test(ctx context.Context, accountID, id string) (*Delivery, error) {
	w, err := r.Get(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	now := r.now().UTC()
	data, _ := json.Marshal(map[string]string{"message": "This is a test event from Veil: your webhook is reachable and its signature checks."})
	ev := &Event{Payload: Payload{ID: "evt_" + uuid.NewString(), Type: TypeTest, CreatedAt: now, Data: data}, AccountID: accountID}
	d, ops, err := newDelivery(w, ev, eventKey(now, ev.ID), now)
	if err != nil {
		return nil, err
	}
	if _, err := r.st.Apply(ctx, ops...); err != nil {
		return nil, fmt.Errorf("webhook: queue test: %w", err)
	}
	return d, nil
}

// Deliveries returns the webhook's latest deliveries, newest first, at
// most limit.
func (r *Registry) Deliveries(ctx context.Context, accountID, id string, limit int) ([]Delivery, error) {
	if _, err := r.Get(ctx, accountID, id); err != nil {
		return nil, err
	}
	return jsonrec.List[Delivery](ctx, r.st, TableDeliveries, persistence.Query{Prefix: id + "/", Reverse: true, Limit: limit})
}

// newDelivery builds the pending delivery of ev to w and its writes.
func newDelivery(w *Webhook, ev *Event, evKey string, now time.Time) (*Delivery, []persistence.Op, error) {
	body, err := json.Marshal(ev.Payload)
	if err != nil {
		return nil, nil, err
	}
	next := now
	d := &Delivery{EventID: ev.ID, WebhookID: w.ID, Type: ev.Type, AgentID: ev.AgentID, Status: StatusPending,
		NextAttemptAt: &next, CreatedAt: ev.CreatedAt, Body: body}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, nil, err
	}
	key := deliveryKey(w.ID, evKey)
	return d, []persistence.Op{
		persistence.Put(TableDeliveries, key, raw, persistence.Absent()),
		persistence.Put(TablePending, key, []byte(w.AccountID), persistence.Absent()),
	}, nil
}
