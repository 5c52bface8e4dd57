package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/chains"
)

// Parse once (docs/tools.md, "Parse once"): a payment tool's arguments are
// strings only until the tool boundary. There they are read and checked
// once into a PaymentRequest (chain, asset, amount in base units, resolved
// recipient, idempotency key, the tool and the source that asked), and
// every step below — the restatement and repeat checks, the owner's
// approval rules, the payment record, the spend the enclave signs, the
// reply — takes that value. Its fields are unexported and only this file's readers make one,
// so no step below can be handed strings to parse again, and a request
// nobody parsed (the zero value) is refused before anything is signed.

// ErrUnparsedPayment: a PaymentRequest that no reader made (the zero
// value) was handed on to be paid; nothing is signed.
var ErrUnparsedPayment = errors.New("payment request was not parsed")

// PaymentRequest is one payment as its tool read it.
type PaymentRequest struct {
	kind PaymentKind
	// tool is the tool that asked (send_payment, pay_agent, pay_invoice,
	// withdraw, withdraw_all), or what kept it (StoredPayment).
	tool string
	spend
	to  PaymentRecipient
	key string
	// source is what asked (Env.Source: the conversation, an MCP call; a
	// schedule, an approval): the record's.
	source PaymentSource
	// from and all are a withdrawal's (KindWithdraw): the received
	// payment's one-time address, and whether it moves everything less
	// fees (amount is then zero).
	from string
	all  bool
	// token is the asset as the chain's connector carries it (its own
	// descriptor, with the contract, issuer or mint), bound once at the
	// tool boundary (Bind) before anything is signed; zero until then.
	token chains.Asset
}

// Kind is the operation: KindSendPayment (a stealth payment to a
// meta-address), KindPayInvoice (a transfer to an invoice's address) or
// KindWithdraw (from a received payment's one-time address to a plain
// address).
func (r PaymentRequest) Kind() PaymentKind { return r.kind }

// Tool is the tool that asked for the payment (or, for a payment kept
// to be made later, what kept it: StoredPayment).
func (r PaymentRequest) Tool() string { return r.tool }

// Chain is the chain it is paid on.
func (r PaymentRequest) Chain() chains.ID { return r.chain }

// Asset is what it pays, as the chain carries it.
func (r PaymentRequest) Asset() Asset { return r.asset }

// Token is the asset as the chain's connector carries it (bound by Bind;
// zero before).
func (r PaymentRequest) Token() chains.Asset { return r.token }

// Amount is how much, in the asset's base units.
func (r PaymentRequest) Amount() chains.Amount { return r.amount }

// Recipient is who is paid: the name people read ("bob.veil", "shop
// (invoice 3f2a…)"; "" for a bare meta-address) and the address the chain
// pays (a meta-address, or an invoice's one-time address).
func (r PaymentRequest) Recipient() PaymentRecipient { return r.to }

// IdempotencyKey is the key the payment is signed and recorded under.
func (r PaymentRequest) IdempotencyKey() string { return r.key }

// Source is what asked for the payment.
func (r PaymentRequest) Source() PaymentSource { return r.source }

// From is a withdrawal's one-time address ("" otherwise).
func (r PaymentRequest) From() string { return r.from }

// All reports whether a withdrawal moves everything less fees.
func (r PaymentRequest) All() bool { return r.all }

// Parsed reports whether a reader made r (the zero value is not a
// payment).
func (r PaymentRequest) Parsed() bool {
	return r.kind != "" && r.chain != "" && r.asset.Symbol != "" && r.to.Address != "" && r.key != "" &&
		(r.kind != KindWithdraw || r.from != "") && (r.all || r.amount.Sign() > 0)
}

// AmountText is the amount as replies show it: "all" for a withdrawal of
// everything.
func (r PaymentRequest) AmountText() string {
	if r.all {
		return "all"
	}
	return r.amount.String()
}

// who is how replies name the recipient: its name, else its address.
func (r PaymentRequest) who() string {
	if r.to.Name != "" {
		return r.to.Name
	}
	return r.to.Address
}

// Bind is r with its asset bound to the connector's own descriptor of it
// among assets (the chain's Connector.Assets): the one place where a
// payment's asset, read by its symbol from a tool's arguments or a stored
// row, becomes the typed asset the connector pays in. Below it nothing
// looks an asset up by its symbol: the request carries the descriptor,
// and the connector pays only in one of its own (chains.Owns). An asset
// the connector does not carry is chains.ErrUnknownAsset; nothing is
// signed.
func (r PaymentRequest) Bind(assets []chains.Asset) (PaymentRequest, error) {
	if !r.Parsed() {
		return r, fmt.Errorf("%w: nothing was signed", ErrUnparsedPayment)
	}
	t, err := chains.AssetBySymbol(assets, r.asset.Symbol)
	if err != nil {
		return r, fmt.Errorf("%w; nothing was signed", err)
	}
	if t.Chain != r.chain {
		return r, fmt.Errorf("%w: %s is carried on %s, the payment is on %s; nothing was signed", chains.ErrUnknownAsset, t.Symbol, t.Chain, r.chain)
	}
	r.token = t
	return r, nil
}

// bind binds req (Bind) to the assets of its chain's connector
// (ChainOps.Assets): a payment tool does it once, right before the
// request is paid, so a request kept for later (a schedule) does not need
// the chain.
//
// A chain this node cannot reach now (chains.ErrUnavailable) leaves req
// unbound, and no error: the owner's approval rules still come first (a
// payment they hold waits for its chain, which is needed only when it
// runs), and the chain ops bind it when they pay it, answering the
// chain's own error if it is still out of reach. Nothing unbound is
// signed (SendRequest, WithdrawRequest).
func bind(ctx context.Context, env *Env, req PaymentRequest) (PaymentRequest, error) {
	assets, err := env.Chains.Assets(ctx, req.chain)
	if errors.Is(err, chains.ErrUnavailable) {
		return req, nil
	}
	if err != nil {
		return req, err
	}
	return req.Bind(assets)
}

// Bound reports whether r is parsed and bound (Bind).
func (r PaymentRequest) Bound() bool { return r.Parsed() && r.token.Symbol != "" }

// SendRequest is the spend the chain's connector signs (and the enclave
// checks): exactly the parsed chain, bound asset, amount, recipient
// address and key. A request not parsed or not bound answers
// ErrUnparsedPayment.
func (r PaymentRequest) SendRequest() (chains.SendRequest, error) {
	if !r.Bound() || r.kind == KindWithdraw || r.kind == KindX402 {
		return chains.SendRequest{}, fmt.Errorf("%w: nothing was signed", ErrUnparsedPayment)
	}
	return chains.SendRequest{Chain: r.chain, Asset: r.token, Amount: r.amount, To: r.to.Address, IdempotencyKey: r.key}, nil
}

// WithdrawRequest is the spend of a withdrawal (KindWithdraw) the
// connector signs with the one-time key: exactly the parsed chain, one-time
// address, bound asset, amount (or all), destination and key. Any other
// request, or one not bound, answers ErrUnparsedPayment.
func (r PaymentRequest) WithdrawRequest() (chains.WithdrawRequest, error) {
	if !r.Bound() || r.kind != KindWithdraw {
		return chains.WithdrawRequest{}, fmt.Errorf("%w: nothing was signed", ErrUnparsedPayment)
	}
	return chains.WithdrawRequest{Chain: r.chain, From: r.from, Asset: r.token, Amount: r.amount, All: r.all, To: r.to.Address, IdempotencyKey: r.key}, nil
}

// Authorization is the EIP-3009 authorization of an x402 payment
// (KindX402) the agent's account signs: terms carries the token's EIP-712
// domain, the validity window and the nonce; what it moves — the asset,
// the amount in base units and the payee — is exactly the parsed request's,
// whatever terms said. Any other request answers ErrUnparsedPayment.
func (r PaymentRequest) Authorization(terms chains.TransferAuthorization) (chains.TransferAuthorization, error) {
	if !r.Parsed() || r.kind != KindX402 {
		return chains.TransferAuthorization{}, fmt.Errorf("%w: nothing was signed", ErrUnparsedPayment)
	}
	terms.Asset, terms.To, terms.Value = r.asset.Symbol, r.to.Address, r.amount.Units()
	return terms, nil
}

// Record is the payment's record before it is signed (status and times
// are the store's; one without a source is refused there).
func (r PaymentRequest) Record() OutgoingPayment {
	return OutgoingPayment{Kind: r.kind, Source: r.source, Chain: r.chain, Asset: r.asset.Symbol, Amount: r.amount, All: r.all,
		Recipient: r.to, From: r.from, IdempotencyKey: r.key}
}

// String is the payment in words: "0.5 USDC to bob.veil".
func (r PaymentRequest) String() string {
	return fmt.Sprintf("%s %s to %s", r.amount, r.asset.Symbol, clip(r.who(), 40))
}

// readPayment reads a send_payment or pay_agent call (tool) into its
// request: who it pays (resolveRecipient, with onChain as there), on
// which chain and in which asset (pickChain), and how much, each argument
// parsed once. rc is the resolved recipient, for the refusals that name
// its chains.
func readPayment(ctx context.Context, env *Env, tool, who string, a *args, onChain bool) (*recipient, PaymentRequest, error) {
	c, err := chainArg(env, a.str("chain"))
	if err != nil {
		return nil, PaymentRequest{}, err
	}
	rc, err := resolveRecipient(ctx, env, who, c, onChain)
	if err != nil {
		return nil, PaymentRequest{}, err
	}
	sp, err := readSpendOn(env, c, a, rc)
	if err != nil {
		return rc, PaymentRequest{}, err
	}
	return rc, PaymentRequest{kind: KindSendPayment, tool: tool, spend: sp,
		to: PaymentRecipient{Name: rc.veilName(), Address: rc.metaFor(sp.chain)}, key: env.IdempotencyKey, source: env.Source}, nil
}

// StoredPayment reads a stealth payment kept to be made later — a
// schedule's slot or an approved payment, whose terms readPayment parsed
// when the user asked and which were stored as text — back into its
// request, once, where it runs; everything after (the approval rules, the
// record, the signing request) takes the request. src is what kept it (a
// schedule, an approval); symbol "" is the chain's native asset; to is the
// recipient as the owner saw it and the meta-address to pay.
func StoredPayment(src PaymentSource, c chains.ID, symbol, amount string, to PaymentRecipient, key string) (PaymentRequest, error) {
	return storedPayment(KindSendPayment, src, c, symbol, amount, to, key)
}

// StoredInvoicePayment is StoredPayment for an invoice payment kept for
// the owner's approval (KindPayInvoice): to's address is the invoice's
// one-time address.
func StoredInvoicePayment(src PaymentSource, c chains.ID, symbol, amount string, to PaymentRecipient, key string) (PaymentRequest, error) {
	return storedPayment(KindPayInvoice, src, c, symbol, amount, to, key)
}

func storedPayment(kind PaymentKind, src PaymentSource, c chains.ID, symbol, amount string, to PaymentRecipient, key string) (PaymentRequest, error) {
	if len(Assets(c)) == 0 {
		return PaymentRequest{}, fmt.Errorf("%w: %q", chains.ErrUnknownChain, c)
	}
	asset := nativeAsset(c)
	if symbol != "" {
		var err error
		if asset, err = LookupAsset(c, symbol); err != nil {
			return PaymentRequest{}, err
		}
	}
	v, err := asset.Parse(amount)
	if err != nil {
		return PaymentRequest{}, err
	}
	r := PaymentRequest{kind: kind, tool: string(src.Type), spend: spend{chain: c, asset: asset, amount: v}, to: to, key: key, source: src}
	if !r.Parsed() {
		return PaymentRequest{}, fmt.Errorf("%w: the %s's payment has no recipient address or key", ErrUnparsedPayment, src.Type)
	}
	return r, nil
}

// StoredWithdrawal reads a withdrawal kept to be sent later — one that
// waited on its gas funding or its relayer's fee, whose terms withdraw or
// withdraw_all parsed when the user asked and whose payment record keeps
// them — back into its request, once, where it runs: the received payment
// p it spends (its one-time address and asset, as the tool read them),
// amount as the record shows it (ignored with all), the destination to
// and the key, for src (the record's source). It is the request the
// tool made (withdrawal), so a withdrawal sent later is signed and
// recorded exactly as the retry under its key would be.
func StoredWithdrawal(src PaymentSource, p Payment, amount string, all bool, to PaymentRecipient, key string) (PaymentRequest, error) {
	asset := paymentAsset(p)
	var v chains.Amount
	if !all {
		var err error
		if v, err = asset.Parse(amount); err != nil {
			return PaymentRequest{}, err
		}
	}
	r := withdrawal("withdraw", p, asset, v, all, to.Address, key, src)
	r.to.Name = to.Name
	if !r.Parsed() {
		return PaymentRequest{}, fmt.Errorf("%w: the stored withdrawal has no one-time address, destination or key", ErrUnparsedPayment)
	}
	return r, nil
}

// Named is r with its recipient shown as name (how the approval, the
// record and the notifications label the payee); what is paid, and to
// which address, does not change.
func (r PaymentRequest) Named(name string) PaymentRequest {
	r.to.Name = name
	return r
}

// invoicePayment is the request of paying inv (its terms sp, read once
// by resolveInvoice) under key for src: a transfer to its one-time
// address, the payee named by label.
func invoicePayment(inv PayableInvoice, sp spend, label, key string, src PaymentSource) PaymentRequest {
	return PaymentRequest{kind: KindPayInvoice, tool: "pay_invoice", spend: sp,
		to: PaymentRecipient{Name: label, Address: inv.PayTo}, key: key, source: src}
}

// withdrawal is the request of withdraw or withdraw_all (tool): amount of
// asset (all: everything less fees, amount zero) from the received
// payment p to the plain address to (read by ParseAddress) under key,
// for src.
func withdrawal(tool string, p Payment, asset Asset, amount chains.Amount, all bool, to, key string, src PaymentSource) PaymentRequest {
	return PaymentRequest{kind: KindWithdraw, tool: tool, spend: spend{chain: p.Chain, asset: asset, amount: amount},
		to: PaymentRecipient{Address: to}, key: key, source: src, from: p.StealthAddress, all: all}
}

// x402Payment is the request of paying an x402 requirement that
// fetch_paid read once (consider): amount of asset on c to the payee
// payTo, signed and recorded under "x402/" and the call's key, for the
// call's source.
func x402Payment(env *Env, c chains.ID, asset Asset, amount chains.Amount, payTo string) PaymentRequest {
	return PaymentRequest{kind: KindX402, tool: "fetch_paid", spend: spend{chain: c, asset: asset, amount: amount},
		to: PaymentRecipient{Address: payTo}, key: "x402/" + env.IdempotencyKey, source: env.Source}
}

// paymentAsset is the asset of a received payment p on its chain (one the
// table does not know keeps its symbol, with 18 decimals).
func paymentAsset(p Payment) Asset {
	if p.Asset == "" && len(Assets(p.Chain)) > 0 {
		return nativeAsset(p.Chain)
	}
	asset, err := LookupAsset(p.Chain, p.Asset)
	if err != nil {
		return Asset{Symbol: p.Asset, Decimals: 18}
	}
	return asset
}
