// Package intents is the intent ledger the Stellar and Solana connectors
// share: the durable record of one payment, withdrawal or registration
// (written before its transaction leaves the process, so a retry with the
// same idempotency key resumes it instead of paying twice), its states, the
// fingerprint that tells a retry from a different request under the same
// key, the send loop that rebuilds a stale attempt (Ledger.Run), and the
// restart pass that settles what a previous process left pending. What an
// attempt is (a Stellar envelope, a Solana transaction), how it is sent and
// judged, and how a stored one is found on chain stay in each connector
// (Ledger's func fields). EVM keeps its own ledger (nonces and replacement
// transactions) and shares Fingerprint and KeyOr.
package intents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// States of an intent.
const (
	Pending = "pending" // an attempt is persisted and maybe sent
	Done    = "done"    // an attempt is on chain, successful
)

// Intent is the durable record of one payment, withdrawal or registration;
// A is the connector's signed attempt.
type Intent[A any] struct {
	Op          string            `json:"op"`
	Fingerprint string            `json:"fp"`
	Source      string            `json:"source"`
	KeyRef      chains.KeyRef     `json:"keyRef"`
	Params      map[string]string `json:"params,omitempty"`
	Attempts    []A               `json:"attempts"`
	State       string            `json:"state"`
	TxHash      string            `json:"txHash"`
	Created     time.Time         `json:"created"`
	// Spend is the value the transaction moves; every attempt (a rebuild
	// after the chain refused a stale one) is signed under it again. Nil
	// for a registration, which moves no value (the enclave checks).
	Spend *chains.Spend `json:"spend,omitempty"`
	// Fee is the relayer's fee the same transaction pays from the source
	// (chains.SignRequest.Fee), signed with Spend; nil without a relayer.
	Fee *chains.Spend `json:"fee,omitempty"`
	// Relayer is the relayer's own spend when it pays the transaction's
	// fee (a Solana fee payer): it signs first, under it.
	Relayer *chains.Spend `json:"relayer,omitempty"`
}

// Load reads the intent at key: (nil, 0, nil) when there is none.
func Load[A any](ctx context.Context, st persistence.Store, table, key string) (*Intent[A], uint64, error) {
	return jsonrec.Load[Intent[A]](ctx, st, table, key)
}

// Save writes it at key if the record is still at version ver (0: absent).
func Save[A any](ctx context.Context, st persistence.Store, table, key string, it *Intent[A], ver uint64) (uint64, error) {
	return jsonrec.Save(ctx, st, table, key, it, ver)
}

// Fingerprint identifies a request's content: a retry of an idempotency
// key with another fingerprint is chains.ErrIdempotencyConflict.
func Fingerprint(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}

// NewKey is the idempotency key of a request that came without one.
func NewKey(rand io.Reader) string {
	var b [16]byte
	_, _ = io.ReadFull(rand, b[:])
	return "auto-" + hex.EncodeToString(b[:])
}

// Settle is a connector's Maintain after a restart: every pending intent
// that has an attempt is re-read under its source's lock and handed to
// resume (an attempt found on chain completes it; one that may still land
// is sent again; one whose attempts are all dead stays pending until its
// key is retried). It returns the errors that say "try again later" (the
// chain unreachable, ctx ended); others are logged with the intent.
func Settle[A any](ctx context.Context, st persistence.Store, table string, log *slog.Logger,
	lock func(source string) (unlock func()),
	resume func(ctx context.Context, key string, it *Intent[A], ver uint64) (done bool, err error)) error {
	recs, err := st.List(ctx, table, persistence.Query{})
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range recs {
		var it Intent[A]
		if json.Unmarshal(r.Value, &it) != nil || it.State != Pending || len(it.Attempts) == 0 {
			continue
		}
		unlock := lock(it.Source)
		cur, ver, err := Load[A](ctx, st, table, r.Key)
		if err == nil && cur != nil && cur.State == Pending {
			var done bool
			done, err = resume(ctx, r.Key, cur, ver)
			log.Info("settled pending intent", "key", r.Key, "done", done, "err", err)
			if errors.Is(err, chains.ErrUnavailable) || errors.Is(err, chains.ErrOutcomeUnknown) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, err)
			}
		}
		unlock()
	}
	return errors.Join(errs...)
}

// Registration is the intent of registering the parsed name n by owner
// (its address source) to meta, whose raw keys are metaHex, and its
// idempotency key: one per name, owner and meta-address.
func Registration[A any](n, source, metaHex, meta string, owner chains.KeyRef) (string, *Intent[A]) {
	key := "register/" + n + "/" + source + "/" + Fingerprint(metaHex)
	return key, &Intent[A]{Op: "registration", Fingerprint: Fingerprint("register", n, source, meta), Source: source, KeyRef: owner,
		Params: map[string]string{"name": n + chains.NameSuffix}}
}

// KeyOr is key, or for a request that came without one a new key (NewKey).
func KeyOr(key string, rand io.Reader) string {
	if key != "" {
		return key
	}
	return NewKey(rand)
}
