package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/veilhq/veil/actors/internal/background"
	"github.com/veilhq/veil/internal/defaults"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
)

// Headers of a delivery.
const (
	HeaderEventID   = "Veil-Event-Id"
	HeaderSignature = "Veil-Signature"
)

// Retry policy (docs/webhooks.md): the n-th retry waits a random time in
// [d/2, d] with d = BaseBackoff·2^(n-1), capped at MaxBackoff; a delivery
// not delivered MaxAge after its event is marked failed.
const (
	BaseBackoff = 10 * time.Second
	MaxBackoff  = time.Hour
	MaxAge      = 24 * time.Hour
)

// Retention is how long a delivered or failed delivery stays readable in
// GET /webhooks/:id/deliveries; the deliverer removes older ones once an
// hour.
const Retention = 30 * 24 * time.Hour

// FailBeforeSend is the failpoint after a delivery is committed (fanned
// out from the outbox) and before it is sent.
const FailBeforeSend = "webhook.before-send"

// Outcomes reported to Metrics.
const (
	OutcomeDelivered = "delivered"
	OutcomeRetry     = "retry"
	OutcomeFailed    = "failed"
)

// Sign returns the Veil-Signature header value of body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<body>")>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Metrics is what the deliverer reports (runtime/prom implements it).
type Metrics interface {
	WebhookAttempt(outcome string, took time.Duration)
	WebhookBacklog(n int)
}

type nopMetrics struct{}

func (nopMetrics) WebhookAttempt(string, time.Duration) {}
func (nopMetrics) WebhookBacklog(int)                   {}

// Options configure a Deliverer. Store is required.
type Options struct {
	Store persistence.Store
	// Client sends the requests; nil means NewClient(AllowPrivate, Timeout).
	Client       *http.Client
	AllowPrivate bool
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// Now is the clock (default time.Now); tests drive a fake one and call
	// RunOnce themselves.
	Now func() time.Time
	// Jitter returns a number in [0, 1) (default math/rand/v2).
	Jitter func() float64
	// Poll is the background loop's period (default 1s).
	Poll time.Duration
	// Parallel bounds the attempts in flight (default 8).
	Parallel int
	Metrics  Metrics
	Log      *slog.Logger
	// Failpoint, when set, is called at FailBeforeSend (internal/failpoint);
	// an error ends the pass there, as a crash would. Tests only.
	Failpoint failpoint.Hook
}

// Deliverer moves events from the outbox to the webhooks. Run one per
// store (cmd/veild runs it under the "webhooks" lease).
type Deliverer struct {
	opts Options
	pass sync.Mutex
	// trimmed is when old deliveries were last removed (under pass).
	trimmed time.Time
	loop    *background.Loop // runs RunOnce every Poll (Start, Stop)
}

// NewDeliverer fills in the defaults.
func NewDeliverer(opts Options) *Deliverer {
	opts.Timeout = defaults.Positive(opts.Timeout, 10*time.Second)
	if opts.Client == nil {
		opts.Client = NewClient(opts.AllowPrivate, opts.Timeout)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	opts.Poll = defaults.Positive(opts.Poll, time.Second)
	opts.Parallel = defaults.Positive(opts.Parallel, 8)
	if opts.Metrics == nil {
		opts.Metrics = nopMetrics{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Deliverer{opts: opts, loop: background.New()}
}

// Start runs RunOnce every Poll until Stop.
func (d *Deliverer) Start() {
	d.loop.Every(d.opts.Poll, func(ctx context.Context) {
		if _, err := d.RunOnce(ctx); err != nil && ctx.Err() == nil {
			d.opts.Log.Warn("webhook: delivery pass failed; it is tried again", slog.String("err", err.Error()))
		}
	})
}

// Stop ends the loop; an attempt in flight is cancelled and retried later.
func (d *Deliverer) Stop() {
	d.loop.Stop()
}

// Report counts what one RunOnce did.
type Report struct {
	Events    int // outbox events fanned out
	Delivered int
	Retry     int
	Failed    int
	Backlog   int // deliveries still pending after the pass
}

const page = 256

// RunOnce fans the outbox out into deliveries, then attempts every
// delivery that is due.
func (d *Deliverer) RunOnce(ctx context.Context) (Report, error) {
	d.pass.Lock()
	defer d.pass.Unlock()
	var rep Report
	n, err := d.fanOut(ctx)
	rep.Events = n
	if err != nil {
		return rep, err
	}
	if err := d.opts.fail(FailBeforeSend); err != nil {
		return rep, err
	}
	err = d.attemptDue(ctx, &rep)
	d.opts.Metrics.WebhookBacklog(rep.Backlog)
	if err != nil {
		return rep, err
	}
	if now := d.opts.Now(); now.Sub(d.trimmed) >= time.Hour {
		if err := d.trim(ctx, now); err != nil {
			return rep, err
		}
		d.trimmed = now
	}
	return rep, nil
}

// trim removes the delivered and failed deliveries older than Retention,
// oldest first (keys are in event time order), for every webhook.
func (d *Deliverer) trim(ctx context.Context, now time.Time) error {
	st := d.opts.Store
	cutoff := fmt.Sprintf("%020d", now.Add(-Retention).UnixNano())
	hooks, err := st.List(ctx, TableWebhooks, persistence.Query{})
	if err != nil {
		return err
	}
	for _, h := range hooks {
		_, id, _ := strings.Cut(h.Key, "/")
		recs, err := st.List(ctx, TableDeliveries, persistence.Query{Prefix: id + "/", Limit: page})
		if err != nil {
			return err
		}
		var ops []persistence.Op
		for _, rec := range recs {
			if strings.TrimPrefix(rec.Key, id+"/") >= cutoff {
				break
			}
			var del Delivery
			if json.Unmarshal(rec.Value, &del) == nil && del.Status == StatusPending {
				continue
			}
			ops = append(ops, persistence.Delete(TableDeliveries, rec.Key, persistence.AtVersion(rec.Version)))
		}
		if len(ops) == 0 {
			continue
		}
		if _, err := st.Apply(ctx, ops...); err != nil && !errors.Is(err, persistence.ErrConflict) {
			return err
		}
	}
	return nil
}

func (o *Options) fail(name string) error { return o.Failpoint.Hit(name) }

// fanOut turns each outbox event into one delivery per subscribed webhook,
// atomically with removing the event.
func (d *Deliverer) fanOut(ctx context.Context) (int, error) {
	st := d.opts.Store
	done := 0
	for {
		recs, err := st.List(ctx, TableOutbox, persistence.Query{Limit: page})
		if err != nil {
			return done, err
		}
		hooks := map[string][]Webhook{} // by account, for this page
		for _, rec := range recs {
			var ev Event
			if err := json.Unmarshal(rec.Value, &ev); err != nil {
				d.opts.Log.Error("webhook: dropping a corrupt outbox record", slog.String("key", rec.Key), slog.String("err", err.Error()))
				_, _ = st.Apply(ctx, persistence.Delete(TableOutbox, rec.Key, persistence.AtVersion(rec.Version)))
				continue
			}
			ws, ok := hooks[ev.AccountID]
			if !ok {
				if ws, err = NewRegistry(st, nil).List(ctx, ev.AccountID); err != nil {
					return done, err
				}
				hooks[ev.AccountID] = ws
			}
			ops := []persistence.Op{persistence.Delete(TableOutbox, rec.Key, persistence.AtVersion(rec.Version))}
			now := d.opts.Now().UTC()
			for i := range ws {
				if !ws[i].wants(&ev) {
					continue
				}
				_, dops, err := newDelivery(&ws[i], &ev, rec.Key, now)
				if err != nil {
					return done, err
				}
				ops = append(ops, dops...)
			}
			if _, err := st.Apply(ctx, ops...); err != nil && !errors.Is(err, persistence.ErrConflict) {
				// A conflict: another deliverer (a lost lease) fanned it
				// out already; anything else is tried again next pass.
				return done, err
			}
			done++
		}
		if len(recs) < page {
			return done, nil
		}
	}
}

type due struct {
	key     string
	account string
}

// attemptDue sends every pending delivery whose time has come, Parallel at
// once.
func (d *Deliverer) attemptDue(ctx context.Context, rep *Report) error {
	st := d.opts.Store
	now := d.opts.Now().UTC()
	var work []due
	after := ""
	for {
		recs, err := st.List(ctx, TablePending, persistence.Query{After: after, Limit: page})
		if err != nil {
			return err
		}
		for _, r := range recs {
			work = append(work, due{key: r.Key, account: string(r.Value)})
		}
		if len(recs) < page {
			break
		}
		after = recs[len(recs)-1].Key
	}
	var mu sync.Mutex
	sem := make(chan struct{}, d.opts.Parallel)
	var wg sync.WaitGroup
	var firstErr error
	for _, w := range work {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(w due) {
			defer func() { <-sem; wg.Done() }()
			outcome, err := d.attempt(ctx, w, now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if firstErr == nil {
					firstErr = err
				}
				rep.Backlog++
			case outcome == OutcomeDelivered:
				rep.Delivered++
			case outcome == OutcomeFailed:
				rep.Failed++
			case outcome == OutcomeRetry:
				rep.Retry++
				rep.Backlog++
			default: // not due yet
				rep.Backlog++
			}
		}(w)
	}
	wg.Wait()
	return firstErr
}

// attempt sends one delivery if it is due and stores the result. The
// outcome is "" when it was not due (or is gone).
func (d *Deliverer) attempt(ctx context.Context, w due, now time.Time) (string, error) {
	st := d.opts.Store
	rec, err := st.Get(ctx, TableDeliveries, w.key)
	if errors.Is(err, persistence.ErrNotFound) {
		_, err = st.Apply(ctx, persistence.Delete(TablePending, w.key, persistence.Any()))
		return "", err
	}
	if err != nil {
		return "", err
	}
	var del Delivery
	if err := json.Unmarshal(rec.Value, &del); err != nil {
		return "", fmt.Errorf("webhook: decode delivery %s: %w", w.key, err)
	}
	if del.Status != StatusPending {
		_, err = st.Apply(ctx, persistence.Delete(TablePending, w.key, persistence.Any()))
		return "", err
	}
	if del.NextAttemptAt != nil && del.NextAttemptAt.After(now) {
		return "", nil
	}
	hook, err := getHook(ctx, st, w.account, del.WebhookID)
	if errors.Is(err, ErrNotFound) {
		// Deleted meanwhile: Delete removed its deliveries too, unless it
		// raced with the fan-out.
		_, err = st.Apply(ctx, persistence.Delete(TablePending, w.key, persistence.Any()), persistence.Delete(TableDeliveries, w.key, persistence.Any()))
		return "", err
	}
	if err != nil {
		return "", err
	}

	start := time.Now()
	code, sendErr := d.send(ctx, hook, &del, now)
	took := time.Since(start)
	if ctx.Err() != nil {
		return "", ctx.Err() // stopping: not the receiver's fault; try again later
	}
	del.Attempts++
	del.LastStatusCode = code
	del.LastError = ""
	var outcome string
	ops := []persistence.Op{}
	switch {
	case sendErr == nil:
		outcome = OutcomeDelivered
		del.Status, del.NextAttemptAt = StatusDelivered, nil
		t := now
		del.DeliveredAt = &t
	case now.Sub(del.CreatedAt) >= MaxAge:
		outcome = OutcomeFailed
		del.Status, del.NextAttemptAt, del.LastError = StatusFailed, nil, sendErr.Error()
	default:
		outcome = OutcomeRetry
		del.LastError = sendErr.Error()
		next := now.Add(d.backoff(del.Attempts))
		if limit := del.CreatedAt.Add(MaxAge); next.After(limit) {
			next = limit // one last attempt at the end of the window
		}
		del.NextAttemptAt = &next
	}
	raw, err := json.Marshal(del)
	if err != nil {
		return "", err
	}
	ops = append(ops, persistence.Put(TableDeliveries, w.key, raw, persistence.AtVersion(rec.Version)))
	if outcome != OutcomeRetry {
		ops = append(ops, persistence.Delete(TablePending, w.key, persistence.Any()))
	}
	if _, err := st.Apply(ctx, ops...); err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			return "", nil // deleted or updated by someone else meanwhile
		}
		return "", err
	}
	d.opts.Metrics.WebhookAttempt(outcome, took)
	if outcome == OutcomeFailed {
		d.opts.Log.Warn("webhook: delivery failed for good", slog.String("webhook", hook.ID), slog.String("event", del.EventID),
			slog.Int("attempts", del.Attempts), slog.String("err", sendErr.Error()))
	}
	return outcome, nil
}

// backoff is the wait after the n-th failed attempt: exponential with
// jitter in [d/2, d].
func (d *Deliverer) backoff(n int) time.Duration {
	b := BaseBackoff
	for i := 1; i < n && b < MaxBackoff; i++ {
		b *= 2
	}
	if b > MaxBackoff {
		b = MaxBackoff
	}
	return b/2 + time.Duration(d.opts.Jitter()*float64(b/2))
}

// send makes one attempt; nil error means a 2xx answer.
func (d *Deliverer) send(ctx context.Context, hook *Webhook, del *Delivery, now time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(del.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Veil-Webhooks/1")
	req.Header.Set(HeaderEventID, del.EventID)
	req.Header.Set(HeaderSignature, Sign(hook.Secret, now, del.Body))
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return 0, errors.New(describe(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d; only a 2xx counts as delivered", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// describe keeps what the owner can act on of a transport error, without
// the request's URL (it may hold credentials).
func describe(err error) string {
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		msg := err.Error()
		if i := strings.Index(msg, ErrForbiddenAddress.Error()); i >= 0 {
			msg = msg[i:]
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within the timeout"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return "request failed: " + msg
}
