package state

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/fakeclock"
)

func TestPayments(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	p := NewPayments(s, "agent-a", clk.Now)
	addr := "0xAbCdEf0000000000000000000000000000000001"
	pay := tools.Payment{Chain: chains.Base, StealthAddress: addr, EphemeralPubKey: "02ab", Asset: "USDC", Amount: "5", TxHash: "0xt1"}

	// The scanner delivers the same payment concurrently: exactly one
	// delivery is new.
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh, known := 0, 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Record(ctx, pay)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				fresh++
			case errors.Is(err, ErrAlreadyKnown):
				known++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if fresh != 1 || known != 7 {
		t.Fatalf("fresh %d known %d", fresh, known)
	}
	// Again later, with the address in another case: still known.
	again := pay
	again.StealthAddress = strings.ToLower(addr)
	if got, err := p.Record(ctx, again); !errors.Is(err, ErrAlreadyKnown) || got.Balance != "5" {
		t.Errorf("redelivery: %+v %v", got, err)
	}
	// A second transaction to the same address adds up.
	second := pay
	second.TxHash, second.Amount = "0xt2", "0.25"
	if got, err := p.Record(ctx, second); err != nil || got.Amount != "5.25" || got.Balance != "5.25" {
		t.Errorf("second tx: %+v %v", got, err)
	}
	other := pay
	other.TxHash, other.Asset = "0xt3", "ETH"
	if _, err := p.Record(ctx, other); !errors.Is(err, ErrInvalid) {
		t.Errorf("other asset: %v", err)
	}
	clk.Set(clk.Now().Add(time.Minute))
	xlm := tools.Payment{Chain: chains.Stellar, StealthAddress: "GABC", Asset: "XLM", Amount: "20", TxHash: "x1"}
	if _, err := p.Record(ctx, xlm); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []tools.Payment{
		{Chain: "btc", StealthAddress: "a", Asset: "X", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "", Asset: "ETH", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "a/b", Asset: "ETH", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "a", Asset: "ETH", Amount: "1"},
		{Chain: chains.Base, StealthAddress: "a", Asset: "", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "a", Asset: "ETH", Amount: "1e5", TxHash: "h"},
	} {
		if _, err := p.Record(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Record(%+v) = %v", bad, err)
		}
	}

	all, err := p.Received(ctx, "")
	if err != nil || len(all) != 2 || all[0].Chain != chains.Base || all[1].Chain != chains.Stellar {
		t.Fatalf("Received all: %+v %v", all, err)
	}
	base, _ := p.Received(ctx, chains.Base)
	if len(base) != 1 || base[0].StealthAddress != addr || base[0].EphemeralPubKey != "02ab" || !base[0].ReceivedAt.Equal(at(t, "2027-01-31T10:00:00Z")) {
		t.Errorf("Received base: %+v", base)
	}
	if sol, _ := p.Received(ctx, chains.Solana); len(sol) != 0 {
		t.Errorf("solana: %v", sol)
	}

	// Withdrawals: partial, repeated (no change), then the rest.
	w := tools.Withdrawal{Chain: chains.Base, StealthAddress: strings.ToLower(addr), To: "0xDest", Amount: "2", TxHash: "0xw1"}
	for range 2 {
		if err := p.MarkWithdrawn(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := p.Get(ctx, chains.Base, addr)
	if rec.Balance != "3.25" || rec.Withdrawn || len(rec.Withdrawals) != 1 || rec.WithdrawnTo[0] != "0xDest" {
		t.Errorf("after partial: %+v", rec)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: addr, To: "0xDest", TxHash: "0xw2"}); err != nil {
		t.Fatal(err)
	}
	rec, _ = p.Get(ctx, chains.Base, addr)
	if rec.Balance != "0" || !rec.Withdrawn || len(rec.Withdrawals) != 2 || len(rec.WithdrawnTo) != 1 {
		t.Errorf("after all: %+v", rec)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Stellar, StealthAddress: "GABC", To: "GD", Amount: "25", TxHash: "xw"}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := p.Get(ctx, chains.Stellar, "GABC"); rec.Balance != "0" || !rec.Withdrawn {
		t.Errorf("over-withdrawal floors at zero: %+v", rec)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Solana, StealthAddress: "nope", TxHash: "h"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown payment: %v", err)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: addr}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no tx hash: %v", err)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: addr, Amount: "-1", TxHash: "h"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad amount: %v", err)
	}
}

func TestConcurrentWithdrawals(t *testing.T) {
	s := openStore(t)
	p := NewPayments(s, "agent-a", nil)
	if _, err := p.Record(ctx, tools.Payment{Chain: chains.Solana, StealthAddress: "So1", Asset: "SOL", Amount: "10", TxHash: "t"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each withdrawal twice, as a retried caller would.
			for range 2 {
				if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Solana, StealthAddress: "So1", To: "D", Amount: "0.5", TxHash: fmt.Sprint("w", i)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	rec, _ := p.Get(ctx, chains.Solana, "So1")
	if rec.Balance != "5" || len(rec.Withdrawals) != 10 || rec.Withdrawn {
		t.Errorf("%+v", rec)
	}
}
