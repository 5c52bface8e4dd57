package tools

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
)

// payment_history answers the user's questions about what the agent paid
// ("what did I pay last week?", "did the payment to alice go through?",
// "any pending payments?") from the payment records (agent/state
// Outgoing), never from memory or the conversation: the record is the one
// place that knows whether money left. It reads; nothing moves.

// PaymentWalker is implemented by an OutgoingPayments store that can walk
// its records (agent/state Outgoing): payment_history reads through it.
type PaymentWalker interface {
	// Walk calls fn with the agent's records, newest first, until fn
	// answers false.
	Walk(ctx context.Context, fn func(OutgoingPayment) bool) error
}

// Bounds of payment_history.
const (
	// DefaultHistory is how many payments payment_history lists when the
	// call does not say.
	DefaultHistory = 10
	// MaxHistory caps the payments listed in one answer.
	MaxHistory = 50
	// historyScan caps the records one call reads (totals and counts
	// cover them; Scanned says when the cap was reached).
	historyScan = 5000
)

// Statuses payment_history filters by: the record's five, and "open"
// (pending or broadcast: on its way).
var historyStatuses = []string{"open", "pending", "broadcast", "confirmed", "failed", "refused"}

var historySpec = spec{
	{name: "payment_id", maxLen: 36, example: "0192f3a4", desc: "One payment by its id, or a unique prefix of at least 4 characters; the other arguments are then not used."},
	{name: "recipient", maxLen: 300, example: "alice", desc: "Only payments to this recipient: a Veil name (alice or alice.veil), a meta-address or a plain address."},
	{name: "status", enum: historyStatuses, desc: "Only payments in this status: open (pending or broadcast: on its way, do not send it again), pending, broadcast, confirmed, failed (signed, did not go through) or refused (nothing was signed)."},
	{name: "chain", enum: chainEnum(), desc: "Only payments on this chain."},
	{name: "asset", maxLen: 10, example: "USDC", desc: "Only payments of this asset (symbol)."},
	{name: "since", maxLen: 40, example: "7d", desc: "Only payments made at or after this: a date (YYYY-MM-DD, UTC, from its start), an RFC 3339 time, or a span back from now: a whole number and m, h, d or w (\"24h\", \"7d\", \"4w\")."},
	{name: "until", maxLen: 40, example: "2027-01-31", desc: "Only payments made up to this: a date (YYYY-MM-DD, UTC, through its end) or an RFC 3339 time."},
	{name: "limit", kind: kInt, min: 1, max: MaxHistory, desc: "How many payments to list, newest first (default 10). Counts and totals cover every match, not only those listed."},
}

// HistoryPayment is one payment as payment_history shows it: the record
// without its idempotency key (the sender's business, not the reader's).
type HistoryPayment struct {
	ID            string           `json:"id"`
	Kind          PaymentKind      `json:"kind"`
	Chain         chains.ID        `json:"chain"`
	Asset         string           `json:"asset"`
	Amount        string           `json:"amount"`
	All           bool             `json:"all,omitempty"`
	Recipient     PaymentRecipient `json:"recipient"`
	Status        PaymentStatus    `json:"status"`
	TxHash        string           `json:"txHash,omitempty"`
	TxLink        string           `json:"txLink,omitempty"`
	Confirmations uint64           `json:"confirmations,omitempty"`
	Reason        string           `json:"reason,omitempty"`
	CreatedAt     time.Time        `json:"createdAt"`
	SettledAt     *time.Time       `json:"settledAt,omitempty"`
}

// HistoryTotal is what left (confirmed) and what is on its way (open) in
// one asset on one chain among the matching payments; failed and refused
// payments moved nothing and are not in it.
type HistoryTotal struct {
	Chain     chains.ID `json:"chain"`
	Asset     string    `json:"asset"`
	Confirmed string    `json:"confirmed"`
	Open      string    `json:"open"`
	Count     int       `json:"count"`
}

// PaymentHistory is the detail of payment_history.
type PaymentHistory struct {
	// Matched counts every matching payment; Open, Confirmed, Failed and
	// Refused split it by status.
	Matched   int `json:"matched"`
	Open      int `json:"open"`
	Confirmed int `json:"confirmed"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
	// Totals are by chain and asset, largest count first.
	Totals []HistoryTotal `json:"totals"`
	// Payments are the newest matching ones, at most the call's limit.
	Payments []HistoryPayment `json:"payments"`
	// Since and Until echo the time window read, when there was one.
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	// Partial: more records than one call reads; counts and totals cover
	// the newest ones only.
	Partial bool `json:"partial,omitempty"`
}

var paymentWalker = service{"no payment records", func(env *Env) bool {
	_, ok := env.Outgoing.(PaymentWalker)
	return !ok
}}

func paymentHistory() Tool {
	return withArgs(Tool{
		Name:     "payment_history",
		ReadOnly: true,
		Description: "Answer questions about the payments this agent made (\"what did I pay last week?\", \"did the payment to alice go through?\", " +
			"\"any pending payments?\", \"how much did I send on base?\") from its payment records, newest first: each payment's status " +
			"(open: on its way, do not send it again; confirmed; failed; refused: nothing was signed), amount, asset, recipient, " +
			"transaction and time, with counts and totals by asset. Reads only; never pays.",
		needs: []service{paymentWalker},
	}, historySpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		q, err := readHistoryQuery(env, a)
		if err != nil {
			return nil, err
		}
		return q.run(ctx, env)
	})
}

// historyQuery is a payment_history call, checked.
type historyQuery struct {
	id           string
	recipient    string
	status       string
	chain        chains.ID
	asset        string
	since, until time.Time
	limit        int
}

func readHistoryQuery(env *Env, a *args) (historyQuery, error) {
	q := historyQuery{status: a.str("status"), chain: chains.ID(a.str("chain")), limit: a.int("limit", DefaultHistory)}
	if id := strings.ToLower(strings.TrimSpace(a.str("payment_id"))); id != "" {
		if len(id) < 4 || strings.Trim(id, "0123456789abcdef-") != "" {
			return q, argErr("payment_id %q is not a payment id: ids are UUIDs; give the id or at least its first 4 characters (from payment_history)", clip(id, 36))
		}
		q.id = id
		return q, nil
	}
	q.recipient = normalName(a.str("recipient"))
	q.asset = strings.ToUpper(strings.TrimSpace(a.str("asset")))
	now := env.now()
	if s := strings.TrimSpace(a.str("since")); s != "" {
		t, err := historyTime(s, now, false)
		if err != nil {
			return q, argErr("since %q: %v", clip(s, 40), err)
		}
		q.since = t
	}
	if s := strings.TrimSpace(a.str("until")); s != "" {
		t, err := historyTime(s, now, true)
		if err != nil {
			return q, argErr("until %q: %v", clip(s, 40), err)
		}
		q.until = t
	}
	if !q.since.IsZero() && !q.until.IsZero() && q.until.Before(q.since) {
		return q, argErr("until (%s) is before since (%s)", q.until.Format(time.RFC3339), q.since.Format(time.RFC3339))
	}
	return q, nil
}

// historyTime reads a date (its start, or with end its last second), an
// RFC 3339 time, or a span back from now ("7d").
func historyTime(s string, now time.Time, end bool) (time.Time, error) {
	if d, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			return d.Add(24*time.Hour - time.Nanosecond), nil
		}
		return d, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if !end {
		if d, err := parseSpan(s); err == nil {
			return now.Add(-d), nil
		}
	}
	return time.Time{}, fmt.Errorf("give a date (YYYY-MM-DD), an RFC 3339 time or, for since, a span such as 24h or 7d")
}

// parseSpan reads a whole number and a unit m, h, d or w, as
// create_invoice's expires_in, up to ten years.
func parseSpan(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 || i > 5 {
		return 0, fmt.Errorf("not a span")
	}
	n, _ := strconv.Atoi(t[:i])
	per := map[string]time.Duration{"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
		"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
		"w": 7 * 24 * time.Hour, "wk": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour}[strings.TrimSpace(t[i:])]
	if per == 0 || n == 0 || time.Duration(n)*per > 10*365*24*time.Hour {
		return 0, fmt.Errorf("not a span")
	}
	return time.Duration(n) * per, nil
}

// normalName is a recipient as compared: lower case, without the name
// suffix.
func normalName(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), chains.NameSuffix)
}

// to reports whether p went to the recipient r (normalName): its name
// ("alice.veil"; an invoice's "invoice … of alice.veil") or its address.
func (q historyQuery) to(p OutgoingPayment) bool {
	if q.recipient == "" {
		return true
	}
	name := normalName(p.Recipient.Name)
	return name == q.recipient || strings.HasSuffix(name, " of "+q.recipient) ||
		strings.EqualFold(strings.TrimSpace(p.Recipient.Address), q.recipient)
}

func (q historyQuery) match(p OutgoingPayment) bool {
	switch {
	case q.status == "open" && !p.Status.Open(),
		q.status != "" && q.status != "open" && string(p.Status) != q.status,
		q.chain != "" && p.Chain != q.chain,
		q.asset != "" && !strings.EqualFold(p.Asset, q.asset),
		!q.until.IsZero() && p.CreatedAt.After(q.until):
		return false
	}
	return q.to(p)
}

func (q historyQuery) run(ctx context.Context, env *Env) (*PaymentHistory, error) {
	w := env.Outgoing.(PaymentWalker)
	res := &PaymentHistory{Totals: []HistoryTotal{}, Payments: []HistoryPayment{}}
	if !q.since.IsZero() {
		res.Since = &q.since
	}
	if !q.until.IsZero() {
		res.Until = &q.until
	}
	type key struct {
		chain chains.ID
		asset string
	}
	sums := map[key]*[2]*big.Rat{}
	counts := map[key]int{}
	var order []key
	read := 0
	err := w.Walk(ctx, func(p OutgoingPayment) bool {
		if q.id != "" {
			if strings.HasPrefix(strings.ToLower(p.ID), q.id) {
				res.Payments = append(res.Payments, env.historyView(p))
			}
			return len(res.Payments) < 2
		}
		if read++; read > historyScan {
			res.Partial = true
			return false
		}
		// Records are time-ordered (UUIDv7, newest first): past since,
		// every older one is too.
		if !q.since.IsZero() && p.CreatedAt.Before(q.since) {
			return false
		}
		if !q.match(p) {
			return true
		}
		res.Matched++
		switch {
		case p.Status.Open():
			res.Open++
		case p.Status == PaymentConfirmed:
			res.Confirmed++
		case p.Status == PaymentFailed:
			res.Failed++
		case p.Status == PaymentRefused:
			res.Refused++
		}
		if len(res.Payments) < q.limit {
			res.Payments = append(res.Payments, env.historyView(p))
		}
		if p.Status.Open() || p.Status == PaymentConfirmed {
			k := key{p.Chain, strings.ToUpper(p.Asset)}
			s, ok := sums[k]
			if !ok {
				s = &[2]*big.Rat{new(big.Rat), new(big.Rat)}
				sums[k] = s
				order = append(order, k)
			}
			i := 0
			if p.Status.Open() {
				i = 1
			}
			s[i].Add(s[i], p.Amount.Rat())
			counts[k]++
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("reading the payment records: %w", err)
	}
	if q.id != "" {
		switch len(res.Payments) {
		case 0:
			return nil, fmt.Errorf("%w: no payment of this agent has an id starting %q; payment_history without payment_id lists them", ErrNoPaymentRecord, q.id)
		case 2:
			return nil, argErr("several payments have ids starting %q: give more of the id", q.id)
		}
		p := res.Payments[0]
		res.Matched = 1
		switch {
		case p.Status.Open():
			res.Open = 1
		case p.Status == PaymentConfirmed:
			res.Confirmed = 1
		case p.Status == PaymentFailed:
			res.Failed = 1
		case p.Status == PaymentRefused:
			res.Refused = 1
		}
		return res, nil
	}
	for _, k := range order {
		s := sums[k]
		res.Totals = append(res.Totals, HistoryTotal{Chain: k.chain, Asset: k.asset, Confirmed: ratDecimal(s[0]), Open: ratDecimal(s[1]), Count: counts[k]})
	}
	sort.SliceStable(res.Totals, func(i, j int) bool { return res.Totals[i].Count > res.Totals[j].Count })
	return res, nil
}

// historyView is p as payment_history shows it.
func (env *Env) historyView(p OutgoingPayment) HistoryPayment {
	v := HistoryPayment{ID: p.ID, Kind: p.Kind, Chain: p.Chain, Asset: p.Asset, Amount: p.Amount.String(), All: p.All,
		Recipient: p.Recipient, Status: p.Status, TxHash: p.TxHash, Confirmations: p.Confirmations, Reason: p.Reason,
		CreatedAt: p.CreatedAt, SettledAt: p.SettledAt}
	if p.TxHash != "" && env.Chains != nil {
		v.TxLink = env.Chains.TxLink(p.Chain, p.TxHash)
	}
	return v
}
