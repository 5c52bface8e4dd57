package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestCursorRoundTrip: a cursor reads back as itself; anything else the
// API did not give out is ErrInvalid.
func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{At: at(t, "2027-01-31T10:00:00.123456789Z"), ID: "0b6f1f5e-8a8a-4f4e-9f0e-6a1b2c3d4e5f"}
	got, err := ParseCursor(c.String())
	if err != nil || got != c {
		t.Fatalf("ParseCursor(String()) = %+v %v, want %+v", got, err, c)
	}
	if z, err := ParseCursor(""); err != nil || !z.IsZero() {
		t.Fatalf("empty cursor = %+v %v", z, err)
	}
	for _, bad := range []string{"nope!", "bm9wZQ", "MTIz", "LTEuYWJj", "MC5hYmM", "MTIzLg", strings.Repeat("A", 300), "MTIzLmEvYg"} {
		if _, err := ParseCursor(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseCursor(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestInvoicePages: filters by status and creation time, pages newest
// first without repeating or skipping an invoice (also when invoices
// arrive between pages), and refuses a bad status or limit.
func TestInvoicePages(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	var gens atomic.Int64
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("0x%040x", gens.Add(1)), []byte{1, 2, 3}, nil
	}
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen)
	other := NewInvoices(s, "agent-b", clk.Now, "bob", "https://veil.test", gen)
	create := func(in *Invoices, memo string, expires *time.Time) tools.Invoice {
		t.Helper()
		got, err := in.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: memo}, Chain: chains.Base, ExpiresAt: expires}, "")
		if err != nil {
			t.Fatal(err)
		}
		clk.Set(clk.Now().Add(time.Minute))
		return got
	}
	// Seven invoices a minute apart: #2 paid, #4 expiring after two
	// minutes (expired by the time they are listed); two created at the
	// same instant to check the id tie-break.
	var made []tools.Invoice
	for i := range 7 {
		var exp *time.Time
		if i == 4 {
			e := clk.Now().Add(90 * time.Second)
			exp = &e
		}
		made = append(made, create(inv, fmt.Sprintf("invoice %d", i), exp))
	}
	create(other, "bob's", nil)
	twin := clk.Now()
	made = append(made, create(inv, "twin a", nil))
	clk.Set(twin)
	made = append(made, create(inv, "twin b", nil))
	if _, _, err := inv.MarkPaid(ctx, made[2].ID, "0xpaid"); err != nil {
		t.Fatal(err)
	}
	sinceFourth := made[3].CreatedAt

	ids := func(p InvoicePage) []string {
		var out []string
		for _, i := range p.Invoices {
			out = append(out, i.Memo)
		}
		return out
	}
	tests := []struct {
		name string
		f    InvoiceFilter
		want []string
	}{
		{"all, newest first", InvoiceFilter{}, []string{"twin?", "twin?", "invoice 6", "invoice 5", "invoice 4", "invoice 3", "invoice 2", "invoice 1", "invoice 0"}},
		{"pending leaves out paid and expired", InvoiceFilter{Status: InvoicePending}, []string{"twin?", "twin?", "invoice 6", "invoice 5", "invoice 3", "invoice 1", "invoice 0"}},
		{"paid", InvoiceFilter{Status: InvoicePaid}, []string{"invoice 2"}},
		{"expired", InvoiceFilter{Status: InvoiceExpired}, []string{"invoice 4"}},
		{"since is inclusive", InvoiceFilter{Since: sinceFourth, Status: InvoicePending}, []string{"twin?", "twin?", "invoice 6", "invoice 5", "invoice 3"}},
		{"since after everything", InvoiceFilter{Since: clk.Now().Add(time.Hour)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, limit := range []int{0, 1, 2, 3, 100} {
				f := tt.f
				f.Limit = limit
				var got []string
				for pages := 0; ; pages++ {
					if pages > 20 {
						t.Fatalf("limit %d: no end to the pages", limit)
					}
					p, err := inv.Page(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					if limit > 0 && len(p.Invoices) > limit {
						t.Fatalf("limit %d: page of %d", limit, len(p.Invoices))
					}
					got = append(got, ids(p)...)
					if p.NextCursor == "" {
						break
					}
					if f.After, err = ParseCursor(p.NextCursor); err != nil {
						t.Fatal(err)
					}
				}
				for i := range got {
					if strings.HasPrefix(got[i], "twin") {
						got[i] = "twin?"
					}
				}
				if strings.Join(got, ",") != strings.Join(tt.want, ",") {
					t.Fatalf("limit %d: got %q, want %q", limit, got, tt.want)
				}
			}
		})
	}

	t.Run("an invoice created between pages goes before the cursor", func(t *testing.T) {
		p1, err := inv.Page(ctx, InvoiceFilter{Limit: 4})
		if err != nil || p1.NextCursor == "" {
			t.Fatalf("%+v %v", p1, err)
		}
		clk.Set(clk.Now().Add(time.Hour))
		create(inv, "newer", nil)
		after, _ := ParseCursor(p1.NextCursor)
		p2, err := inv.Page(ctx, InvoiceFilter{After: after})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, i := range append(p1.Invoices, p2.Invoices...) {
			if seen[i.ID] || i.Memo == "newer" {
				t.Fatalf("invoice %q repeated or out of place", i.Memo)
			}
			seen[i.ID] = true
		}
		if len(seen) != len(made) {
			t.Fatalf("two pages held %d invoices, want %d", len(seen), len(made))
		}
	})

	for _, f := range []InvoiceFilter{{Status: "open"}, {Limit: -1}, {Limit: MaxPageLimit + 1}} {
		if _, err := inv.Page(ctx, f); !errors.Is(err, ErrInvalid) {
			t.Errorf("Page(%+v) = %v, want ErrInvalid", f, err)
		}
	}
}
