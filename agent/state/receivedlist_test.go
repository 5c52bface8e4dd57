package state

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestReceivedPages: an agent's received payments page newest first by
// when they were first received, ties (two found in the same scan, the
// same instant) ordered by chain and address so every page boundary is
// exact; a payment received between two pages neither repeats nor skips
// one; chain, status and since filter; another agent's are not listed; a
// bad filter is ErrInvalid.
func TestReceivedPages(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	p := NewPayments(s, "agent-a", clk.Now)
	other := NewPayments(s, "agent-b", clk.Now)
	n := 0
	record := func(ps *Payments, c chains.ID, amount string) {
		t.Helper()
		n++
		if _, err := ps.Record(ctx, tools.Payment{Chain: c, StealthAddress: fmt.Sprintf("0x%040x", n), EphemeralPubKey: "02ab", Asset: "ETH", Amount: amount, TxHash: fmt.Sprintf("0xt%d", n)}); err != nil {
			t.Fatal(err)
		}
	}
	record(p, chains.Base, "1")
	clk.Set(clk.Now().Add(time.Minute))
	record(p, chains.Ethereum, "2")
	record(p, chains.Base, "3") // the same instant as 2
	record(p, chains.Base, "4") // and 4
	clk.Set(clk.Now().Add(time.Minute))
	record(p, chains.Ethereum, "5")
	record(other, chains.Base, "99")
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: fmt.Sprintf("0x%040x", 1), TxHash: "0xw1"}); err != nil {
		t.Fatal(err)
	}

	all := func(f ReceivedFilter) (string, int) {
		t.Helper()
		var got []string
		for pages := 1; ; pages++ {
			page, err := p.Page(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Payments {
				got = append(got, r.Amount)
			}
			if page.NextCursor == "" {
				return strings.Join(got, ","), pages
			}
			if pages > 10 {
				t.Fatal("the cursor never ends")
			}
			if f.After, err = ParseCursor(page.NextCursor); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The three of one instant by chain and address, descending:
	// ethereum's 0x…2, then base's 0x…4 and 0x…3.
	for _, c := range []struct {
		name  string
		f     ReceivedFilter
		want  string
		pages int
	}{
		{"all", ReceivedFilter{}, "5,2,4,3,1", 1},
		{"pages of one", ReceivedFilter{Limit: 1}, "5,2,4,3,1", 5},
		{"pages of two", ReceivedFilter{Limit: 2}, "5,2,4,3,1", 3},
		{"base", ReceivedFilter{Chain: chains.Base}, "4,3,1", 1},
		{"held", ReceivedFilter{Status: ReceivedHeld}, "5,2,4,3", 1},
		{"withdrawn", ReceivedFilter{Status: ReceivedWithdrawn}, "1", 1},
		{"since the second minute", ReceivedFilter{Since: at(t, "2027-01-31T10:01:00Z")}, "5,2,4,3", 1},
	} {
		if got, pages := all(c.f); got != c.want || pages != c.pages {
			t.Errorf("%s: %q in %d pages, want %q in %d", c.name, got, pages, c.want, c.pages)
		}
	}

	// A payment received between two pages.
	first, err := p.Page(ctx, ReceivedFilter{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(clk.Now().Add(time.Minute))
	record(p, chains.Base, "6")
	after, _ := ParseCursor(first.NextCursor)
	if got, _ := all(ReceivedFilter{After: after}); got != "4,3,1" {
		t.Fatalf("after the first page: %q", got)
	}
	if rec := first.Payments[0]; rec.TxHashes[0] != "0xt5" || rec.Chain != chains.Ethereum {
		t.Fatalf("a page's record: %+v", rec)
	}

	for _, f := range []ReceivedFilter{{Status: "confirmed"}, {Chain: "mars"}, {Limit: MaxPageLimit + 1}, {Limit: -1}} {
		if _, err := p.Page(ctx, f); !errors.Is(err, ErrInvalid) {
			t.Errorf("filter %+v: %v, want ErrInvalid", f, err)
		}
	}
}
