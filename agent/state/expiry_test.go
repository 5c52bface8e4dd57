package state

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestInvoiceExpiry: an expiry is stored and read back; one not in the
// future is refused at create; MarkPaid settles before the expiry and
// refuses with ErrExpired from the expiry on, changing nothing.
func TestInvoiceExpiry(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	var gens atomic.Int64
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("0x%040x", gens.Add(1)), []byte{1, 2, 3}, nil
	}
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen)
	exp := func(d time.Duration) *time.Time { t := clk.Now().Add(d); return &t }

	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "x"}, Chain: chains.Base, ExpiresAt: exp(d)}, ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("expiry %v from now: %v, want ErrInvalid", d, err)
		}
	}
	never, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "never"}, Chain: chains.Base}, "")
	if err != nil || never.ExpiresAt != nil {
		t.Fatalf("no expiry: %+v %v", never, err)
	}
	tests := []struct {
		name    string
		after   time.Duration // clock advance before MarkPaid
		wantErr error
	}{
		{"paid a second before", time.Hour - time.Second, nil},
		{"refused at the expiry", time.Hour, ErrExpired},
		{"refused after", 48 * time.Hour, ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := clk.Now()
			want := exp(time.Hour).UTC()
			created, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: tt.name}, Chain: chains.Base, ExpiresAt: &want}, "")
			if err != nil || created.ExpiresAt == nil || !created.ExpiresAt.Equal(want) {
				t.Fatalf("create: %+v %v", created, err)
			}
			clk.Set(start.Add(tt.after))
			got, changed, err := inv.MarkPaid(ctx, created.ID, "0xabc")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("MarkPaid = %+v %v %v, want %v", got, changed, err, tt.wantErr)
			}
			stored, gerr := inv.Get(ctx, created.ID)
			if gerr != nil || stored.ExpiresAt == nil || !stored.ExpiresAt.Equal(want) {
				t.Fatalf("stored: %+v %v", stored, gerr)
			}
			if wantStatus := map[bool]string{true: InvoicePaid, false: InvoicePending}[tt.wantErr == nil]; stored.Status != wantStatus {
				t.Fatalf("status %s, want %s", stored.Status, wantStatus)
			}
		})
	}
	// An invoice without expiry is payable whenever.
	clk.Set(clk.Now().Add(1000 * 24 * time.Hour))
	if _, changed, err := inv.MarkPaid(ctx, never.ID, "0xdef"); err != nil || !changed {
		t.Fatalf("never-expiring invoice: %v %v", changed, err)
	}
}
