package tools

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/client"
)

// callID derives a stable UUID from the call's idempotency key, so a
// retried call creates the same record instead of a second one ("" when the
// call has no key).
func callID(env *Env, tool string) string {
	if env.IdempotencyKey == "" {
		return ""
	}
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("veil/tools/"+tool+"/"+env.Agent.ID+"/"+env.IdempotencyKey)).String()
}

// callKey is the idempotency key of a call for a store that keeps its own
// key → id record ("" when the call has no key).
func callKey(env *Env, tool string) string {
	if env.IdempotencyKey == "" {
		return ""
	}
	return tool + "/" + env.IdempotencyKey
}

// MaxMemoLen caps an invoice memo (characters).
const MaxMemoLen = 280

var invoiceSpec = spec{
	{name: "amount", required: true, maxLen: MaxAmountLen, example: "25", desc: "Amount to request, a decimal string in whole units of the asset, e.g. \"25\"."},
	{name: "memo", required: true, maxLen: MaxMemoLen, example: "logo work", desc: "What the invoice is for (shown to the payer)."},
	pAsset,
	{name: "chain", enum: chainEnum(), desc: "Chain to be paid on. Default: chosen by asset, else the agent's default chain."},
	{name: "expires_in", maxLen: 32, example: "7d", desc: "Optional: how long the invoice can be paid, a number and a unit: m (minutes), h (hours), d (days) or w (weeks), e.g. \"30m\", \"24h\", \"7d\"; 1 minute to 365 days. Default: never expires."},
}

func createInvoice() Tool {
	return withArgs(Tool{
		Name: "create_invoice",
		Description: "Create an invoice (payment request) with its own one-time stealth address. Returns the invoice with id and " +
			"paymentLink, a page the payer opens to pay.",
		needs: []service{invoiceStore},
	}, invoiceSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		sp, err := readSpend(env, a, nil)
		if err != nil {
			return nil, err
		}
		memo := strings.TrimSpace(a.str("memo"))
		if memo == "" {
			return nil, argErr("memo is empty: say what the invoice is for")
		}
		if err := checkInvoiceMinimum(env, sp.chain, sp.asset, sp.amount); err != nil {
			return nil, err
		}
		// The key, not the id, carries idempotency: invoice ids are
		// public (pay links) and must not be derivable from the agent,
		// the message or the arguments.
		want := Invoice{Invoice: client.Invoice{Amount: sp.amount.String(), Asset: sp.asset.Symbol, Memo: memo}, Chain: sp.chain}
		if s := a.str("expires_in"); s != "" {
			d, err := ParseExpiry(s)
			if err != nil {
				return nil, err
			}
			at := env.now().Add(d).UTC()
			want.ExpiresAt = &at
		}
		inv, err := env.Invoices.Create(ctx, want, callKey(env, "create_invoice"))
		if err != nil {
			return nil, fmt.Errorf("creating the invoice: %w", err)
		}
		return &inv, nil
	})
}

// InvoiceList is the detail of check_invoices.
type InvoiceList struct {
	Count   int `json:"count"`
	Pending int `json:"pending"`
	Paid    int `json:"paid"`
	// Status echoes the call's status filter ("" for none): Invoices then
	// holds only those; the counts are of every invoice.
	Status string `json:"status,omitempty"`
	// Invoices are the newest ones, at most 20.
	Invoices []Invoice `json:"invoices"`
}

// invoiceStatuses are check_invoices's filters: open (unpaid and can
// still be paid), paid, expired (unpaid, past its expiry, or cancelled),
// cancelled.
var invoiceStatuses = []string{"open", "paid", "expired", "cancelled"}

var checkInvoicesSpec = spec{
	{name: "status", enum: invoiceStatuses, desc: "Only invoices that are open (unpaid and can still be paid), paid, expired (unpaid and past their expiry, cancelled ones included) or cancelled. Omit for all."},
}

// invoiceIn says whether inv is in the check_invoices status filter.
func invoiceIn(inv Invoice, status string, now time.Time) bool {
	switch status {
	case "open":
		return inv.Status == "pending" && !inv.Expired(now)
	case "paid":
		return inv.Status == "paid"
	case "expired":
		return inv.Status != "paid" && inv.Expired(now)
	case "cancelled":
		return inv.CancelledAt != nil
	}
	return true
}

func checkInvoices() Tool {
	return withArgs(Tool{
		Name:        "check_invoices",
		ReadOnly:    true,
		Description: "List this agent's invoices (newest first, at most 20) with how many are pending and paid; status narrows the list (e.g. open: \"which invoices are unpaid?\").",
		needs:       []service{invoiceStore},
	}, checkInvoicesSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		all, err := env.Invoices.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing invoices: %w", err)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) })
		res := &InvoiceList{Count: len(all), Status: a.str("status"), Invoices: []Invoice{}}
		now := env.now()
		kept := all[:0:0]
		for _, inv := range all {
			switch inv.Status {
			case "paid":
				res.Paid++
			case "pending":
				res.Pending++
			}
			if invoiceIn(inv, res.Status, now) {
				kept = append(kept, inv)
			}
		}
		all = kept
		if len(all) > maxListed {
			all = all[:maxListed]
		}
		res.Invoices = append(res.Invoices, all...)
		return res, nil
	})
}

// Intervals of a schedule (docs/schedules.md): daily, weekly, monthly,
// hourly, every-N-hours (N from 2 to 23), or a weekday (monday … sunday:
// weekly on that day).
const (
	Hourly  = "hourly"
	Daily   = "daily"
	Weekly  = "weekly"
	Monthly = "monthly"
)

// IntervalForms describes the accepted intervals, for schemas and errors.
const IntervalForms = "daily, weekly, monthly, hourly, every-N-hours (N 2-23, e.g. every-6-hours) or a weekday (monday … sunday: weekly on that day)"

var weekdayNames = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "tues": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "thur": time.Thursday, "thurs": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

var reEveryHours = regexp.MustCompile(`^(?:every[ -]?)?(\d{1,2})[ -]?(?:h|hr|hrs|hour|hours)$`)

// NormalizeInterval returns the canonical form of an interval as people
// write it ("Weekly", "every friday", "Fridays", "every 6 hours", "6h",
// "every hour"), or ErrInvalidArgs naming the accepted forms.
func NormalizeInterval(s string) (string, error) {
	w := strings.Join(strings.Fields(strings.ToLower(strings.TrimSpace(s))), " ")
	w = strings.TrimPrefix(w, "every ")
	w = strings.TrimPrefix(w, "each ")
	switch w {
	case Daily, "day", "every-day":
		return Daily, nil
	case Weekly, "week":
		return Weekly, nil
	case Monthly, "month":
		return Monthly, nil
	case Hourly, "hour", "1 hour", "every-1-hours", "1h":
		return Hourly, nil
	}
	if day, ok := weekdayNames[strings.TrimSuffix(w, "s")]; ok {
		return strings.ToLower(day.String()), nil
	}
	if day, ok := weekdayNames[w]; ok {
		return strings.ToLower(day.String()), nil
	}
	if m := reEveryHours.FindStringSubmatch(strings.ReplaceAll(w, "every-", "every ")); m != nil {
		n, _ := strconv.Atoi(m[1])
		switch {
		case n == 1:
			return Hourly, nil
		case n == 24:
			return Daily, nil
		case n >= 2 && n <= 23:
			return fmt.Sprintf("every-%d-hours", n), nil
		}
	}
	return "", fmt.Errorf("%w: interval must be %s; got %q", ErrInvalidArgs, IntervalForms, clip(s, 40))
}

// NextRun is the first slot of a schedule anchored at anchor (its creation
// time) that is strictly after t. Slots are anchor + k intervals, k ≥ 1:
// hourly, every-N-hours, daily and weekly add fixed durations (UTC, no
// DST); monthly is the anchor's day of month, clamped to the month's last
// day (Jan 31 → Feb 28 or 29 → Mar 31), at the anchor's time of day; a
// weekday is that day of each week at the anchor's time of day, the first
// one strictly after the anchor (made on a Friday, "friday" first runs a
// week later).
func NextRun(anchor, t time.Time, interval string) (time.Time, error) {
	anchor = anchor.UTC()
	iv, err := NormalizeInterval(interval)
	if err != nil || iv != interval {
		return time.Time{}, fmt.Errorf("%w: interval must be %s; got %q", ErrInvalidArgs, IntervalForms, clip(interval, 40))
	}
	fixed := func(d time.Duration) time.Time {
		if t.Before(anchor) {
			return anchor.Add(d)
		}
		k := int64(t.Sub(anchor)/d) + 1
		return anchor.Add(time.Duration(k) * d)
	}
	switch {
	case iv == Hourly:
		return fixed(time.Hour), nil
	case iv == Daily:
		return fixed(24 * time.Hour), nil
	case iv == Weekly:
		return fixed(7 * 24 * time.Hour), nil
	case strings.HasPrefix(iv, "every-"):
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(iv, "every-"), "-hours"))
		return fixed(time.Duration(n) * time.Hour), nil
	case iv == Monthly:
		t = t.UTC()
		k := (t.Year()-anchor.Year())*12 + int(t.Month()-anchor.Month())
		if k < 1 {
			k = 1
		}
		for {
			s := addMonths(anchor, k)
			if s.After(t) {
				return s, nil
			}
			k++
		}
	}
	// A weekday: anchor the weekly slots one week before the first one.
	day := weekdayNames[iv]
	ahead := (int(day) - int(anchor.Weekday()) + 7) % 7
	if ahead == 0 {
		ahead = 7
	}
	week := 7 * 24 * time.Hour
	first := anchor.Add(time.Duration(ahead) * 24 * time.Hour)
	if t.Before(first) {
		return first, nil
	}
	k := int64(t.Sub(first)/week) + 1
	return first.Add(time.Duration(k) * week), nil
}

// addMonths is anchor's day-of-month k months later, clamped.
func addMonths(anchor time.Time, k int) time.Time {
	y, m := anchor.Year(), int(anchor.Month())-1+k
	y += m / 12
	m %= 12
	first := time.Date(y, time.Month(m+1), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	day := min(anchor.Day(), last)
	return time.Date(y, time.Month(m+1), day, anchor.Hour(), anchor.Minute(), anchor.Second(), anchor.Nanosecond(), time.UTC)
}

// parseEndDate reads an ISO date (2027-03-01: through the end of that UTC
// day) or an RFC 3339 timestamp.
func parseEndDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if d, err := time.Parse("2006-01-02", s); err == nil {
		return d.Add(24*time.Hour - time.Second), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, argErr("end_date must be an ISO date such as \"2027-03-01\" (or an RFC 3339 time); got %q", clip(s, 40))
}

var scheduleSpec = spec{
	pRecipient, pAmount, pAsset,
	{name: "interval", required: true, maxLen: 40, example: "weekly",
		desc: "How often to pay: " + IntervalForms + ". The first payment is one interval from now (for a weekday: the next such day)."},
	{name: "end_date", maxLen: 40, example: "2027-03-01", desc: "Last day (ISO date, UTC) on which a payment may run; omit for no end."},
	pPayChain,
}

func schedulePayment() Tool {
	return withArgs(Tool{
		Name: "schedule_payment",
		Description: "Set up a recurring stealth payment (hourly, every N hours, daily, weekly, on a weekday, or monthly) to a Veil name or meta-address. The first payment " +
			"runs one interval from now. Only when the user asked in this message, with the amount written in it.",
		MovesValue: true,
		needs:      []service{scheduleStore},
	}, scheduleSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		rc, req, err := readPayment(ctx, env, "schedule_payment", a.str("recipient"), a, true)
		if err != nil {
			return nil, err
		}
		now := env.now()
		interval, err := NormalizeInterval(a.str("interval"))
		if err != nil {
			return nil, err
		}
		first, err := NextRun(now, now, interval)
		if err != nil {
			return nil, err
		}
		var end *time.Time
		if a.has("end_date") {
			e, err := parseEndDate(a.str("end_date"))
			if err != nil {
				return nil, err
			}
			if !e.After(now) {
				return nil, argErr("end_date %s is not in the future", a.str("end_date"))
			}
			if e.Before(first) {
				return nil, argErr("end_date %s is before the first payment (%s): the schedule would never pay", a.str("end_date"), first.Format(time.RFC3339))
			}
			end = &e
		}
		if err := requireAmountStated(env, "schedule_payment", a.str("amount")); err != nil {
			return nil, err
		}
		who := rc.name
		if who == "" {
			who = rc.metaAddr
		}
		s, err := env.Schedules.Create(ctx, Schedule{ID: callID(env, "schedule_payment"), Recipient: who, Amount: req.Amount().String(), Asset: req.Asset().Symbol, Chain: req.Chain(), Interval: interval, EndDate: end})
		if err != nil {
			return nil, fmt.Errorf("creating the schedule: %w", err)
		}
		return &s, nil
	})
}

func (env *Env) now() time.Time {
	if env.Now != nil {
		return env.Now().UTC()
	}
	return time.Now().UTC()
}

// ScheduleList is the detail of list_schedules.
type ScheduleList struct {
	Count     int        `json:"count"`
	Active    int        `json:"active"`
	Paused    int        `json:"paused"`
	Cancelled int        `json:"cancelled"`
	Schedules []Schedule `json:"schedules"`
}

func listSchedules() Tool {
	return withArgs(Tool{
		Name:        "list_schedules",
		ReadOnly:    true,
		Description: "List this agent's recurring payments: active and paused ones first by next run, then cancelled ones.",
		needs:       []service{scheduleStore},
	}, noArgs, func(ctx context.Context, env *Env, _ *args) (any, error) {
		all, err := env.Schedules.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing schedules: %w", err)
		}
		rank := func(s string) int {
			switch s {
			case "active":
				return 0
			case "paused":
				return 1
			}
			return 2
		}
		sort.SliceStable(all, func(i, j int) bool {
			if ri, rj := rank(all[i].Status), rank(all[j].Status); ri != rj {
				return ri < rj
			}
			return all[i].NextRun.Before(all[j].NextRun)
		})
		res := &ScheduleList{Count: len(all), Schedules: append([]Schedule{}, all...)}
		for _, s := range all {
			switch s.Status {
			case "active":
				res.Active++
			case "paused":
				res.Paused++
			default:
				res.Cancelled++
			}
		}
		return res, nil
	})
}

var manageSpec = spec{
	{name: "schedule_id", maxLen: 36, example: "3f2a", desc: "The schedule's id, or a unique prefix of at least 4 characters. Omit it to name the schedule by recipient, amount, asset and/or interval instead."},
	{name: "action", required: true, enum: []string{"pause", "resume", "cancel"}, desc: "pause (active → paused), resume (paused → active), cancel (final)."},
	{name: "recipient", maxLen: 300, example: "bob", desc: "Without schedule_id: the schedule paying this recipient (name or meta-address)."},
	{name: "amount", maxLen: MaxAmountLen, example: "5", desc: "Without schedule_id: the schedule paying this amount each time."},
	{name: "asset", maxLen: 10, example: "USDC", desc: "Without schedule_id: the schedule paying this asset."},
	{name: "interval", maxLen: 40, example: "weekly", desc: "Without schedule_id: the schedule with this interval (" + IntervalForms + ")."},
}

func manageSchedule() Tool {
	return withArgs(Tool{
		Name: "manage_schedule",
		Description: "Pause, resume or cancel a recurring payment by its id (or a unique prefix of at least 4 characters), or by " +
			"what the user called it (recipient, amount, asset, interval: \"the weekly 5 USDC payment to bob\"). When several " +
			"schedules match, nothing changes and the error lists them: ask the user which one. Cancelling is final.",
		needs: []service{scheduleStore},
	}, manageSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		id := strings.ToLower(strings.TrimSpace(a.str("schedule_id")))
		if id == "" {
			var err error
			if id, err = matchSchedule(ctx, env, a); err != nil {
				return nil, err
			}
		}
		if len(id) < 4 {
			return nil, argErr("schedule_id %q is too short: give at least 4 characters of the id (see list_schedules)", id)
		}
		for _, r := range id {
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == '-') {
				return nil, argErr("schedule_id %q is not a schedule id: ids are hexadecimal UUIDs (see list_schedules)", clip(id, 36))
			}
		}
		s, err := env.Schedules.Transition(ctx, id, a.str("action"))
		if err != nil {
			return nil, err
		}
		return &s, nil
	})
}

// matchSchedule finds the one schedule the description fits, among those
// the action can apply to (pause: active; resume: paused; cancel: not yet
// cancelled). None or several is an error the model can act on.
func matchSchedule(ctx context.Context, env *Env, a *args) (string, error) {
	recipient := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a.str("recipient"))), ".veil")
	amount, asset := strings.TrimSpace(a.str("amount")), strings.ToUpper(strings.TrimSpace(a.str("asset")))
	interval := ""
	if a.has("interval") {
		iv, err := NormalizeInterval(a.str("interval"))
		if err != nil {
			return "", err
		}
		interval = iv
	}
	if recipient == "" && amount == "" && asset == "" && interval == "" {
		return "", argErr("give schedule_id, or describe the schedule by recipient, amount, asset or interval (see list_schedules)")
	}
	all, err := env.Schedules.List(ctx)
	if err != nil {
		return "", fmt.Errorf("listing schedules: %w", err)
	}
	want := map[string]string{"pause": "active", "resume": "paused"}[a.str("action")]
	var hits []Schedule
	for _, sc := range all {
		if sc.Status == "cancelled" || want != "" && sc.Status != want {
			continue
		}
		if recipient != "" && strings.TrimSuffix(strings.ToLower(sc.Recipient), ".veil") != recipient {
			continue
		}
		if amount != "" && !sameAmount(sc.Amount, amount) || asset != "" && sc.Asset != asset || interval != "" && sc.Interval != interval {
			continue
		}
		hits = append(hits, sc)
	}
	switch len(hits) {
	case 1:
		return hits[0].ID, nil
	case 0:
		return "", fmt.Errorf("%w: no %sschedule matches that description; list_schedules shows them all", ErrUnknownSchedule, orEmpty(want))
	}
	var lines []string
	for _, sc := range hits {
		lines = append(lines, fmt.Sprintf("%s (%s %s to %s, %s, %s)", sc.ID[:min(8, len(sc.ID))], sc.Amount, sc.Asset, sc.Recipient, sc.Interval, sc.Status))
	}
	return "", fmt.Errorf("%w: %d schedules match: %s. Nothing was changed; ask the user which one (by id, amount or interval)", ErrAmbiguousSchedule, len(hits), strings.Join(lines, "; "))
}

func orEmpty(status string) string {
	if status == "" {
		return ""
	}
	return status + " "
}

// sameAmount compares decimals numerically ("5" and "5.00").
func sameAmount(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

var (
	// ErrUnknownSchedule: no schedule fits the description.
	ErrUnknownSchedule = errors.New("no such schedule")
	// ErrAmbiguousSchedule: several schedules fit; nothing was changed.
	ErrAmbiguousSchedule = errors.New("several schedules match")
)

// Memory types.
var memoryTypes = []string{"preference", "fact", "contact", "instruction"}

// MaxMemoryLen caps a memory's content (characters).
const MaxMemoryLen = 500

var memorySpec = spec{
	{name: "content", required: true, maxLen: MaxMemoryLen, multiline: true, example: "prefers USDC", desc: "What to remember, in one or two sentences (at most 500 characters)."},
	{name: "type", required: true, enum: memoryTypes, desc: "preference (how the user likes things), fact (about the user or their business), contact (a person or agent and how to pay them), instruction (a standing rule for this agent)."},
	{name: "importance", kind: kInt, min: 1, max: 5, desc: "1 (trivia) to 5 (critical); default 3."},
}

func saveMemory() Tool {
	return withArgs(Tool{
		Name:        "save_memory",
		Description: "Remember something across conversations (a preference, fact, contact or standing instruction) when the user asks or clearly wants it kept.",
		needs:       []service{memoryStore},
	}, memorySpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		content := strings.TrimSpace(a.str("content"))
		if content == "" {
			return nil, argErr("content is empty: say what to remember")
		}
		m, err := env.Memories.Save(ctx, Memory{ID: callID(env, "save_memory"), Content: content, Type: a.str("type"), Importance: a.int("importance", 3)})
		if err != nil {
			return nil, fmt.Errorf("saving the memory: %w", err)
		}
		return &m, nil
	})
}

// Bounds of create_invoice's expires_in.
const (
	MinExpiry = time.Minute
	MaxExpiry = 365 * 24 * time.Hour
)

// ParseExpiry reads an invoice lifetime: a whole number and a unit, with
// or without a space, the unit short or spelled out ("30m", "2 h", "7d",
// "1 week", "90 minutes"), between MinExpiry and MaxExpiry.
func ParseExpiry(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	unit := strings.TrimSpace(t[i:])
	bad := argErr("expires_in %q: give a whole number and a unit m, h, d or w, e.g. \"30m\", \"24h\", \"7d\"", clip(s, 32))
	if i == 0 || i > 6 {
		return 0, bad
	}
	n, err := strconv.Atoi(t[:i])
	if err != nil {
		return 0, bad
	}
	var per time.Duration
	switch unit {
	case "m", "min", "mins", "minute", "minutes":
		per = time.Minute
	case "h", "hr", "hrs", "hour", "hours":
		per = time.Hour
	case "d", "day", "days":
		per = 24 * time.Hour
	case "w", "wk", "wks", "week", "weeks":
		per = 7 * 24 * time.Hour
	default:
		return 0, bad
	}
	d := time.Duration(n) * per
	if d < MinExpiry || d > MaxExpiry {
		return 0, argErr("expires_in %q: an invoice can expire after 1 minute to 365 days", clip(s, 32))
	}
	return d, nil
}
