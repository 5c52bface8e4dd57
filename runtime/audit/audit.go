// Package audit keeps the audit trail: one append-only record for every
// state change and every money movement made through the API (and for every
// refused attempt of a revoked, expired or under-scoped key), listed and
// filtered per account, exported as CSV or JSON Lines, and pruned past a
// retention period. It is the only owner of its table.
//
// Nothing here updates a record: Append writes a new key (Absent), and
// the only deletion is Prune's, of records older than the retention.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/persistence"
)

// Table is the audit trail: "<account id>/<record id>" → Record. The
// account comes first so that one account's trail is one range, and the
// record id sorts by time, so the range is in time order.
const Table = "audit"

// Outcomes of a record.
const (
	// OutcomeOK: the request succeeded (2xx).
	OutcomeOK = "ok"
	// OutcomeFailed: the request was answered with an error (4xx, 5xx)
	// after its key was accepted.
	OutcomeFailed = "failed"
	// OutcomeRefused: the key was refused (revoked, expired, or its scope
	// does not reach the route); nothing was done.
	OutcomeRefused = "refused"
)

// Record is one entry of the trail.
type Record struct {
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	AccountID string    `json:"accountId"`
	KeyID     string    `json:"keyId,omitempty"`
	KeyName   string    `json:"keyName,omitempty"`
	RequestID string    `json:"requestId,omitempty"`
	// Source is the client's address as the server saw it.
	Source string `json:"source,omitempty"`
	Method string `json:"method"`
	// Route is the route's pattern ("/agent/{id}/policy"); Path the path.
	Route   string `json:"route"`
	Path    string `json:"path"`
	AgentID string `json:"agentId,omitempty"`
	// Action names what the request does ("policy.set", "key.revoke").
	Action  string `json:"action"`
	Status  int    `json:"status"`
	Outcome string `json:"outcome"`
	// Detail says what changed, or why it was refused.
	Detail string `json:"detail,omitempty"`
	// PaymentIDs are the payments (transaction hashes, invoice and
	// approval ids) the request made or settled.
	PaymentIDs []string `json:"paymentIds,omitempty"`
}

// ErrInvalid reports a bad filter or record.
var ErrInvalid = errors.New("audit: invalid")

// stampLen is the width of the time part of an id: Unix nanoseconds,
// zero-padded, so ids sort by time as text.
const stampLen = 19

func stamp(t time.Time) string {
	n := t.UnixNano()
	if n < 0 {
		n = 0
	}
	s := strconv.FormatInt(n, 10)
	return strings.Repeat("0", stampLen-len(s)) + s
}

func newID(t time.Time) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("audit: read random: %w", err)
	}
	return stamp(t) + "-" + hex.EncodeToString(b[:]), nil
}

// Append writes rec as a new record (its ID and, when zero, its Time are
// set here) and returns it once it is durable.
func Append(ctx context.Context, st persistence.Store, rec Record) (Record, error) {
	rec, op, err := Prepare(rec)
	if err != nil {
		return Record{}, err
	}
	if _, err := st.Apply(ctx, op); err != nil {
		return Record{}, fmt.Errorf("audit: append: %w", err)
	}
	return rec, nil
}

// Prepare gives rec its ID when it has none (and its Time, when zero) and
// returns the
// store operation that appends it, for a writer that puts the record in
// a commit of its own making: a chat turn writes its request's record in
// the same commit as its answer (issue 38), so a chat costs one commit,
// not two, and the record is durable exactly when the answer is. An ID
// kept from an earlier Prepare names the same record: the operation is
// Absent, so of two writers of one request's record only the first
// writes it (a chat turn that the system runs twice makes its own op
// replace the record instead: actors/agent). Append is Prepare and an
// Apply of that operation alone.
func Prepare(rec Record) (Record, persistence.Op, error) {
	if rec.AccountID == "" || strings.Contains(rec.AccountID, "/") {
		return Record{}, persistence.Op{}, fmt.Errorf("%w: record needs an account id", ErrInvalid)
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	rec.Time = rec.Time.UTC()
	if rec.ID == "" {
		id, err := newID(rec.Time)
		if err != nil {
			return Record{}, persistence.Op{}, err
		}
		rec.ID = id
	} else if len(rec.ID) < stampLen || strings.Contains(rec.ID, "/") {
		return Record{}, persistence.Op{}, fmt.Errorf("%w: record id %q is not one Prepare made", ErrInvalid, rec.ID)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return Record{}, persistence.Op{}, err
	}
	return rec, persistence.Put(Table, rec.AccountID+"/"+rec.ID, raw, persistence.Absent()), nil
}

// Filter selects records of one account. Zero fields select everything.
type Filter struct {
	Since, Until time.Time
	AgentID      string
	KeyID        string
	Action       string
	Outcome      string
	// After is the cursor of the previous page: the id of its last
	// record. Pages run newest first.
	After string
	// Limit caps the page (default 100, at most MaxLimit).
	Limit int
}

// MaxLimit caps one page.
const MaxLimit = 1000

// scanCap bounds the records one List reads past the filter, so that a
// filter matching nothing answers in bounded time with a cursor to go on.
const scanCap = 20000

func (f Filter) match(r *Record) bool {
	return (f.AgentID == "" || r.AgentID == f.AgentID) &&
		(f.KeyID == "" || r.KeyID == f.KeyID) &&
		(f.Action == "" || r.Action == f.Action || strings.HasPrefix(r.Action, f.Action+".")) &&
		(f.Outcome == "" || r.Outcome == f.Outcome) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since))
}

// List answers the account's records that f selects, newest first, and
// the cursor of the next page ("" at the end).
func List(ctx context.Context, st persistence.Store, accountID string, f Filter) ([]Record, string, error) {
	if accountID == "" || strings.Contains(accountID, "/") {
		return nil, "", fmt.Errorf("%w: no account", ErrInvalid)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > MaxLimit {
		f.Limit = MaxLimit
	}
	prefix := accountID + "/"
	q := persistence.Query{Prefix: prefix, Reverse: true, Limit: f.Limit + 1}
	switch {
	case f.After != "":
		if len(f.After) < stampLen || strings.Contains(f.After, "/") {
			return nil, "", fmt.Errorf("%w: cursor %q is not a record id", ErrInvalid, f.After)
		}
		q.After = prefix + f.After
	case !f.Until.IsZero():
		q.After = prefix + stamp(f.Until.Add(time.Nanosecond))
	}
	out := []Record{}
	scanned := 0
	for {
		recs, err := st.List(ctx, Table, q)
		if err != nil {
			return nil, "", fmt.Errorf("audit: list: %w", err)
		}
		for _, raw := range recs {
			var r Record
			if err := json.Unmarshal(raw.Value, &r); err != nil {
				return nil, "", fmt.Errorf("audit: decode %s: %w", raw.Key, err)
			}
			scanned++
			if !f.Since.IsZero() && r.Time.Before(f.Since) {
				return out, "", nil // older than the window: the end
			}
			if !f.Until.IsZero() && r.Time.After(f.Until) {
				continue
			}
			if f.match(&r) {
				if len(out) == f.Limit {
					return out, out[len(out)-1].ID, nil
				}
				out = append(out, r)
			}
			q.After = raw.Key
			if scanned >= scanCap {
				if len(out) > 0 {
					return out, out[len(out)-1].ID, nil
				}
				return out, strings.TrimPrefix(raw.Key, prefix), nil
			}
		}
		if len(recs) < q.Limit {
			return out, "", nil
		}
	}
}

// Prune deletes the records of these accounts older than before, in
// batches, and answers how many it deleted.
func Prune(ctx context.Context, st persistence.Store, accountIDs []string, before time.Time) (int, error) {
	const batch = 500
	n := 0
	for _, acc := range accountIDs {
		prefix := acc + "/"
		cut := prefix + stamp(before)
		for {
			recs, err := st.List(ctx, Table, persistence.Query{Prefix: prefix, Limit: batch})
			if err != nil {
				return n, fmt.Errorf("audit: prune: %w", err)
			}
			var ops []persistence.Op
			for _, r := range recs {
				if r.Key >= cut {
					break
				}
				ops = append(ops, persistence.Delete(Table, r.Key, persistence.Any()))
			}
			if len(ops) > 0 {
				if _, err := st.Apply(ctx, ops...); err != nil {
					return n, fmt.Errorf("audit: prune: %w", err)
				}
				n += len(ops)
			}
			if len(ops) < batch {
				break
			}
		}
	}
	return n, nil
}
