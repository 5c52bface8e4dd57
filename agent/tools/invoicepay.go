package tools

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/veilhq/veil/agent/intent"
	"github.com/veilhq/veil/chains"
)

// InvoicePaymentResult is the detail of pay_invoice.
type InvoicePaymentResult struct {
	// PaymentID and Status are the payment's record's (PaymentResult).
	PaymentID string    `json:"paymentId,omitempty"`
	Status    string    `json:"status,omitempty"`
	Invoice   string    `json:"invoice"`
	Payee     string    `json:"payee"`
	Memo      string    `json:"memo,omitempty"`
	TxHash    string    `json:"txHash"`
	TxLink    string    `json:"txLink"`
	Amount    string    `json:"amount"`
	Asset     string    `json:"asset"`
	Chain     chains.ID `json:"chain"`
	PayTo     string    `json:"payTo"`
	// Settlement says, on chains where the payee's Veil is told the
	// transaction (Stellar, Solana), whether it verified it.
	Settlement string `json:"settlement,omitempty"`
}

var payInvoiceSpec = spec{
	{name: "invoice", required: true, maxLen: 300, example: "https://veil.example/pay/3f2a9c1e-…",
		desc: "The invoice to pay: its id, or its payment link (this server's or another Veil server's, https://…/pay/<id>), exactly as the user wrote it."},
	{name: "amount", maxLen: MaxAmountLen, example: "25",
		desc: "Only when the user stated an amount for the invoice: that amount. The invoice is paid only if it asks for exactly this."},
}

// payInvoice pays an invoice: its amount, asset and chain, to its
// one-time address, once per invoice (the idempotency key is the invoice's
// address, not the call's), under the owner's policy and approvals.
func payInvoice() Tool {
	return withArgs(Tool{
		Name: "pay_invoice",
		Description: "Pay an invoice by its id or payment link (of this server or another Veil server): exactly the invoice's amount and asset, on its chain, to its own one-time address. " +
			"Paid, expired and this agent's own invoices are refused; an invoice is paid at most once. The owner's allowlist passes an invoice of this server by its issuer (the agent named on the allowlist), not its one-time address. Only when the user asked in this message, naming the invoice. Returns txHash and txLink.",
		Payment: true,
	}, payInvoiceSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		ref, err := parseInvoiceRef(a.str("invoice"))
		if err != nil {
			return nil, err
		}
		ic, ok := env.Chains.(InvoiceChains)
		if !ok || env.InvoiceLookup == nil {
			return nil, fmt.Errorf("%w: paying invoices is not available here", ErrNotConfigured)
		}
		if err := requireInvoiceStated(env, ref); err != nil {
			return nil, err
		}
		inv, terms, err := resolveInvoice(ctx, env, ic, ref)
		if err != nil {
			return nil, err
		}
		if err := payable(env, inv); err != nil {
			return nil, err
		}
		if !deployed(&env.Agent, inv.Chain) {
			return nil, fmt.Errorf("%w: invoice %s is to be paid on %s, and this agent is on %s; nothing was paid", ErrInvoiceNotPayable, inv.ID, inv.Chain, chainList(env.Agent.Chains))
		}
		// The invoice's terms, read once: everything below pays exactly
		// this request.
		req := invoicePayment(inv, terms, invoiceLabel(inv), invoiceKey(env, inv), env.Source)
		if err := checkStatedAmount(env, ref, a.str("amount"), inv, req); err != nil {
			return nil, err
		}
		claim := ""
		if !ic.SettlesByTransfer(inv.Chain) {
			if !ic.VerifiesByHash(inv.Chain) {
				// Paid, it would stay pending: the payee's Veil would
				// not see the transfer (docs/invoices.md, "Other chains").
				return nil, fmt.Errorf("%w: invoice %s is on %s, where Veil does not yet see a plain transfer to an invoice's address, so the payee's invoice would not settle; nothing was paid. Ask the payee for an invoice on an EVM chain, or pay them with send_payment", ErrInvoiceNotPayable, inv.ID, inv.Chain)
			}
			// The payee's Veil settles it once told the transaction
			// (POST /pay/<id>/paid), on this server or the link's.
			claim = env.InvoiceLookup.PayLink(inv.ID) + "/paid"
			if ref.link != "" && inv.AgentID == "" {
				claim = claimURL(ref.link)
			}
		}
		// What cannot reach the invoice's fresh address is refused
		// before anything is sent.
		if err := reachable(inv, req); err != nil {
			return nil, err
		}
		return payInvoiceNow(ctx, env, ic, inv, req, claim)
	})
}

// resolveInvoice finds what ref names: this server's invoice (an id, or a
// link to this server) from the store, another server's from its link,
// checked (checkForeign). A foreign answer whose address is one of this
// server's invoices is that invoice, and must agree with it. It answers
// the invoice and its terms (chain, asset, amount), read once.
func resolveInvoice(ctx context.Context, env *Env, ic InvoiceChains, ref invoiceRef) (PayableInvoice, spend, error) {
	local := ref.link == ""
	id := ref.id
	if !local {
		if lid, ok := env.InvoiceLookup.LocalID(ref.link); ok {
			local, id = true, lid
		}
	}
	if local {
		inv, err := env.InvoiceLookup.ByID(ctx, id)
		if errors.Is(err, ErrUnknownInvoice) && ref.link == "" {
			return inv, spend{}, fmt.Errorf("%w: there is no invoice %s on this server; for another Veil server's invoice give its payment link (https://…/pay/<id>). Nothing was paid", ErrUnknownInvoice, clip(id, 64))
		}
		if err != nil {
			return inv, spend{}, err
		}
		terms, err := localTerms(inv)
		return inv, terms, err
	}
	inv, err := fetchInvoice(ctx, env, ref)
	if err != nil {
		return inv, spend{}, err
	}
	inv, terms, err := checkForeign(env, ic, ref, inv)
	if err != nil {
		return inv, terms, err
	}
	mine, err := env.InvoiceLookup.ByAddress(ctx, inv.Chain, inv.PayTo)
	switch {
	case errors.Is(err, ErrUnknownInvoice):
		return inv, terms, nil
	case err != nil:
		return inv, terms, err
	}
	// The address is one of this server's invoices: its record decides,
	// and the link's answer must say the same.
	if mine.Amount != inv.Amount || mine.Asset != inv.Asset || mine.Chain != inv.Chain {
		return inv, terms, fmt.Errorf("%w: the link says %s %s on %s to %s, but that address is invoice %s here, for %s %s on %s; nothing was paid",
			ErrInvoiceNotPayable, inv.Amount, inv.Asset, inv.Chain, inv.PayTo, mine.ID, mine.Amount, mine.Asset, mine.Chain)
	}
	return mine, terms, nil
}

// localTerms reads the terms of this server's invoice inv (stored when it
// was made, so a failure here is a broken record, not the user's input).
func localTerms(inv PayableInvoice) (spend, error) {
	asset, err := LookupAsset(inv.Chain, inv.Asset)
	if err != nil {
		return spend{}, err
	}
	v, err := asset.Parse(inv.Amount)
	if err != nil {
		return spend{}, fmt.Errorf("%w: invoice %s: %w", ErrInvoiceNotPayable, inv.ID, err)
	}
	return spend{chain: inv.Chain, asset: asset, amount: v}, nil
}

// requireInvoiceStated is the restatement rule for invoices: the invoice's
// id (alone or in its link) must be in an instruction of the user's own
// message this turn, so an invoice read in a memo, an email or a tool
// result is never paid on the model's say-so.
func requireInvoiceStated(env *Env, ref invoiceRef) error {
	id := strings.ToLower(ref.id)
	contains := func(text string) bool { return strings.Contains(strings.ToLower(text), id) }
	return requireStated(env, contains, func(why intent.Mood) error {
		return fmt.Errorf("%w: the user's message names invoice %s, but not in an instruction to pay it now: %s (%s). Do not call pay_invoice: answer the user, or ask one confirming question", ErrNotConfirmed, ref.id, why.Why(), why)
	}, func() error {
		return fmt.Errorf("%w: the user's message does not name invoice %s; pay_invoice pays only an invoice the user named (its id or payment link) in this turn. Ask the user to confirm, then call pay_invoice again", ErrNotConfirmed, ref.id)
	})
}

// checkStatedAmount refuses when the user stated an amount (in the
// arguments, or as a number in their instruction beside the invoice's id
// or link) that is not the invoice's: the user meant another invoice, or
// the payee's server changed its terms. req is the invoice's payment.
func checkStatedAmount(env *Env, ref invoiceRef, arg string, inv PayableInvoice, req PaymentRequest) error {
	want := req.Amount().Rat()
	if arg = strings.TrimSpace(arg); arg != "" {
		v, err := req.Asset().Parse(arg)
		if err != nil || v.Rat().Cmp(want) != 0 {
			return fmt.Errorf("%w: invoice %s asks for %s %s, not the %s you stated; nothing was paid. Check the invoice with its payee", ErrInvoiceNotPayable, inv.ID, req.Amount(), req.Asset().Symbol, clip(arg, 40))
		}
	}
	if env.Explicit {
		return nil
	}
	// The numbers of the instruction, less the invoice's id and any link
	// (a port or an id holds digits that are no amount).
	var rest []string
	for _, w := range strings.Fields(intent.Read(env.UserText).Instructed()) {
		if strings.Contains(strings.ToLower(w), strings.ToLower(ref.id)) || strings.Contains(w, "://") {
			continue
		}
		rest = append(rest, w)
	}
	nums := intent.Numbers(strings.Join(rest, " "))
	if len(nums) == 0 {
		return nil
	}
	var said []string
	for _, n := range nums {
		if n.Cmp(want) == 0 {
			return nil
		}
		said = append(said, ratDecimal(n))
	}
	return fmt.Errorf("%w: invoice %s asks for %s %s, but the message states %s; nothing was paid. If the invoice is right, say \"pay invoice %s\" without another amount", ErrInvoiceNotPayable, inv.ID, req.Amount(), req.Asset().Symbol, strings.Join(said, ", "), inv.ID)
}

// invoiceKey is the payment's idempotency key: the payer and the
// invoice's one-time address, so however often and through whichever
// link or id the invoice is paid, the payer pays it once.
func invoiceKey(env *Env, inv PayableInvoice) string {
	to := inv.PayTo
	if inv.Chain.Family() == chains.FamilyEVM {
		to = strings.ToLower(to)
	}
	return "invoice/" + env.Agent.ID + "/" + string(inv.Chain) + "/" + to
}

// invoiceLabel names the payee of inv for the approval, the record and
// the notifications: "shop (invoice 3f2a…)".
func invoiceLabel(inv PayableInvoice) string {
	return fmt.Sprintf("%s (invoice %s)", orDefault(inv.Payee, "the payee"), inv.ID)
}

// payInvoiceNow pays inv as req; with a claim URL (chains where the
// payee's Veil does not scan transfers) it then names the transaction
// there, and a failed claim leaves the payment standing (it is on chain,
// and paying again answers the same transaction).
func payInvoiceNow(ctx context.Context, env *Env, ic InvoiceChains, inv PayableInvoice, req PaymentRequest, claim string) (any, error) {
	payee := orDefault(inv.Payee, "the payee")
	c, amount, asset, key := req.Chain(), req.Amount().String(), req.Asset().Symbol, req.IdempotencyKey()
	req, err := bind(ctx, env, req)
	var tx chains.TxResult
	if err == nil {
		tx, err = ic.PayAddress(ctx, req)
	}
	if err != nil {
		return notSent(ctx, env, err, req, fmt.Sprintf("paying invoice %s (%s %s to %s)", inv.ID, amount, asset, payee))
	}
	res := &InvoicePaymentResult{Invoice: inv.ID, Payee: inv.Payee, Memo: inv.Memo, TxHash: tx.TxHash, TxLink: txLink(env, c, tx),
		Amount: amount, Asset: asset, Chain: c, PayTo: req.Recipient().Address}
	res.PaymentID, res.Status = recordStatus(ctx, env, c, key)
	if claim != "" {
		if err := claimPaid(ctx, env, claim, tx.TxHash); err != nil {
			res.Settlement = fmt.Sprintf("paid on chain, but the payee's server was not told (%v); the invoice settles when the payee or anyone sends {\"txHash\": %q} to %s, or when this invoice is paid again", err, tx.TxHash, claim)
		} else {
			res.Settlement = "the payee's server verified the transaction; the invoice is paid"
		}
	}
	if env.Notifier != nil {
		// Keyed by the invoice: paying it again (a retry, another chat)
		// returns the first payment and announces nothing more.
		_ = env.Notifier.Notify(ctx, key, "payment_sent", fmt.Sprintf("Sent %s %s", amount, asset),
			fmt.Sprintf("Paid invoice %s: %s %s to %s on %s. Transaction %s", inv.ID, amount, asset, payee, c, txText(res.TxLink, res.TxHash)))
	}
	return res, nil
}

// ratDecimal renders a stated number as a plain decimal ("2.5", "20").
func ratDecimal(r *big.Rat) string {
	return strings.TrimSuffix(strings.TrimRight(r.FloatString(18), "0"), ".")
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
