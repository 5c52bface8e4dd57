package tools

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A refusal names why an unpaid invoice is closed: cancelled by its payee
// (cancel_invoice sets CancelledAt and ExpiresAt to the same time) reads
// "cancelled", never "expired"; an invoice past its expiry reads
// "expired"; one still open is payable.
func TestPayableSaysWhyAnInvoiceIsClosed(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	past := now.Add(-time.Hour)
	future := now.Add(time.Hour)
	for _, tc := range []struct {
		name string
		inv  PayableInvoice
		want string // "" = payable
		not  string
	}{
		{"cancelled", PayableInvoice{ID: "i1", Status: "pending", ExpiresAt: &past, CancelledAt: &past, Expired: true}, "was cancelled by its payee at 2026-11-27T11:00:00Z", "expired"},
		{"expired", PayableInvoice{ID: "i2", Status: "pending", ExpiresAt: &past}, "expired at 2026-11-27T11:00:00Z", "cancelled"},
		{"open", PayableInvoice{ID: "i3", Status: "pending", ExpiresAt: &future}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPayable(tc.inv, now, "payer")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("open invoice refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvoiceNotPayable) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
				t.Fatalf("err = %v, want %q and not %q", err, tc.want, tc.not)
			}
			inv := Invoice{ExpiresAt: tc.inv.ExpiresAt}
			inv.CancelledAt = tc.inv.CancelledAt
			if got := inv.Closed(); got != tc.want {
				t.Fatalf("Closed() = %q, want %q", got, tc.want)
			}
		})
	}
}
