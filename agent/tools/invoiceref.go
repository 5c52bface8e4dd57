package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
)

// What pay_invoice pays: an invoice of this server (by id or payment link)
// or of another Veil server (by its payment link, whose JSON form it reads
// and checks against this server's own view of the chain). See
// docs/invoices.md, "Paying an invoice".

// Errors of invoice references (errors.Is).
var (
	// ErrUnknownInvoice: no invoice by that id or link.
	ErrUnknownInvoice = errors.New("unknown invoice")
	// ErrInvoiceNotPayable: the invoice is paid, expired, the payer's own,
	// or its terms cannot be trusted (a foreign server's answer that does
	// not hold together).
	ErrInvoiceNotPayable = errors.New("invoice cannot be paid")
)

// PayableInvoice is an invoice as a payer sees it: the fields of the pay
// page's JSON form that paying depends on (GET <paymentLink> with Accept:
// application/json, the same object as /pay/<id>/status; the agent
// actor's PayView embeds this type, so the server's answer and the
// payer's reading cannot drift apart).
type PayableInvoice struct {
	ID        string     `json:"id"`
	Payee     string     `json:"payee"`
	Amount    string     `json:"amount"`
	Asset     string     `json:"asset"`
	Memo      string     `json:"memo"`
	Chain     chains.ID  `json:"chain"`
	PayTo     string     `json:"payTo"`
	Status    string     `json:"status"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Expired   bool       `json:"expired"`
	// CancelledAt is when the payee cancelled it (cancel_invoice; its
	// ExpiresAt is then the same time), so a refusal says cancelled, not
	// expired.
	CancelledAt *time.Time `json:"cancelledAt,omitempty"`
	// Token is the asset's contract, mint or issuer ("" for the native
	// asset) and ChainID the EVM chain id, as the payee's server says.
	Token   string `json:"token,omitempty"`
	ChainID uint64 `json:"chainId,omitempty"`
	// AgentID is the payee agent when the invoice is this server's ("" for
	// another server's).
	AgentID string `json:"-"`
}

// InvoiceLookup finds the invoices of this server, any agent's.
type InvoiceLookup interface {
	// ByID answers the invoice with that id, or an error matching
	// ErrUnknownInvoice.
	ByID(ctx context.Context, id string) (PayableInvoice, error)
	// ByAddress answers the invoice whose one-time address is payTo on
	// chain, or an error matching ErrUnknownInvoice.
	ByAddress(ctx context.Context, chain chains.ID, payTo string) (PayableInvoice, error)
	// LocalID answers the invoice id of a payment link of this server.
	LocalID(link string) (string, bool)
	// PayLink is the payment link of this server's invoice id.
	PayLink(id string) string
}

// InvoiceChains is what paying an invoice needs from the chains besides
// ChainOps. The agent actor's chain access implements it.
type InvoiceChains interface {
	// PayAddress pays req (KindPayInvoice: its amount of its asset to
	// the plain address of its recipient, an invoice's one-time address)
	// from the agent's account as an explicit spend under the owner's
	// policy and approvals; the recipient's name labels the payee for the
	// approval and the notifications. A payment the approvals hold
	// answers a *HeldError.
	PayAddress(ctx context.Context, req PaymentRequest) (chains.TxResult, error)
	// PaymentTarget is this server's connector's view of asset on chain:
	// its EVM chain id and the token's contract, mint or issuer ("" for
	// the native asset); ok is false when the connector cannot say.
	PaymentTarget(chain chains.ID, asset string) (chainID uint64, token string, ok bool)
	// SettlesByTransfer says whether Veil sees a plain transfer to an
	// invoice's address on chain (the connector scans transfers), so the
	// payee's invoice settles by itself once paid.
	SettlesByTransfer(chain chains.ID) bool
	// VerifiesByHash says whether the payee's Veil can verify a payment on
	// chain by its transaction hash (chains.PaymentVerifier), so an invoice
	// paid there settles once the payer names the transaction.
	VerifiesByHash(chain chains.ID) bool
}

// invoiceRef is what the user named: a bare id, or a link and its id.
type invoiceRef struct {
	id   string
	link string // "" for a bare id
}

var (
	reInvoiceID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{7,63}$`)
	rePayPath   = regexp.MustCompile(`^(.*)/pay/([A-Za-z0-9][A-Za-z0-9-]{7,63})/?$`)
)

// parseInvoiceRef reads the invoice argument: an invoice id or a payment
// link http(s)://host/…/pay/<id>.
func parseInvoiceRef(s string) (invoiceRef, error) {
	s = strings.TrimSpace(s)
	low := strings.ToLower(s)
	if !strings.HasPrefix(low, "http://") && !strings.HasPrefix(low, "https://") {
		if reInvoiceID.MatchString(s) {
			return invoiceRef{id: s}, nil
		}
		return invoiceRef{}, argErr("invoice must be an invoice id (like 3f2a9c1e-…) or a payment link (https://…/pay/<id>); got %q", clip(s, 80))
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return invoiceRef{}, argErr("invoice %q is not a payment link: give a link like https://host/pay/<invoice id>", clip(s, 80))
	}
	m := rePayPath.FindStringSubmatch(u.EscapedPath())
	if m == nil {
		return invoiceRef{}, argErr("%q is not a Veil payment link: its path must end in /pay/<invoice id>", clip(s, 80))
	}
	return invoiceRef{id: m[2], link: s}, nil
}

// maxInvoiceJSON caps a foreign server's answer (fetchTimeout bounds the
// wait).
const maxInvoiceJSON = 64 << 10

// fetchInvoice asks another Veil server's payment link for the invoice's
// JSON form. What it answers is untrusted: checkForeign decides.
func fetchInvoice(ctx context.Context, env *Env, ref invoiceRef) (PayableInvoice, error) {
	host := clip(linkHost(ref.link), 80)
	r := webRequest{method: http.MethodGet, url: ref.link, header: map[string]string{"Accept": "application/json"}, limit: maxInvoiceJSON}
	resp, answered, err := r.send(ctx, env.webClient())
	switch {
	case errors.Is(err, ErrPrivateAddress):
		return PayableInvoice{}, fmt.Errorf("%w: %s is not on the public internet (%w), and this server does not fetch payment links there; nothing was paid", ErrInvoiceNotPayable, host, ErrPrivateAddress)
	case !answered:
		return PayableInvoice{}, fmt.Errorf("%w: the server of %s did not answer (%v); nothing was paid", chains.ErrUnavailable, host, err)
	case err != nil:
		return PayableInvoice{}, fmt.Errorf("%w: reading the answer of %s: %v; nothing was paid", chains.ErrUnavailable, host, err)
	case resp.status == http.StatusNotFound:
		return PayableInvoice{}, fmt.Errorf("%w: %s has no invoice %s; nothing was paid", ErrUnknownInvoice, host, ref.id)
	case resp.status != http.StatusOK:
		return PayableInvoice{}, fmt.Errorf("%w: %s answered %d for invoice %s, not the invoice; nothing was paid", ErrInvoiceNotPayable, host, resp.status, ref.id)
	case resp.truncated:
		return PayableInvoice{}, fmt.Errorf("%w: %s answered more than %d bytes for invoice %s; nothing was paid", ErrInvoiceNotPayable, host, maxInvoiceJSON, ref.id)
	}
	if mt, _, _ := mime.ParseMediaType(resp.header.Get("Content-Type")); mt != "application/json" {
		return PayableInvoice{}, fmt.Errorf("%w: %s did not answer the invoice as JSON (Content-Type %q): is it a Veil payment link? Nothing was paid", ErrInvoiceNotPayable, host, clip(resp.header.Get("Content-Type"), 40))
	}
	var inv PayableInvoice
	if err := json.Unmarshal(resp.body, &inv); err != nil {
		return PayableInvoice{}, fmt.Errorf("%w: %s answered malformed invoice JSON (%v); nothing was paid", ErrInvoiceNotPayable, host, err)
	}
	return inv, nil
}

// linkHost is the host of a payment link (the link itself when it does
// not parse).
func linkHost(link string) string {
	if u, err := url.Parse(link); err == nil {
		return u.Host
	}
	return link
}

// checkForeign checks what another server says about an invoice against
// the link and this server's own view of the chain: every field the
// payment depends on must be well-formed and agree, or nothing is paid.
// It answers the invoice with its amount and payTo normalised, and its
// terms (chain, asset, amount) as read here, once.
func checkForeign(env *Env, ic InvoiceChains, ref invoiceRef, inv PayableInvoice) (PayableInvoice, spend, error) {
	host := linkHost(ref.link)
	lie := func(format string, v ...any) error {
		return fmt.Errorf("%w: the invoice %s from %s does not hold together: %s; nothing was paid", ErrInvoiceNotPayable, ref.id, clip(host, 80), fmt.Sprintf(format, v...))
	}
	if inv.ID != ref.id {
		return inv, spend{}, lie("the server answered for invoice %q", clip(inv.ID, 64))
	}
	c, err := chains.Parse(string(inv.Chain))
	if err != nil {
		return inv, spend{}, lie("its chain %q is not one Veil knows", clip(string(inv.Chain), 24))
	}
	inv.Chain = c
	asset, err := LookupAsset(c, inv.Asset)
	if err != nil || asset.Symbol != inv.Asset {
		return inv, spend{}, lie("its asset %q is not one Veil carries on %s (%s)", clip(inv.Asset, 16), c, assetList(c))
	}
	amount, err := asset.Parse(inv.Amount)
	if err != nil || amount.Sign() <= 0 {
		return inv, spend{}, lie("its amount %q is not a positive amount of %s with at most %d decimals", clip(inv.Amount, 40), asset.Symbol, asset.Decimals)
	}
	inv.Amount = amount.String()
	if inv.PayTo, err = ParseAddress(c, strings.TrimSpace(inv.PayTo)); err != nil {
		return inv, spend{}, lie("its address is not a %s address (%v)", c, err)
	}
	chainID, token, known := ic.PaymentTarget(c, asset.Symbol)
	if known && c.Family() == chains.FamilyEVM && inv.ChainID != chainID {
		return inv, spend{}, lie("it is for chain id %d, but %s here is chain id %d (another network)", inv.ChainID, c, chainID)
	}
	if known && !sameAddress(c, inv.Token, token) {
		want := token
		if want == "" {
			want = "the native asset"
		}
		return inv, spend{}, lie("its %s token is %q, but %s on %s here is %s (another network or a fake token)", asset.Symbol, clip(inv.Token, 64), asset.Symbol, c, want)
	}
	inv.Payee = clip(strings.TrimSpace(inv.Payee), 64)
	inv.Memo = clip(strings.TrimSpace(inv.Memo), MaxMemoLen)
	return inv, spend{chain: c, asset: asset, amount: amount}, nil
}

// CheckPayable refuses (ErrInvoiceNotPayable) an invoice that is not
// waiting for payment at now, or that is the payer's own: what pay_invoice
// checks, for an approved invoice payment that runs later (it decides on
// that day's facts: paid, expired or cancelled meanwhile ends it).
func CheckPayable(inv PayableInvoice, now time.Time, payerID string) error {
	return payable(&Env{Now: func() time.Time { return now }, Agent: Agent{ID: payerID}}, inv)
}

// payable refuses an invoice that is not waiting for payment.
func payable(env *Env, inv PayableInvoice) error {
	switch {
	case inv.Status == "paid":
		return fmt.Errorf("%w: invoice %s is already paid; nothing was paid again", ErrInvoiceNotPayable, inv.ID)
	case inv.Expired || inv.ExpiresAt != nil && !env.now().Before(*inv.ExpiresAt):
		return fmt.Errorf("%w: invoice %s %s; it can no longer be paid, ask the payee for a new invoice. Nothing was paid", ErrInvoiceNotPayable, inv.ID, closedWords(inv.CancelledAt, inv.ExpiresAt))
	case inv.Status != "pending":
		return fmt.Errorf("%w: invoice %s is %q, not pending; nothing was paid", ErrInvoiceNotPayable, inv.ID, clip(inv.Status, 24))
	case inv.AgentID != "" && inv.AgentID == env.Agent.ID:
		return fmt.Errorf("%w: invoice %s is this agent's own invoice; an agent does not pay itself. Share its payment link with the payer", ErrInvoiceNotPayable, inv.ID)
	}
	return nil
}
