package tools

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/veilhq/veil/chains"
)

// PaymentResult is the detail of send_payment and pay_agent.
type PaymentResult struct {
	// PaymentID names the payment's record (GET /agent/:id/payments/:paymentId);
	// Status is the record's: broadcast (sent, not yet confirmed) or
	// confirmed.
	PaymentID string    `json:"paymentId,omitempty"`
	Status    string    `json:"status,omitempty"`
	TxHash    string    `json:"txHash"`
	TxLink    string    `json:"txLink"`
	Amount    string    `json:"amount"`
	Asset     string    `json:"asset"`
	Chain     chains.ID `json:"chain"`
	Recipient string    `json:"recipient"`
}

var (
	pRecipient = param{name: "recipient", required: true, maxLen: 200, example: "bob.veil",
		desc: "Who to pay: a Veil agent name (bob or bob.veil) or a stealth meta-address (st:eth:0x…, st:xlm:…, st:sol:…). Not a plain address."}
	pAgentName = param{name: "agent_name", required: true, maxLen: 40, example: "alice",
		desc: "The Veil agent to pay, by name: alice or alice.veil."}
	pAmount = param{name: "amount", required: true, maxLen: MaxAmountLen, example: "0.5",
		desc: "Amount in whole units of the asset, as a decimal string exactly as the user wrote it, e.g. \"0.5\". The user's message must state it."}
	pAsset = param{name: "asset", maxLen: 16, example: "USDC",
		desc: "Asset symbol: ETH, ZEN, POL, USDC (EVM chains), XLM, USDC (stellar), SOL, USDC (solana). Default: the chain's native asset. May select the chain (XLM → stellar, SOL → solana)."}
	pPayChain = param{name: "chain", enum: chainEnum(),
		desc: "Chain to pay on. Default: chosen by asset, else the agent's default chain."}
)

func chainEnum() []string {
	var out []string
	for _, c := range chains.Order() {
		out = append(out, string(c))
	}
	return out
}

// needKey refuses a payment tool's call without an idempotency key or
// chain access (withArgs runs it for every Tool.Payment).
func needKey(env *Env) error {
	if strings.TrimSpace(env.IdempotencyKey) == "" {
		return fmt.Errorf("%w: this call has no idempotency key, so a payment could not be made safely", ErrNotConfigured)
	}
	return chainAccess.missing(env)
}

// chainErr explains a chain failure to the model.
func chainErr(op string, c chains.ID, err error) error {
	if w := chains.ErrorWordsFor(c, err.Error()); w != err.Error() {
		err = &worded{text: w, err: err} // no wei in what people read
	}
	switch {
	case outcomeUnknown(err):
		// Signed and handed on, or cut off while the chain had it: the
		// payment is pending, never "nothing was done" (docs/payments.md).
		return fmt.Errorf("%s on %s: %w; the payment is on its way and its outcome is not known yet: you will be told when it confirms; do not send it again", op, c, err)
	case errors.Is(err, chains.ErrUnavailable):
		return fmt.Errorf("%s on %s: %w; nothing was done, try again later", op, c, err)
	case errors.Is(err, chains.ErrInsufficientFunds):
		return fmt.Errorf("%s on %s: %w (the amount plus network fees is more than the account holds; check get_balance)", op, c, err)
	case errors.Is(err, chains.ErrNoFaucet):
		return fmt.Errorf("%s on %s: %w; nothing was done: tell the user which address to send funds to", op, c, err)
	}
	return fmt.Errorf("%s on %s: %w", op, c, err)
}

// worded is a chain error with its raw numbers in words
// (chains.ErrorWordsFor); errors.Is still finds the original.
type worded struct {
	text string
	err  error
}

func (w *worded) Error() string { return w.text }
func (w *worded) Unwrap() error { return w.err }

func txLink(env *Env, c chains.ID, tx chains.TxResult) string {
	if tx.TxLink != "" {
		return tx.TxLink
	}
	return env.Chains.TxLink(c, tx.TxHash)
}

func notify(ctx context.Context, env *Env, typ, title, body string) {
	if env.Notifier != nil {
		_ = env.Notifier.Notify(ctx, env.IdempotencyKey, typ, title, body)
	}
}

// pay pays who the amount, asset and chain of a (send_payment's and
// pay_agent's arguments, read once into a PaymentRequest by readPayment)
// and answers a *PaymentResult, or a *PaymentHeld when the owner's policy
// holds the payment for approval.
func pay(ctx context.Context, env *Env, tool, who string, a *args, onChain bool) (any, error) {
	_, req, err := readPayment(ctx, env, tool, who, a, onChain)
	if err != nil {
		return nil, err
	}
	if err := requireSpendStated(env, a.str("amount"), who, req); err != nil {
		return nil, err
	}
	if err := checkRepeat(ctx, env, req); err != nil {
		return nil, err
	}
	req, err = bind(ctx, env, req)
	var tx chains.TxResult
	if err == nil {
		tx, err = env.Chains.SendStealth(ctx, req)
	}
	if err != nil {
		return notSent(ctx, env, err, req, "paying "+req.String())
	}
	c, amount, asset := req.Chain(), req.Amount().String(), req.Asset().Symbol
	res := &PaymentResult{TxHash: tx.TxHash, TxLink: txLink(env, c, tx), Amount: amount, Asset: asset, Chain: c, Recipient: req.who()}
	res.PaymentID, res.Status = recordStatus(ctx, env, c, req.IdempotencyKey())
	notify(ctx, env, "payment_sent", fmt.Sprintf("Sent %s %s", amount, asset),
		fmt.Sprintf("Sent %s %s to %s on %s. Transaction %s", amount, asset, req.who(), c, txText(res.TxLink, res.TxHash)))
	return res, nil
}

var sendPaymentSpec = spec{pRecipient, pAmount, pAsset, pPayChain}

func sendPayment() Tool {
	return withArgs(Tool{
		Name: "send_payment",
		Description: "Send a private (stealth) payment from this agent to a Veil agent name or a stealth meta-address. " +
			"The recipient gets a fresh one-time address; nobody watching the chain can link it to them. " +
			"Only when the user asked in this message, with the amount written in it. Returns txHash and txLink.",
		Payment: true,
	}, sendPaymentSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		return pay(ctx, env, "send_payment", a.str("recipient"), a, true)
	})
}

var payAgentSpec = spec{pAgentName, pAmount, pAsset, pPayChain}

func payAgent() Tool {
	return withArgs(Tool{
		Name: "pay_agent",
		Description: "Pay another Veil agent by its name (alice or alice.veil) with a private stealth payment. " +
			"Only when the user asked in this message, with the amount written in it. Returns txHash and txLink.",
		Payment: true,
	}, payAgentSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		name := strings.TrimSpace(a.str("agent_name"))
		if strings.HasPrefix(strings.ToLower(name), "st:") {
			return nil, argErr("agent_name must be an agent's name; to pay a meta-address use send_payment")
		}
		return pay(ctx, env, "pay_agent", name, a, false)
	})
}

// WithdrawResult is the detail of withdraw.
type WithdrawResult struct {
	// PaymentID and Status are the withdrawal's record's (PaymentResult);
	// Status pending: on its way, outcome not known yet.
	PaymentID string    `json:"paymentId,omitempty"`
	Status    string    `json:"status,omitempty"`
	TxHash    string    `json:"txHash"`
	TxLink    string    `json:"txLink"`
	Chain     chains.ID `json:"chain"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Asset     string    `json:"asset"`
	// Amount is the amount asked for, or "all" (everything less fees).
	Amount string `json:"amount"`
	// Message, for a pending withdrawal, says what is known.
	Message string `json:"message,omitempty"`
}

// received gathers the agent's received payments on cs.
func received(ctx context.Context, env *Env, cs []chains.ID) ([]Payment, error) {
	if err := paymentRecords.missing(env); err != nil {
		return nil, err
	}
	var out []Payment
	for _, c := range cs {
		ps, err := env.Payments.Received(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("reading received payments on %s: %w", c, err)
		}
		for _, p := range ps {
			if p.Chain == "" {
				p.Chain = c
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func sameAddress(c chains.ID, a, b string) bool {
	if c.Family() == chains.FamilyEVM {
		return strings.EqualFold(a, b)
	}
	return a == b
}

var withdrawSpec = spec{
	{name: "from", required: true, maxLen: 64, example: "0x…",
		desc: "The stealth address of one payment this agent received (from scan_payments / get_balance / privacy_check), not yet withdrawn."},
	{name: "to", required: true, maxLen: 64, example: "0x…",
		desc: "Plain address to send the funds to, on the payment's chain: 0x… (EVM), G… (stellar), base58 (solana). The user's message must contain it."},
	{name: "amount", maxLen: MaxAmountLen, example: "0.5",
		desc: "Amount to withdraw; omit to withdraw everything (less network fees). When given, the user's message must state it."},
}

func withdraw() Tool {
	return withArgs(Tool{
		Name: "withdraw",
		Description: "Move the funds of one received stealth payment (by its stealth address) to a plain address the user gives. " +
			"Only when the user asked in this message, with the destination address written in it.",
		Payment: true,
	}, withdrawSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		from := strings.TrimSpace(a.str("from"))
		all, err := received(ctx, env, env.Agent.Chains)
		if err != nil {
			return nil, err
		}
		var p *Payment
		for i := range all {
			if sameAddress(all[i].Chain, all[i].StealthAddress, from) {
				p = &all[i]
				break
			}
		}
		if p == nil {
			var open []string
			for _, q := range unwithdrawn(all) {
				open = append(open, fmt.Sprintf("%s (%s %s on %s)", q.StealthAddress, q.Balance, q.Asset, q.Chain))
			}
			if len(open) == 0 {
				return nil, fmt.Errorf("%w: %q is not a payment this agent received, and there are no unwithdrawn payments (run scan_payments to look for new ones)", ErrInvalidArgs, clip(from, 64))
			}
			more := ""
			if len(open) > 5 {
				more = fmt.Sprintf(" and %d more", len(open)-5)
				open = open[:5]
			}
			return nil, fmt.Errorf("%w: %q is not a payment this agent received; unwithdrawn payments: %s%s", ErrInvalidArgs, clip(from, 64), strings.Join(open, ", "), more)
		}
		if p.Withdrawn {
			return nil, fmt.Errorf("%w: the payment at %s on %s was already withdrawn", ErrInvalidArgs, p.StealthAddress, p.Chain)
		}
		to, err := ParseAddress(p.Chain, strings.TrimSpace(a.str("to")))
		if err != nil {
			return nil, err
		}
		if sameAddress(p.Chain, to, p.StealthAddress) {
			return nil, argErr("to is the payment's own stealth address")
		}
		// Read once: the withdrawal's request (asset, amount or all,
		// destination, key) is what the chain gets and what is told.
		asset := paymentAsset(*p)
		var amount chains.Amount
		everything := !a.has("amount")
		if !everything {
			if amount, err = asset.Parse(a.str("amount")); err != nil {
				return nil, err
			}
			if exceeds(amount.String(), p.Balance) {
				return nil, fmt.Errorf("%w: %s %s is more than the payment holds (%s %s); omit amount to withdraw everything", chains.ErrInsufficientFunds, amount, asset.Symbol, p.Balance, asset.Symbol)
			}
			if err := requireAmountStated(env, "withdraw", a.str("amount")); err != nil {
				return nil, err
			}
		}
		if err := requireAddressStated(env, "withdraw", strings.TrimSpace(a.str("to"))); err != nil {
			return nil, err
		}
		req := withdrawal("withdraw", *p, asset, amount, everything, to, env.IdempotencyKey, env.Source)
		// A retry that finds the withdrawal sent already (by the first
		// call, or by the agent itself once its gas funding confirmed,
		// docs/payments.md) answers it again, and does not announce it twice.
		before, _ := recordOf(ctx, env, p.Chain, req.IdempotencyKey())
		sentBefore := before.Status == PaymentBroadcast || before.Status == PaymentConfirmed
		req, err = bind(ctx, env, req)
		var tx chains.TxResult
		if err == nil {
			tx, err = env.Chains.Withdraw(ctx, req)
		}
		if err != nil {
			if outcomeUnknown(err) {
				pr := pendingResult(ctx, env, err, req.AmountText(), asset.Symbol, p.Chain, to, req.IdempotencyKey())
				return &WithdrawResult{PaymentID: pr.PaymentID, Status: StatusPending, TxHash: pr.TxHash, TxLink: pr.TxLink, Chain: p.Chain, From: p.StealthAddress, To: to, Asset: asset.Symbol, Amount: req.AmountText(), Message: pr.Message}, nil
			}
			return nil, chainErr("withdrawing from "+p.StealthAddress, p.Chain, err)
		}
		res := withdrawResult(env, req, tx)
		res.PaymentID, res.Status = recordStatus(ctx, env, p.Chain, req.IdempotencyKey())
		marked := ""
		if !everything {
			marked = amount.String()
		}
		if err := env.Payments.MarkWithdrawn(ctx, Withdrawal{Chain: p.Chain, StealthAddress: p.StealthAddress, To: to, Amount: marked, TxHash: tx.TxHash}); err != nil {
			return nil, fmt.Errorf("the withdrawal was sent (%s) but recording it failed: %w", txText(res.TxLink, res.TxHash), err)
		}
		if !sentBefore {
			notify(ctx, env, "withdrawal", fmt.Sprintf("Withdrew %s %s", res.Amount, res.Asset),
				fmt.Sprintf("Withdrew %s %s from %s to %s on %s. Transaction %s", res.Amount, res.Asset, p.StealthAddress, to, p.Chain, txText(res.TxLink, res.TxHash)))
		}
		return res, nil
	})
}

// withdrawResult is the detail of the withdrawal req the chain answered
// with tx.
func withdrawResult(env *Env, req PaymentRequest, tx chains.TxResult) *WithdrawResult {
	return &WithdrawResult{TxHash: tx.TxHash, TxLink: txLink(env, req.Chain(), tx), Chain: req.Chain(), From: req.From(), To: req.Recipient().Address,
		Asset: req.Asset().Symbol, Amount: req.AmountText()}
}

// exceeds reports whether decimal a > decimal b (b unparseable: false,
// the chain decides).
func exceeds(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	if !ok1 || !ok2 || b == "" {
		return false
	}
	return x.Cmp(y) > 0
}

// WithdrawAllResult is the detail of withdraw_all.
type WithdrawAllResult struct {
	To        string           `json:"to"`
	Count     int              `json:"count"`
	Withdrawn []WithdrawResult `json:"withdrawn"`
	Failed    []WithdrawFailed `json:"failed,omitempty"`
	// Pending lists the withdrawals on their way whose outcome is not
	// known yet: signed and recorded; the user is told when they settle.
	Pending []WithdrawResult `json:"pending,omitempty"`
	// Warning says that the payments are now linked on chain.
	Warning string `json:"warning,omitempty"`
}

// WithdrawFailed is one payment withdraw_all could not move.
type WithdrawFailed struct {
	Chain chains.ID `json:"chain"`
	From  string    `json:"from"`
	Error string    `json:"error"`
}

var withdrawAllSpec = spec{
	{name: "to", required: true, maxLen: 64, example: "0x…",
		desc: "Plain address to send everything to: 0x… withdraws the EVM payments, G… the stellar ones, base58 the solana ones. The user's message must contain it."},
	{name: "chain", enum: chainEnum(),
		desc: "Only this chain's payments. Default: every chain of the address's kind."},
}

func withdrawAll() Tool {
	return withArgs(Tool{
		Name: "withdraw_all",
		Description: "Withdraw every received, not yet withdrawn stealth payment on the chain(s) of the given address to that address. " +
			"Warn the user that this links those payments together. Only when the user asked in this message, with the address written in it.",
		Payment: true,
	}, withdrawAllSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		toArg := strings.TrimSpace(a.str("to"))
		fam, ok := addressFamily(toArg)
		if !ok {
			return nil, fmt.Errorf("%w %q: give an EVM (0x…), Stellar (G…) or Solana (base58) address", chains.ErrInvalidAddress, clip(toArg, 64))
		}
		var scope []chains.ID
		if a.has("chain") {
			c, err := agentChain(env, a.str("chain"))
			if err != nil {
				return nil, err
			}
			if c.Family() != fam {
				return nil, fmt.Errorf("%w: %s is a %s address but chain %s is %s", chains.ErrInvalidAddress, clip(toArg, 64), fam, c, c.Family())
			}
			scope = []chains.ID{c}
		} else {
			for _, c := range env.Agent.Chains {
				if c.Family() == fam {
					scope = append(scope, c)
				}
			}
			if len(scope) == 0 {
				return nil, fmt.Errorf("%w: %s is a %s address but this agent is on %s", ErrInvalidArgs, clip(toArg, 64), fam, chainList(env.Agent.Chains))
			}
		}
		to, err := ParseAddress(scope[0], toArg)
		if err != nil {
			return nil, err
		}
		ps, err := received(ctx, env, scope)
		if err != nil {
			return nil, err
		}
		open := unwithdrawn(ps)
		if len(open) == 0 {
			return nil, fmt.Errorf("%w: no unwithdrawn payments on %s (run scan_payments to look for new ones)", ErrInvalidArgs, chainList(scope))
		}
		if err := requireAddressStated(env, "withdraw_all", toArg); err != nil {
			return nil, err
		}
		sort.SliceStable(open, func(i, j int) bool { return open[i].ReceivedAt.Before(open[j].ReceivedAt) })
		res := &WithdrawAllResult{To: to, Withdrawn: []WithdrawResult{}}
		for _, p := range open {
			// One key per payment, derived from the call's key: a
			// retried call repeats exactly the same withdrawals.
			req, err := bind(ctx, env, withdrawal("withdraw_all", p, paymentAsset(p), chains.Amount{}, true, to, env.IdempotencyKey+"/"+string(p.Chain)+"/"+p.StealthAddress, env.Source))
			key := req.IdempotencyKey()
			var tx chains.TxResult
			if err == nil {
				tx, err = env.Chains.Withdraw(ctx, req)
			}
			if err != nil && outcomeUnknown(err) {
				pr := pendingResult(ctx, env, err, req.AmountText(), req.Asset().Symbol, p.Chain, to, key)
				res.Pending = append(res.Pending, WithdrawResult{PaymentID: pr.PaymentID, Status: StatusPending, TxHash: pr.TxHash, TxLink: pr.TxLink,
					Chain: p.Chain, From: p.StealthAddress, To: to, Asset: req.Asset().Symbol, Amount: req.AmountText(), Message: pr.Message})
				continue
			}
			if err != nil {
				res.Failed = append(res.Failed, WithdrawFailed{Chain: p.Chain, From: p.StealthAddress, Error: chainErr("withdrawing", p.Chain, err).Error()})
				continue
			}
			w := *withdrawResult(env, req, tx)
			w.PaymentID, w.Status = recordStatus(ctx, env, p.Chain, key)
			if err := env.Payments.MarkWithdrawn(ctx, Withdrawal{Chain: p.Chain, StealthAddress: p.StealthAddress, To: to, TxHash: tx.TxHash}); err != nil {
				res.Failed = append(res.Failed, WithdrawFailed{Chain: p.Chain, From: p.StealthAddress, Error: fmt.Sprintf("sent (%s) but recording it failed: %v", txText(w.TxLink, w.TxHash), err)})
			}
			res.Withdrawn = append(res.Withdrawn, w)
			notify(ctx, env, "withdrawal", fmt.Sprintf("Withdrew %s", p.Asset),
				fmt.Sprintf("Withdrew everything (%s %s) from %s to %s on %s. Transaction %s", p.Balance, p.Asset, p.StealthAddress, to, p.Chain, txText(w.TxLink, w.TxHash)))
		}
		res.Count = len(res.Withdrawn)
		if res.Count == 0 && len(res.Pending) > 0 {
			return res, nil
		}
		if res.Count == 0 {
			return nil, fmt.Errorf("no payment could be withdrawn: %s", res.Failed[0].Error)
		}
		if res.Count > 1 {
			res.Warning = fmt.Sprintf("these %d payments now all went to %s, which links them to each other on chain", res.Count, to)
		}
		return res, nil
	})
}
