package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// InvoiceRule is what the policy preview says about invoices (issue 34
// item 3): the owner reading a preview must not think that an allowlist
// blocks every invoice, whose one-time address is new each time and so
// never on a list.
const InvoiceRule = "Invoices are checked against the allowlist by their issuer, not by their one-time address: " +
	"an invoice issued by a Veil agent on this server passes when its issuing agent is on the allowlist " +
	"(the server finds the issuer in its own invoice records; a payer cannot claim one). " +
	"Another server's invoice, or a bare address, is checked by its address."

// InvoiceCheck is the preview's answer for one invoice of this server: the
// issuer it was checked by, and whether a payment of it would pass the
// previewed policy's allowlist and per-payment cap.
type InvoiceCheck struct {
	InvoiceID string    `json:"invoiceId"`
	Issuer    string    `json:"issuer"`
	Chain     chains.ID `json:"chain"`
	PayTo     string    `json:"payTo"`
	Asset     string    `json:"asset"`
	Amount    string    `json:"amount"`
	// CheckedBy is "issuer": the allowlist was compared with Issuer, not
	// with PayTo.
	CheckedBy string `json:"checkedBy"`
	Allowed   bool   `json:"allowed"`
	// Reason says why a payment of it would be refused.
	Reason string `json:"reason,omitempty"`
}

// ErrUnknownInvoice: the preview was asked about an invoice this server
// does not have.
var ErrUnknownInvoice = errors.New("policy: unknown invoice")

// PreviewInvoice finds invoice ref (an id, or a payment link …/pay/<id>)
// among this server's invoices and checks a payment of it against p as
// the enclave's gate would: by its issuer (Store.withIssuer), the
// allowlist then the per-payment cap. The daily budget depends on the
// day's spending and is not previewed.
func PreviewInvoice(ctx context.Context, st persistence.Store, p Policy, ref string) (*InvoiceCheck, error) {
	id := strings.TrimSpace(ref)
	if i := strings.LastIndex(id, "/pay/"); i >= 0 {
		id = strings.Trim(id[i+len("/pay/"):], "/")
	}
	if id == "" || len(id) > 64 || strings.Trim(strings.ToLower(id), "0123456789abcdef-") != "" {
		return nil, fmt.Errorf("%w: invoice %q: give an invoice id of this server or its payment link (…/pay/<id>)", ErrInvalid, truncate(ref))
	}
	norm, err := Normalize(p)
	if err != nil {
		return nil, err
	}
	rec, err := state.GetInvoice(ctx, st, id)
	if errors.Is(err, state.ErrNotFound) {
		return nil, fmt.Errorf("%w: no invoice %s on this server (another server's invoice is checked by its one-time address)", ErrUnknownInvoice, truncate(id))
	}
	if err != nil {
		return nil, err
	}
	c := &InvoiceCheck{InvoiceID: rec.ID, Issuer: rec.AgentName + chains.NameSuffix, Chain: rec.Chain, PayTo: rec.PayTo,
		Asset: rec.Asset, Amount: rec.Amount, CheckedBy: "issuer", Allowed: true}
	amount, err := amountOf(rec.Amount)
	if err != nil {
		return nil, err
	}
	if err := norm.Check(Payment{Asset: rec.Asset, Amount: amount, Recipient: rec.PayTo, Issuer: rec.AgentName}); err != nil {
		c.Allowed, c.Reason = false, err.Error()
	}
	return c, nil
}
