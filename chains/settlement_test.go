package chains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOutcomeUnknownError(t *testing.T) {
	for _, cause := range []error{
		errors.New("connection reset by peer"),
		context.DeadlineExceeded,
		fmt.Errorf("node: %w", ErrUnavailable),
		nil,
	} {
		err := fmt.Errorf("send: %w", OutcomeUnknown(Base, "k1", "0xabc", cause))
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("cause %v: %v is not ErrOutcomeUnknown", cause, err)
		}
		// Whatever the cause, the caller is not told "unavailable" (nothing
		// was done) nor that its own context ended.
		for _, not := range []error{ErrUnavailable, context.DeadlineExceeded, context.Canceled} {
			if errors.Is(err, not) {
				t.Errorf("cause %v: %v matches %v", cause, err, not)
			}
		}
		var ou *OutcomeUnknownError
		if !errors.As(err, &ou) || ou.TxHash != "0xabc" || ou.IdempotencyKey != "k1" || ou.Chain != Base {
			t.Errorf("cause %v: errors.As = %+v", cause, ou)
		}
		if !strings.Contains(err.Error(), "0xabc") || !strings.Contains(err.Error(), "do not pay again") {
			t.Errorf("message %q names neither the hash nor what to do", err)
		}
	}
}

func TestSettlementRelay(t *testing.T) {
	var r SettlementRelay
	s := Settlement{Chain: Stellar, IdempotencyKey: "k", Status: SettlementConfirmed}
	if err := r.Deliver(context.Background(), s); !errors.Is(err, ErrNoSettlementReceiver) {
		t.Fatalf("Deliver before Set = %v", err)
	}
	var got []Settlement
	r.Set(func(_ context.Context, s Settlement) error { got = append(got, s); return nil })
	if err := r.Deliver(context.Background(), s); err != nil || len(got) != 1 || got[0] != s {
		t.Fatalf("Deliver after Set = %v, received %+v", err, got)
	}
}
