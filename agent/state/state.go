// Package state keeps an agent's invoices, schedules, memories, received
// payments and outgoing payment records (Outgoing, docs/payments.md) in
// the persistence.Store. Each type implements the matching service
// interface of agent/tools for one agent; package functions answer the
// cross-agent questions (an invoice by id or address, the schedules that
// fall due, the record a chain's settlement names).
//
// Every write is one atomic batch: a record and its index entries change
// together, and updates are guarded by the record's version (a concurrent
// or stale writer is rejected and, inside this package, re-reads and
// retries). Values are JSON.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/persistence"
)

// Tables this package owns.
const (
	TableInvoices       = "invoices"        // <agentID>/<invoiceID> → InvoiceRecord
	TableInvoiceIndex   = "invoice_index"   // <invoiceID> → <agentID>
	TableInvoiceAddress = "invoice_address" // <chain>/<address> → <agentID>/<invoiceID> (EVM addresses lower-case)
	TableInvoiceKeys    = "invoice_keys"    // <agentID>/<idempotency key> → <invoiceID> (since random ids; older invoices have none)
	TableInvoiceWatch   = "invoice_watch"   // <chain>/<agentID>/<invoiceID> → InvoiceWatch, while pending, on chains watched by reference (Solana)
	TableSchedules      = "schedules"       // <agentID>/<scheduleID> → tools.Schedule
	TableScheduleDue    = "schedule_due"    // <nextRun, fixed width UTC>/<agentID>/<scheduleID> → <agentID>/<scheduleID>
	TableMemories       = "memories"        // <agentID>/<memoryID> → tools.Memory
	TableMemoryMeta     = "memory_meta"     // <agentID> → {"count": n}: serialises saves (the cap)
	TablePayments       = "payments"        // <agentID>/<chain>/<stealthAddress> → PaymentRecord (EVM addresses lower-case)
)

// Errors. Match with errors.Is.
var (
	// ErrNotFound: no such invoice, schedule, memory or payment.
	ErrNotFound = errors.New("state: not found")
	// ErrInvalid: a record that does not validate (unknown chain, bad
	// amount, empty field…).
	ErrInvalid = errors.New("state: invalid")
	// ErrAmbiguous: a schedule id prefix that matches several schedules.
	ErrAmbiguous = errors.New("state: ambiguous id prefix")
	// ErrInvalidTransition: a schedule action its status does not allow.
	ErrInvalidTransition = errors.New("state: invalid transition")
	// ErrStaleSlot: Advance for a slot that is not the schedule's next run
	// (already advanced, or the schedule changed).
	ErrStaleSlot = errors.New("state: stale schedule slot")
	// ErrAlreadyKnown: a received payment recorded before.
	ErrAlreadyKnown = errors.New("state: payment already known")
	// ErrIDReused: a preset id that already names a different record.
	ErrIDReused = errors.New("state: id already used for a different record")
	// ErrMemoryFull: the agent has MaxMemories memories, all more
	// important than the new one.
	ErrMemoryFull = errors.New("state: memory is full")
	// ErrExpired: an invoice past its expiry cannot be marked paid.
	ErrExpired = errors.New("state: invoice expired")
)

// retryBudget bounds the re-read-and-retry loop of an update that keeps
// losing races with concurrent writers: by time, not by a count, so that a
// loaded machine (slow rounds) does not turn contention into failures.
const retryBudget = 5 * time.Second

// retry runs fn until it does not fail with a version conflict, backing
// off a random, growing while (up to 10 ms) between attempts so that
// racing writers spread out.
func retry(ctx context.Context, fn func() error) error {
	start := time.Now()
	var err error
	for i := 0; ; i++ {
		if err = fn(); !errors.Is(err, persistence.ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(start) > retryBudget {
			return fmt.Errorf("gave up after %d concurrent updates in %v: %w", i+1, retryBudget, err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(min(i+1, 40)))) * 250 * time.Microsecond)
	}
}

func clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// newID returns id canonicalised when it is a UUID, a fresh UUID when it
// is empty.
func newID(id string) (string, bool, error) {
	if id == "" {
		return uuid.NewString(), false, nil
	}
	u, err := uuid.Parse(id)
	if err != nil || strings.ContainsAny(id, "{}:") {
		return "", false, fmt.Errorf("%w: id %q is not a UUID", ErrInvalid, id)
	}
	return u.String(), true, nil
}

func checkAgentID(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("%w: agent id %q", ErrInvalid, id)
	}
	return nil
}

func getJSON(ctx context.Context, s persistence.Store, table, key string, v any) (uint64, error) {
	rec, err := s.Get(ctx, table, key)
	if errors.Is(err, persistence.ErrNotFound) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(rec.Value, v); err != nil {
		return 0, fmt.Errorf("decode %s/%s: %w", table, key, err)
	}
	return rec.Version, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled here
	}
	return b
}

func expectVersion(v uint64) persistence.Expect {
	if v == 0 {
		return persistence.Absent()
	}
	return persistence.AtVersion(v)
}
