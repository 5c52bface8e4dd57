package agent

import (
	"context"
	"fmt"
	"reflect"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/enclave"
)

// The agent actor's protocol: every message it answers is registered once,
// in protocol below, with the method that answers it. That one table feeds
// Receive's dispatch and authorization and RegisterWire's codec, so a new
// message is one struct (with its answer type) and one line here.

// Request is a message the agent actor answers with an R. Each message
// declares its answer by embedding answers[R], so the handler registered
// for it must return an R (checked when this package compiles) and a caller
// can infer the answer's type from the message (httpapi's ask).
type Request[R any] interface{ answer(R) }

// answers marks a message's answer type; it has no fields and no JSON.
type answers[R any] struct{}

func (answers[R]) answer(R) {}

// None is the answer of a message that answers nothing but its error (the
// actor replies nil; the HTTP layer writes an empty body).
type None struct{}

// Scoped is a message sent on behalf of an account (every message the API
// builds): an agent of another account, or none, answers the message's
// not-found error, so that its existence never leaks. Messages that are
// not Scoped come only from in-process services (scanner, reminder, pay
// page) and need only the agent to exist.
type Scoped interface{ Account() string }

func (m *Get) Account() string                   { return m.AccountID }
func (m *GetStatus) Account() string             { return m.AccountID }
func (m *Export) Account() string                { return m.AccountID }
func (m *Attest) Account() string                { return m.AccountID }
func (m *ListConversations) Account() string     { return m.AccountID }
func (m *CreateConversation) Account() string    { return m.AccountID }
func (m *ListMessages) Account() string          { return m.AccountID }
func (m *DeleteConversation) Account() string    { return m.AccountID }
func (m *ListNotifications) Account() string     { return m.AccountID }
func (m *MarkNotificationsRead) Account() string { return m.AccountID }
func (m *DeleteNotifications) Account() string   { return m.AccountID }
func (m *Chat) Account() string                  { return m.AccountID }
func (m *CallTool) Account() string              { return m.AccountID }
func (m *SetPolicy) Account() string             { return m.AccountID }
func (m *GetPolicy) Account() string             { return m.AccountID }
func (m *PreviewPolicy) Account() string         { return m.AccountID }
func (m *GetInvoice) Account() string            { return m.AccountID }
func (m *ConfirmInvoicePaid) Account() string    { return m.AccountID }
func (m *ListSchedules) Account() string         { return m.AccountID }
func (m *ScheduleAction) Account() string        { return m.AccountID }
func (m *ListApprovals) Account() string         { return m.AccountID }
func (m *GetApproval) Account() string           { return m.AccountID }
func (m *DecideApproval) Account() string        { return m.AccountID }

// route is one registered message.
type route struct {
	msg   any // a nil value of the message's type (for the wire)
	reply any // a zero value of its answer's type; nil for None
	// scoped: the message is Scoped. creates: it may reach an agent that
	// does not exist yet (Create).
	scoped, creates bool
	// notFound answers a message for an agent that does not exist or is
	// another account's.
	notFound error
	run      func(a *Actor, ctx context.Context, m any) (any, error)
}

// on registers the handler of message type M, whose answer is R.
func on[M Request[R], R any](run func(a *Actor, ctx context.Context, m M) (R, error)) route {
	var m M
	var r R
	rt := route{msg: m, notFound: ErrNotFound}
	if _, none := any(r).(None); !none {
		rt.reply = r
	}
	_, rt.scoped = any(m).(Scoped)
	rt.run = func(a *Actor, ctx context.Context, msg any) (any, error) {
		v, err := run(a, ctx, msg.(M))
		if _, none := any(v).(None); none {
			return nil, err
		}
		return v, err
	}
	return rt
}

// missing sets the error for an absent or foreign agent.
func (rt route) missing(err error) route { rt.notFound = err; return rt }

// protocol is every message the agent actor answers.
func protocol() []route {
	return []route{
		func() route { rt := on((*Actor).create); rt.creates = true; return rt }(),
		on(func(a *Actor, _ context.Context, _ *Get) (*Record, error) { return a.rec, nil }),
		on(func(a *Actor, ctx context.Context, m *GetStatus) (*Status, error) { return a.status(ctx, m.Chain) }),
		on((*Actor).export),
		on(func(a *Actor, ctx context.Context, m *Attest) (enclave.Attestation, error) {
			return a.deps.Keys.Attest(ctx, a.id, a.rec.deployed(), m.Nonce)
		}),
		on(func(a *Actor, ctx context.Context, _ *ListConversations) ([]Conversation, error) {
			return a.listConversations(ctx)
		}),
		on(func(a *Actor, ctx context.Context, _ *CreateConversation) (*Conversation, error) {
			return a.createConversation(ctx)
		}),
		on(func(a *Actor, ctx context.Context, m *ListMessages) ([]Message, error) {
			return a.listMessages(ctx, m.ConversationID)
		}),
		on(func(a *Actor, ctx context.Context, m *DeleteConversation) (None, error) {
			return None{}, a.deleteConversation(ctx, m.ConversationID)
		}),
		on(func(a *Actor, ctx context.Context, _ *ListNotifications) (*Inbox, error) {
			return a.listNotifications(ctx)
		}),
		on(func(a *Actor, ctx context.Context, _ *MarkNotificationsRead) (None, error) {
			return None{}, a.markRead(ctx)
		}),
		on(func(a *Actor, ctx context.Context, _ *DeleteNotifications) (None, error) {
			return None{}, a.deleteNotifications(ctx)
		}),
		on(func(a *Actor, ctx context.Context, m *Notify) (*Notification, error) { return a.notify(ctx, m) }),
		on((*Actor).chat),
		on((*Actor).callTool),
		on((*Actor).setPolicy),
		on(func(a *Actor, ctx context.Context, _ *GetPolicy) (*PolicyView, error) { return a.getPolicy(ctx) }),
		on((*Actor).previewPolicy),
		// Invoices, received payments, schedules (messages_money.go).
		on((*Actor).deliverPayments),
		on((*Actor).getInvoice).missing(ErrInvoiceNotFound),
		on((*Actor).confirmInvoicePaid).missing(ErrInvoiceNotFound),
		on((*Actor).publicInvoice).missing(ErrInvoiceNotFound),
		on((*Actor).claimInvoicePaid).missing(ErrInvoiceNotFound),
		on((*Actor).payX402).missing(ErrInvoiceNotFound), // x402.go
		on((*Actor).listInvoices),                        // lists.go
		on((*Actor).listPayments),                        // lists.go
		on((*Actor).listReceived),                        // lists.go
		on((*Actor).getPayment).missing(ErrPaymentNotFound),
		on(func(a *Actor, ctx context.Context, _ *ListSchedules) ([]tools.Schedule, error) {
			return a.listSchedules(ctx)
		}),
		on((*Actor).scheduleAction),
		on((*Actor).runSchedule),
		// Approvals (approvals.go).
		on(func(a *Actor, ctx context.Context, m *ListApprovals) ([]ApprovalView, error) {
			return a.listApprovals(ctx, m.Status)
		}),
		on(func(a *Actor, ctx context.Context, m *GetApproval) (*ApprovalView, error) {
			ap, _, err := a.getApproval(ctx, m.ApprovalID)
			if err != nil {
				return nil, err
			}
			return viewApproval(ap), nil
		}),
		on((*Actor).decide),
		on(func(a *Actor, ctx context.Context, m *WakeApproval) (None, error) {
			return None{}, a.wakeApproval(ctx, m.ApprovalID)
		}),
		on(func(a *Actor, ctx context.Context, m *PaymentSettled) (None, error) {
			return None{}, a.settled(ctx, m.Settlement)
		}),
		on(func(a *Actor, ctx context.Context, m *WakeWithdrawal) (None, error) {
			return None{}, a.wakeWithdrawal(ctx, m.PaymentID) // withdrawwait.go
		}),
	}
}

// routes indexes protocol by message type.
var routes = func() map[reflect.Type]route {
	out := make(map[reflect.Type]route)
	for _, rt := range protocol() {
		t := reflect.TypeOf(rt.msg)
		if _, dup := out[t]; dup {
			panic(fmt.Sprintf("agent: message %s registered twice", t))
		}
		out[t] = rt
	}
	return out
}()

// Receive handles one message: it finds the message's route, checks that
// the agent exists and, for a Scoped message, that it is the caller's
// account's, and runs the route's handler.
func (a *Actor) Receive(ctx context.Context, msg any) (any, error) {
	rt, ok := routes[reflect.TypeOf(msg)]
	if !ok {
		return nil, fmt.Errorf("agent %s: unknown message %T", a.id, msg)
	}
	if !rt.creates {
		a.resumeSetup(ctx)
		if a.rec == nil || rt.scoped && !a.ownedBy(msg.(Scoped).Account()) {
			return nil, rt.notFound
		}
	}
	return rt.run(a, ctx, msg)
}

func (a *Actor) ownedBy(account string) bool {
	return a.rec != nil && account != "" && account == a.rec.AccountID
}
