package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/x402"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
)

// TableX402 holds the x402 settlement of each invoice paid that way:
// "<agentID>/<invoiceID>" → x402Settled (JSON). It lets the payer's retry
// of the same authorization get the same answer, and tells any other
// payment that the invoice is paid.
const TableX402 = "x402_settlements"

// X402Pay is a request to an invoice's x402 resource (GET
// /pay/<id>/x402, docs/x402.md). Answers *X402Answer.
type X402Pay struct {
	answers[*X402Answer]
	InvoiceID string
	// Payment is the PAYMENT-SIGNATURE header ("" when there was none).
	Payment string
}

// Outcomes of an X402Pay.
const (
	// X402Required: no payment came; Required says how to pay (402).
	X402Required = "required"
	// X402Invalid: the payment was refused and nothing moved; Required
	// (with its Error) and Message say why (402).
	X402Invalid = "invalid"
	// X402Settled: this authorization paid the invoice, now or on an
	// earlier request; Settlement is the receipt (200).
	X402Settled = "settled"
	// X402Paid: no payment came and the invoice is already paid (200,
	// no settlement).
	X402Paid = "paid"
	// X402Refused: the invoice cannot take this payment: it was paid by
	// another, or it cannot be paid with x402 (not an EVM token) (409).
	X402Refused = "refused"
)

// X402Answer is the outcome of an X402Pay.
type X402Answer struct {
	Outcome    string                `json:"outcome"`
	Required   *x402.PaymentRequired `json:"required,omitempty"`
	Settlement *x402.SettleResponse  `json:"settlement,omitempty"`
	Message    string                `json:"message,omitempty"`
	Invoice    *PayView              `json:"invoice,omitempty"`
}

// x402Settled is a TableX402 record.
type x402Settled struct {
	From       string              `json:"from"`
	Nonce      string              `json:"nonce"`
	Settlement x402.SettleResponse `json:"settlement"`
}

// x402Timeout is the requirement's maxTimeoutSeconds: how long a payer's
// authorization should stay valid for the settlement to be mined.
const x402Timeout = 300

// payX402 answers an invoice's x402 resource: the requirement (payTo: the
// invoice's one-time stealth address, exactly its amount of its token),
// or, with a payment, the payment verified (x402.Verify, then the nonce on
// chain and the payer's balance), settled from the payee's own account
// (which pays the gas) and the invoice marked paid (one invoice_paid).
// Whatever is refused moves nothing.
func (a *Actor) payX402(ctx context.Context, m *X402Pay) (*X402Answer, error) {
	rec, err := a.invoiceRecord(ctx, m.InvoiceID)
	if err != nil {
		return nil, err
	}
	conn, err := a.deps.Chains.Chain(rec.Chain)
	if err != nil {
		return nil, err
	}
	req, err := a.x402Requirement(ctx, conn, rec)
	if errors.Is(err, chains.ErrNoAuthorizations) || errors.Is(err, chains.ErrUnknownAsset) {
		return &X402Answer{Outcome: X402Refused, Message: fmt.Sprintf("invoice %s asks for %s %s on %s, which x402 cannot pay (its exact scheme moves EVM tokens with EIP-3009); pay it at its payment link",
			rec.ID, rec.Amount, rec.Asset, rec.Chain)}, nil
	}
	if err != nil {
		return nil, err
	}
	required := &x402.PaymentRequired{X402Version: x402.Version, Accepts: []x402.Requirements{req},
		Resource: x402.Resource{URL: rec.PaymentLink + "/x402", Description: fmt.Sprintf("Invoice %s from %s%s: %s %s", rec.ID, rec.AgentName, chains.NameSuffix, rec.Amount, rec.Asset), MimeType: "application/json"}}
	view := PayViewOf(rec)

	var p x402.Payload
	decodeErr := error(nil)
	if m.Payment != "" {
		decodeErr = x402.Decode(m.Payment, &p)
	}
	if rec.Status == state.InvoicePaid {
		return a.x402AlreadyPaid(ctx, rec, view, m.Payment != "" && decodeErr == nil, p)
	}
	if rec.Expired(a.deps.now()) {
		return nil, fmt.Errorf("%w: invoice %s %s; it can no longer be paid", ErrInvoiceExpired, rec.ID, rec.Closed())
	}
	invalidAnswer := func(reason, msg string) *X402Answer {
		r := *required
		r.Error = msg
		return &X402Answer{Outcome: X402Invalid, Required: &r, Message: msg + " (" + reason + "); nothing was moved"}
	}
	switch {
	case m.Payment == "":
		required.Error = x402.HeaderSignature + " header is required"
		return &X402Answer{Outcome: X402Required, Required: required, Message: "payment required: " + rec.Amount + " " + rec.Asset + " to " + rec.PayTo}, nil
	case decodeErr != nil:
		return invalidAnswer(x402.ReasonPayload, "the "+x402.HeaderSignature+" header is not an x402 payment: "+decodeErr.Error()), nil
	}
	auth, sig, err := x402.Verify(p, req, a.deps.now())
	if err != nil {
		var inv *x402.Invalid
		if errors.As(err, &inv) {
			return invalidAnswer(inv.Reason, inv.Message), nil
		}
		return nil, err
	}
	auth.Asset = rec.Asset
	used, err := conn.AuthorizationUsed(ctx, auth)
	if err != nil {
		return nil, err
	}
	if used {
		return invalidAnswer(x402.ReasonNonceUsed, "this authorization's nonce was already used or canceled by "+auth.From), nil
	}
	if short, err := a.x402Short(ctx, conn, rec, auth); err != nil {
		return nil, err
	} else if short != "" {
		return invalidAnswer(x402.ReasonInsufficientFund, short), nil
	}

	payee := chains.KeyRef{AgentID: a.id, Chain: rec.Chain, Epoch: keyEpoch}
	key := "x402/" + rec.ID + "/" + strings.ToLower(auth.From) + "/" + hexutil.Encode(auth.Nonce[:])
	res, err := conn.SettleAuthorization(ctx, payee, a.rec.Addresses[string(rec.Chain)], auth, sig[:], key)
	if errors.Is(err, chains.ErrAuthorizationRefused) {
		return invalidAnswer(x402.ReasonSettlement, err.Error()), nil
	}
	if errors.Is(err, chains.ErrInsufficientFunds) {
		// The submitter is the payee's account, or the chain's relayer
		// when one is enabled (the connector picks it): err names it.
		return nil, fmt.Errorf("%w: the settlement's submitter cannot pay its gas; nothing was moved (%v)", chains.ErrInsufficientFunds, err)
	}
	if err != nil {
		return nil, err
	}
	settlement := x402.SettleResponse{Success: true, Payer: common.HexToAddress(auth.From).Hex(), Transaction: res.TxHash, Network: req.Network, Amount: req.Amount}
	if raw, err := json.Marshal(x402Settled{From: settlement.Payer, Nonce: hexutil.Encode(auth.Nonce[:]), Settlement: settlement}); err == nil {
		ops := []persistence.Op{persistence.Put(TableX402, a.id+"/"+rec.ID, raw, persistence.Absent())}
		if op, ok := a.moneyAudit(ctx, audit.ActionInvoiceX402, audit.SourceX402, audit.OutcomeOK,
			fmt.Sprintf("x402 payment of %s %s from %s to invoice %s settled on %s (tx %s)", rec.Amount, rec.Asset, settlement.Payer, rec.ID, rec.Chain, res.TxHash), rec.ID, res.TxHash); ok {
			ops = append(ops, op)
		}
		if _, err := a.deps.Store.Apply(ctx, ops...); err != nil && !errors.Is(err, persistence.ErrConflict) {
			return nil, err
		}
	}
	// The settlement paid the invoice's own address: record the payment
	// and mark the invoice paid (one invoice_paid), as a txHash sent to
	// POST /invoice/:id/paid would.
	if err := a.verifyInvoiceTx(ctx, rec, res.TxHash); err != nil {
		a.log(ctx).Warn("x402 settlement mined but the invoice did not flip; the scanner will settle it", slog.String("invoice", rec.ID), slog.String("tx", res.TxHash), slog.String("err", err.Error()))
	}
	if got, err := a.invoiceRecord(ctx, rec.ID); err == nil {
		view = PayViewOf(got)
	}
	return &X402Answer{Outcome: X402Settled, Settlement: &settlement, Invoice: view}, nil
}

// x402AlreadyPaid answers a request to a paid invoice: the same receipt
// for the authorization that paid it, a refusal for any other payment.
func (a *Actor) x402AlreadyPaid(ctx context.Context, rec state.InvoiceRecord, view *PayView, hasPayment bool, p x402.Payload) (*X402Answer, error) {
	var done x402Settled
	r, err := a.deps.Store.Get(ctx, TableX402, a.id+"/"+rec.ID)
	switch {
	case err == nil:
		if err := json.Unmarshal(r.Value, &done); err != nil {
			return nil, fmt.Errorf("x402 settlement of invoice %s: %w", rec.ID, err)
		}
	case !errors.Is(err, persistence.ErrNotFound):
		return nil, err
	}
	if !hasPayment {
		return &X402Answer{Outcome: X402Paid, Invoice: view}, nil
	}
	if done.From != "" && strings.EqualFold(p.Payload.Authorization.From, done.From) && strings.EqualFold(p.Payload.Authorization.Nonce, done.Nonce) {
		s := done.Settlement
		return &X402Answer{Outcome: X402Settled, Settlement: &s, Invoice: view}, nil
	}
	tx := ""
	if rec.TxHash != nil {
		tx = " by transaction " + *rec.TxHash
	}
	return &X402Answer{Outcome: X402Refused, Message: "invoice " + rec.ID + " is already paid" + tx + "; this payment was not settled and nothing was moved", Invoice: view}, nil
}

// x402Requirement is the invoice's one way to pay: exact, its chain, its
// amount in base units of its token, to its one-time address.
func (a *Actor) x402Requirement(ctx context.Context, conn *chainactor.Ref, rec state.InvoiceRecord) (x402.Requirements, error) {
	if rec.Chain.Family() != chains.FamilyEVM {
		return x402.Requirements{}, fmt.Errorf("%w: %s", chains.ErrNoAuthorizations, rec.Chain)
	}
	asset, err := tools.LookupAsset(rec.Chain, rec.Asset)
	if err != nil {
		return x402.Requirements{}, err
	}
	units, err := chains.ParseAmount(rec.Amount, asset.Decimals)
	if err != nil {
		return x402.Requirements{}, err
	}
	dom, err := conn.AuthorizationDomain(ctx, rec.Asset)
	if err != nil {
		return x402.Requirements{}, err
	}
	return x402.Requirements{
		Scheme: x402.SchemeExact, Network: x402.Network(dom.ChainID), Amount: units.String(), Asset: dom.Contract,
		PayTo: common.HexToAddress(rec.PayTo).Hex(), MaxTimeoutSeconds: x402Timeout,
		Extra: &x402.Extra{Name: dom.Name, Version: dom.Version},
	}, nil
}

// x402Short says why the payer cannot cover the authorization ("" when
// it can): the token would refuse the transfer, and the payee would pay
// the gas of a reverted settlement for nothing.
func (a *Actor) x402Short(ctx context.Context, conn *chainactor.Ref, rec state.InvoiceRecord, auth chains.TransferAuthorization) (string, error) {
	bal, err := conn.Balance(ctx, auth.From)
	if err != nil {
		return "", err
	}
	if !covers(bal.Tokens[strings.ToUpper(rec.Asset)], rec.Amount) {
		return fmt.Sprintf("the payer %s holds %s %s; the invoice asks for %s", auth.From, bal.Tokens[strings.ToUpper(rec.Asset)], rec.Asset, rec.Amount), nil
	}
	return "", nil
}
