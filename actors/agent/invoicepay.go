package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/payuri"
	"github.com/veilhq/veil/persistence"
)

// What pay_invoice needs from the actor: this server's invoices (any
// agent's, read from the store; the payee's actor stays their only
// writer) and a plain payment from the agent's account. See
// docs/invoices.md, "Paying an invoice".

// invoiceLookup implements tools.InvoiceLookup over the store.
type invoiceLookup struct {
	st        persistence.Store
	publicURL string
	now       func() time.Time
}

func payableOf(rec state.InvoiceRecord, now time.Time) tools.PayableInvoice {
	inv := PayViewOf(rec).PayableInvoice
	inv.Expired = rec.Status != state.InvoicePaid && rec.Expired(now)
	inv.AgentID = rec.AgentID
	return inv
}

func (l invoiceLookup) found(rec state.InvoiceRecord, err error, what string) (tools.PayableInvoice, error) {
	if errors.Is(err, state.ErrNotFound) {
		return tools.PayableInvoice{}, fmt.Errorf("%w: %s", tools.ErrUnknownInvoice, what)
	}
	if err != nil {
		return tools.PayableInvoice{}, err
	}
	return payableOf(rec, l.now()), nil
}

func (l invoiceLookup) ByID(ctx context.Context, id string) (tools.PayableInvoice, error) {
	rec, err := state.GetInvoice(ctx, l.st, id)
	return l.found(rec, err, "no invoice "+id+" on this server")
}

func (l invoiceLookup) ByAddress(ctx context.Context, c chains.ID, payTo string) (tools.PayableInvoice, error) {
	rec, err := state.InvoiceByAddress(ctx, l.st, c, payTo)
	return l.found(rec, err, "no invoice pays to "+payTo)
}

// LocalID answers the id of a payment link under this server's public URL
// (scheme and host compared without case).
func (l invoiceLookup) LocalID(link string) (string, bool) {
	base, err1 := url.Parse(l.publicURL)
	u, err2 := url.Parse(link)
	if err1 != nil || err2 != nil || base.Host == "" || !strings.EqualFold(u.Scheme, base.Scheme) || !strings.EqualFold(u.Host, base.Host) {
		return "", false
	}
	rest, ok := strings.CutPrefix(u.Path, strings.TrimRight(base.Path, "/")+"/pay/")
	rest = strings.TrimSuffix(rest, "/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

// PayLink is the payment link of this server's invoice id.
func (l invoiceLookup) PayLink(id string) string {
	return strings.TrimRight(l.publicURL, "/") + "/pay/" + id
}

// PayAddress pays an invoice's one-time address from the agent's account:
// the owner's approval rules first (a held payment is not sent), then
// payToAddress. pr is the payment as pay_invoice parsed it; its
// recipient's name labels the payee for the approval and the record.
func (o *chainOps) PayAddress(ctx context.Context, pr tools.PaymentRequest) (chains.TxResult, error) {
	if err := holdable(pr); err != nil {
		return chains.TxResult{}, err // not parsed: nothing is held or signed
	}
	if err := o.a.hold(ctx, policy.Hold{AgentID: o.agent.ID, Kind: policy.KindInvoice, Chain: pr.Chain(), Asset: pr.Asset().Symbol, Amount: pr.Amount(),
		Recipient: pr.Recipient().Name, PayTo: pr.Recipient().Address, Key: pr.IdempotencyKey(), ConversationID: o.convID}); err != nil {
		return chains.TxResult{}, err
	}
	pr, err := o.a.bound(pr)
	if err != nil {
		return chains.TxResult{}, err
	}
	return o.a.payToAddress(ctx, pr)
}

// payToAddress pays pr (an invoice's payment, as pay_invoice read it or
// an approval kept it) to its recipient's plain address from the agent's
// account, whichever path pays it (pr.Source): the connector signs a transfer
// from the account's own key (no one-time key) as an explicit spend,
// which the enclave checks against the policy. It is recorded
// (pr.Record) before it is signed.
func (a *Actor) payToAddress(ctx context.Context, pr tools.PaymentRequest) (chains.TxResult, error) {
	req, err := pr.SendRequest()
	if err != nil {
		return chains.TxResult{}, err
	}
	c, err := a.deps.Chains.Chain(req.Chain)
	if err != nil {
		return chains.TxResult{}, err
	}
	from := chains.KeyRef{AgentID: a.id, Chain: req.Chain, Epoch: keyEpoch}
	// The account's own key (no ephemeral key) spends from the account's
	// address: a plain transfer in the account's lane.
	return a.paying(ctx, pr.Record(), func(ctx context.Context) (chains.TxResult, error) {
		return c.Withdraw(ctx, from, chains.WithdrawRequest{Chain: req.Chain, From: a.rec.Addresses[string(req.Chain)], To: req.To,
			Asset: req.Asset, Amount: req.Amount, IdempotencyKey: req.IdempotencyKey})
	})
}

// PaymentTarget is this node's connector's chain id and token for asset.
func (o *chainOps) PaymentTarget(id chains.ID, asset string) (uint64, string, bool) {
	c, err := o.conn(id)
	if err != nil {
		return 0, "", false
	}
	t, ok := c.Connector().(payuri.Target)
	if !ok {
		return 0, "", false
	}
	return t.PaymentTarget(asset)
}

// SettlesByTransfer: this node's connector for chain scans plain
// transfers (chains.TransferScanner), as the payee's Veil must to settle
// an invoice paid by one.
func (o *chainOps) SettlesByTransfer(id chains.ID) bool {
	_, ok := o.connector(id).(chains.TransferScanner)
	return ok
}

// connector is this node's connector for chain id (nil when none).
func (o *chainOps) connector(id chains.ID) chains.Connector {
	c, err := o.conn(id)
	if err != nil {
		return nil
	}
	return c.Connector()
}

// VerifiesByHash: this node's connector for chain verifies a payment by
// its transaction hash (chains.PaymentVerifier).
func (o *chainOps) VerifiesByHash(id chains.ID) bool {
	_, ok := o.connector(id).(chains.PaymentVerifier)
	return ok
}
