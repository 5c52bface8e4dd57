package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// ChainSet gives the chain actor of each chain; a chain without one
// answers an error matching chains.ErrUnavailable.
type ChainSet interface {
	Chain(id chains.ID) (*chainactor.Ref, error)
}

// ChainMap is a ChainSet over started chain actors.
type ChainMap map[chains.ID]*chainactor.Ref

// Chain implements ChainSet. A chain that is down on this node (degraded
// or reset, actors/chain health.go) answers its *chains.DownError.
func (m ChainMap) Chain(id chains.ID) (*chainactor.Ref, error) {
	if r, ok := m[id]; ok && r != nil {
		if err := r.Err(); err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: no connector for %s on this node", chains.ErrUnavailable, id)
}

// NoChains is the ChainSet of a node with no chain connector: every call
// reports chains.ErrUnavailable, so the create flow records its on-chain
// steps as pending instead of pretending they happened.
type NoChains struct{}

// Chain implements ChainSet.
func (NoChains) Chain(id chains.ID) (*chainactor.Ref, error) {
	return nil, fmt.Errorf("%w: no connector for %s on this node", chains.ErrUnavailable, id)
}

// toolEnv builds the services of one chat request's tool calls; convID is
// the conversation asking (held payments and schedules report back there).
func (a *Actor) toolEnv(ctx context.Context, convID string) tools.Env {
	ag := a.toolAgent()
	meta := make(map[chains.ID]string, len(ag.MetaAddresses))
	for c, m := range ag.MetaAddresses {
		meta[c] = m
	}
	st, now := a.deps.Store, a.deps.now
	payments := state.NewPayments(st, a.id, now)
	invoices := state.NewInvoices(st, a.id, now, a.rec.Name, a.deps.PublicURL, state.StealthAddresses(meta, rand.Reader))
	n := &notifier{a: a}
	dir := &namingDirectory{Directory: Directory{Store: st}}
	ops := &chainOps{a: a, agent: ag, payments: payments, invoices: invoices, notifier: n, convID: convID, names: dir}
	// Where the chain activates the address, the destination is recorded
	// first (reused by a retry, reclaimed by the scanner's maintenance).
	invoices.WithPrep(ops.prepareDestination).WithPrepares(ops.PreparesDestinations)
	return tools.Env{
		Agent:     ag,
		Source:    toolSource(convID),
		Now:       now,
		Chains:    ops,
		Directory: dir,
		Invoices:  invoices,
		Schedules: originSchedules{Schedules: a.schedules(), st: st, agentID: a.id, convID: convID},
		Memories:  state.NewMemories(st, a.id, now),
		Payments:  payments,
		Outgoing:  a.outgoing(),
		Notifier:  n,

		InvoiceLookup: invoiceLookup{st: st, publicURL: a.deps.PublicURL, now: now},
		HTTP:          a.deps.HTTP,
	}
}

// notifier writes to this agent's inbox from tool goroutines. Tool calls of
// one response run concurrently, and the inbox's id counter lives in the
// agent record, so writes are serialised here.
type notifier struct {
	mu sync.Mutex
	a  *Actor
}

// Notify raises the notification once per call key and text: a chat or
// MCP call retried with its idempotency key gets the first payment's
// answer back, and must not announce that payment a second time. The text
// is in the marker because one call may raise several (withdraw_all).
func (n *notifier) Notify(ctx context.Context, key, typ, title, body string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	note := &Notify{Type: typ, Title: title, Body: body}
	if key == "" {
		_, err := n.a.notify(ctx, note)
		return err
	}
	h := sha256.Sum256([]byte(strings.Join([]string{key, typ, title, body}, "\x00")))
	err := n.a.notifyOnce(ctx, note, n.a.id+"/tool/"+hex.EncodeToString(h[:16]))
	if errors.Is(err, errNotified) {
		return nil
	}
	return err
}

// chainOps reaches the chain actors for this agent; its keys stay in the
// enclave (the KeyRef names them).
type chainOps struct {
	a        *Actor
	agent    tools.Agent
	payments *state.Payments
	invoices *state.Invoices
	notifier *notifier
	convID   string
	// names knows the Veil names of the meta-addresses this request's
	// tools resolved, so a held payment shows "bob.veil", not a key.
	names *namingDirectory
	// sendingDue: the agent sends a withdrawal that waited on its
	// prerequisite (wakeWithdrawal), which removes its due entry with
	// what it tells; any other withdrawal (a retry of the user) removes
	// it here.
	sendingDue bool
}

func (o *chainOps) conn(id chains.ID) (*chainactor.Ref, error) { return o.a.deps.Chains.Chain(id) }

func (o *chainOps) key(id chains.ID) chains.KeyRef {
	return chains.KeyRef{AgentID: o.agent.ID, Chain: id, Epoch: keyEpoch}
}

// PreparesDestinations: this node's connector for chain id activates an
// invoice's one-time address before the invoice is shown
// (chains.DestinationPreparer; Stellar with a sponsor).
func (o *chainOps) PreparesDestinations(id chains.ID) bool {
	c, err := o.conn(id)
	return err == nil && c.PreparesDestinations()
}

// prepareDestination is the invoices' state.DestinationPrep: on a chain
// that prepares destinations, the new invoice's one-time address is
// activated (signed by its one-time key, the sponsor paying) before the
// invoice is stored; elsewhere nothing is done (create_invoice has refused
// what a fresh address cannot receive).
func (o *chainOps) prepareDestination(ctx context.Context, id chains.ID, asset, address string, eph []byte) error {
	if !o.PreparesDestinations(id) {
		return nil
	}
	c, err := o.conn(id)
	if err != nil {
		return err
	}
	key := o.key(id)
	key.EphemeralPub = eph
	_, err = c.PrepareDestination(ctx, key, address, asset, "activate/"+o.agent.ID+"/"+address)
	return err
}

// Assets implements tools.ChainOps: what the chain's connector carries.
func (o *chainOps) Assets(_ context.Context, id chains.ID) ([]chains.Asset, error) {
	return chainAssets(o.a.deps.Chains, id)
}

// chainAssets lists the assets of chain id's connector (chains.Connector.
// Assets); a chain this node does not serve, or not yet, answers an error
// matching chains.ErrUnavailable.
func chainAssets(cs ChainSet, id chains.ID) ([]chains.Asset, error) {
	c, err := cs.Chain(id)
	if err != nil {
		return nil, err
	}
	if as := c.Assets(); len(as) > 0 {
		return as, nil
	}
	return nil, fmt.Errorf("%w: %s: not connected yet", chains.ErrUnavailable, id)
}

// bound binds pr to its chain's connector's own asset
// (tools.PaymentRequest.Bind), once: a payment kept to be made later and
// read back where it runs (a schedule's slot, an approved payment:
// tools.StoredPayment), or one its tool left unbound because the chain
// was out of reach (bound after the owner's hold). A request already
// bound, or that no tool read (its own checks refuse it), is pr itself;
// a chain out of reach answers its error (chains.ErrUnavailable),
// nothing signed.
func (a *Actor) bound(pr tools.PaymentRequest) (tools.PaymentRequest, error) {
	if pr.Bound() || !pr.Parsed() {
		return pr, nil
	}
	as, err := chainAssets(a.deps.Chains, pr.Chain())
	if err != nil {
		return pr, err
	}
	return pr.Bind(as)
}

func (o *chainOps) Balance(ctx context.Context, id chains.ID) (chains.Balance, error) {
	c, err := o.conn(id)
	if err != nil {
		return chains.Balance{}, err
	}
	return c.Balance(ctx, o.agent.Addresses[id])
}

// SendStealth pays pr, the payment as its tool parsed it (docs/tools.md,
// "Parse once"): the approval rules, the record and the signing request
// all take it as it is; an unparsed request is refused before anything.
func (o *chainOps) SendStealth(ctx context.Context, pr tools.PaymentRequest) (chains.TxResult, error) {
	if err := holdable(pr); err != nil {
		return chains.TxResult{}, err // not parsed: nothing is held or signed
	}
	// Shown as this request's directory knows the meta-address.
	pr = pr.Named(o.names.name(pr.Recipient().Address))
	// The owner's approval rules first, before the chain is even reached:
	// a payment they hold is not sent (the tool reports it held, and the
	// chain is needed only when it runs); the enclave checks them again,
	// with the spending policy, before it signs.
	if err := o.a.hold(ctx, policy.Hold{AgentID: o.agent.ID, Kind: policy.KindPayment, Chain: pr.Chain(), Asset: pr.Asset().Symbol, Amount: pr.Amount(),
		Recipient: pr.Recipient().Name, PayTo: pr.Recipient().Address, Key: pr.IdempotencyKey(), ConversationID: o.convID}); err != nil {
		return chains.TxResult{}, err
	}
	pr, err := o.a.bound(pr)
	if err != nil {
		return chains.TxResult{}, err
	}
	return o.a.sendStealth(ctx, pr)
}

// holdable refuses, before the owner's approval rules are even asked, a
// payment no tool read (the zero PaymentRequest) or of a kind the
// send and invoice paths do not pay: nothing is held or signed. Binding
// its asset to the connector's comes after the hold (bound), so a
// chain out of reach does not stop a payment the owner holds.
func holdable(pr tools.PaymentRequest) error {
	if !pr.Parsed() || pr.Kind() == tools.KindWithdraw || pr.Kind() == tools.KindX402 {
		return fmt.Errorf("%w: nothing was signed", tools.ErrUnparsedPayment)
	}
	return nil
}

// Withdraw spends pr, the withdrawal as its tool parsed it: recorded as
// pr.Record, signed as exactly pr.WithdrawRequest.
func (o *chainOps) Withdraw(ctx context.Context, pr tools.PaymentRequest) (chains.TxResult, error) {
	pr, err := o.a.bound(pr)
	if err != nil {
		return chains.TxResult{}, err
	}
	req, err := pr.WithdrawRequest()
	if err != nil {
		return chains.TxResult{}, err
	}
	id := req.Chain
	c, err := o.conn(id)
	if err != nil {
		return chains.TxResult{}, err
	}
	p, err := o.payments.Get(ctx, id, req.From)
	if err != nil {
		return chains.TxResult{}, err
	}
	ref := o.key(id)
	if ref.EphemeralPub, err = decodeHex(p.EphemeralPubKey); err != nil {
		return chains.TxResult{}, fmt.Errorf("payment %s has a malformed ephemeral key: %w", req.From, err)
	}
	// Gas a one-time address lacks (an invoice paid in tokens holds no ETH)
	// is paid from the agent's own account, under its own spend, which the
	// enclave checks against the policy like any payment — unless the
	// chain has a relayer (--relayer): then the connector ignores this
	// payer and the relayer pays, so the agent's account never funds its
	// one-time addresses (docs/operations.md, "Relayers").
	payer := chains.GasPayer{Key: o.key(id), Address: o.agent.Addresses[id], Record: o.a.gasRecord(toolSource(o.convID), req.IdempotencyKey)}
	// What else the withdrawal moves (the relayer's fee, the native rest)
	// has its own record too (sideRecord).
	req.Sides = o.a.sideRecord(toolSource(o.convID))
	res, err := o.a.paying(ctx, pr.Record(), func(ctx context.Context) (chains.TxResult, error) { return c.WithdrawWithGas(ctx, ref, req, payer) })
	if !o.sendingDue && (err == nil || isPending(err)) {
		// A retry under the key of a withdrawal that waited sent it (or
		// left it pending): the agent's own send has nothing left to do.
		o.a.forgetDue(context.WithoutCancel(ctx), id, req.IdempotencyKey)
	}
	return res, err
}

func (o *chainOps) RegisterName(ctx context.Context, id chains.ID) (chains.TxResult, error) {
	c, err := o.conn(id)
	if err != nil {
		return chains.TxResult{}, err
	}
	return c.RegisterName(ctx, o.key(id), o.agent.Addresses[id], o.agent.Name, o.agent.MetaAddresses[id])
}

func (o *chainOps) ResolveName(ctx context.Context, id chains.ID, name string) (string, error) {
	c, err := o.conn(id)
	if err != nil {
		return "", err
	}
	return c.ResolveName(ctx, name)
}

func (o *chainOps) Fund(ctx context.Context, id chains.ID) (chains.TxResult, error) {
	c, err := o.conn(id)
	if err != nil {
		return chains.TxResult{}, err
	}
	return c.Fund(ctx, o.agent.Addresses[id])
}

func (o *chainOps) TxLink(id chains.ID, txHash string) string {
	c, err := o.conn(id)
	if err != nil {
		return ""
	}
	return c.TxLink(txHash)
}

// Scan reads the chain's announcements after this agent's cursor, keeps
// the ones addressed to it (view tag first, then one ECDH each), records
// each new payment once and notifies it, and marks invoices paid to their
// own stealth addresses. It answers how many new payments it found.
func (o *chainOps) Scan(ctx context.Context, id chains.ID) (int, error) {
	c, err := o.conn(id)
	if err != nil {
		return 0, err
	}
	keys, err := o.a.deps.Keys.ScanKeys(ctx, o.agent.ID, id)
	if err != nil {
		return 0, err
	}
	defer keys.Zero()
	match, err := matcherFor(id, keys)
	if err != nil {
		return 0, err
	}
	found := 0
	_, err = c.ScanInto(ctx, o.a.deps.Store, "agent/"+o.agent.ID, 1000, func(ctx context.Context, anns []chains.Announcement) error {
		for _, i := range match(anns) {
			n, err := o.deliver(ctx, id, anns[i])
			if err != nil {
				return err
			}
			found += n
		}
		return nil
	})
	return found, err
}

// deliver records one matched announcement (see deliverIncoming); a
// payment seen before (a page delivered again after a crash, or found by
// the background scanner first) counts 0 and notifies nothing.
func (o *chainOps) deliver(ctx context.Context, id chains.ID, ann chains.Announcement) (int, error) {
	isNew, _, err := o.a.deliverIncoming(ctx, id, Incoming{
		StealthAddress: ann.StealthAddress, EphemeralPubKey: ann.EphemeralPubKey,
		Asset: ann.Asset, Amount: ann.Amount, TxHash: ann.TxHash,
	}, o.notifier.notifyOnce)
	if err != nil || !isNew {
		return 0, err
	}
	return 1, nil
}
