package policy_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

const agentID = "11111111-2222-4333-8444-555555555555"

func open(t *testing.T, path string) persistence.Store {
	t.Helper()
	st, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func set(t *testing.T, st persistence.Store, p policy.Policy) {
	t.Helper()
	op, err := policy.SetOp(agentID, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(context.Background(), op); err != nil {
		t.Fatal(err)
	}
}

// spend is a payment of amount whole units of an asset with 6 decimals
// ("" pays everything).
func spend(key, asset, amount, to string) chains.Spend {
	s := chains.Spend{Key: key, AgentID: agentID, Chain: chains.Ethereum, Asset: asset, Recipient: to, All: amount == ""}
	if amount != "" {
		a, err := chains.ParseAmountOf(amount, 6)
		if err != nil {
			panic(err)
		}
		s.Amount = a
	}
	return s
}

func TestPolicyRules(t *testing.T) {
	st := open(t, filepath.Join(t.TempDir(), "p.db"))
	defer st.Close()
	day := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	now := day
	ps := policy.NewStore(st, func() time.Time { return now })
	ctx := context.Background()
	if err := ps.Authorize(ctx, spend("k0", "ETH", "1000", "anyone")); err != nil {
		t.Fatalf("no policy: %v", err)
	}
	set(t, st, policy.Policy{
		PerTransaction: map[string]string{"usdc": "100"},
		Daily:          map[string]string{"USDC": "150"},
		Allowlist:      []string{"bob.veil", "0xABCDEF0000000000000000000000000000000001"},
	})
	cases := []struct {
		name string
		s    chains.Spend
		ok   bool
	}{
		{"allowed name", spend("k1", "USDC", "100", "bob"), true},
		{"same payment signed again", spend("k1", "USDC", "100", "bob"), true},
		{"address, any case", spend("k2", "usdc", "40", "0xabcdef0000000000000000000000000000000001"), true},
		{"over the daily budget", spend("k3", "USDC", "20", "bob"), false},
		{"over the per-payment cap", spend("k4", "USDC", "100.000001", "bob"), false},
		{"not on the allowlist", spend("k5", "ETH", "0.1", "mallory"), false},
		{"uncapped asset to an allowed recipient", spend("k6", "ETH", "5", "bob"), true},
		{"withdraw all of a capped asset", spend("k7", "USDC", "", "bob"), false},
	}
	for _, tc := range cases {
		err := ps.Authorize(ctx, tc.s)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, enclave.ErrPolicy)) {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
	}
	// The next UTC day has a fresh budget.
	now = day.Add(24 * time.Hour)
	if err := ps.Authorize(ctx, spend("k8", "USDC", "100", "bob")); err != nil {
		t.Fatalf("next day: %v", err)
	}
}

// What was counted survives a restart: a reopened store refuses what
// would exceed the day's budget, and concurrent payments never overspend.
func TestDailyBudgetAcrossRestartAndConcurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	now := func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }
	st := open(t, path)
	set(t, st, policy.Policy{Daily: map[string]string{"ETH": "1"}})
	ps := policy.NewStore(st, now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if ps.Authorize(context.Background(), spend(fmt.Sprint("c", i), "ETH", "0.1", "x")) == nil {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if allowed != 10 {
		t.Fatalf("allowed %d payments of 0.1 under a budget of 1, want exactly 10", allowed)
	}
	st.Close()

	st = open(t, path)
	defer st.Close()
	ps = policy.NewStore(st, now)
	if err := ps.Authorize(context.Background(), spend("after", "ETH", "0.1", "x")); !errors.Is(err, enclave.ErrPolicy) {
		t.Fatalf("after restart: %v, want a refusal (the budget is spent)", err)
	}
}

func TestNormalizeAndHash(t *testing.T) {
	a, err := policy.Hash(policy.Policy{PerTransaction: map[string]string{"usdc": "5"}, Allowlist: []string{" bob.veil", "alice", "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := policy.Hash(policy.Policy{PerTransaction: map[string]string{"USDC": "5"}, Allowlist: []string{"alice", "bob"}})
	if a != b || len(a) != 64 {
		t.Fatalf("equivalent policies hash differently: %s %s", a, b)
	}
	for _, bad := range []policy.Policy{
		{PerTransaction: map[string]string{"USDC": "-1"}},
		{Daily: map[string]string{"USDC": "1e9"}},
		{Daily: map[string]string{"U$": "1"}},
		{PerTransaction: map[string]string{"USDC": "0"}},
		{Allowlist: []string{"   "}},
	} {
		if _, err := policy.Normalize(bad); !errors.Is(err, policy.ErrInvalid) {
			t.Fatalf("%+v: err = %v", bad, err)
		}
	}
}

// Check is the one place of the per-payment rules: schedules (made,
// resumed, re-checked) and the enclave's Authorize call it.
func TestCheck(t *testing.T) {
	p, err := policy.Normalize(policy.Policy{
		PerTransaction: map[string]string{"ETH": "0.01"}, Daily: map[string]string{"USDC": "5"},
		Allowlist: []string{"bob.veil"}, Resolved: []string{"st:eth:0xBOB"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	cases := []struct {
		name string
		pay  policy.Payment
		rule string // "" passes; else in the error
	}{
		{"name on the list", policy.Payment{Asset: "eth", Amount: rat("0.01"), Recipient: "bob"}, ""},
		{"resolved meta-address, any case", policy.Payment{Asset: "ETH", Amount: rat("0.001"), Recipient: "st:eth:0xbob"}, ""},
		{"off the list, but resolves to a listed meta-address", policy.Payment{Asset: "ETH", Amount: rat("0.001"), Recipient: "robert", ResolvedTo: "st:eth:0xBOB"}, ""},
		{"off the list", policy.Payment{Asset: "ETH", Amount: rat("0.001"), Recipient: "carol", ResolvedTo: "st:eth:0xcarol"}, "allowlist"},
		{"over the cap", policy.Payment{Asset: "ETH", Amount: rat("0.010000001"), Recipient: "bob"}, "per payment"},
		{"everything of an asset with a daily budget", policy.Payment{Asset: "USDC", Recipient: "bob"}, "explicit amount"},
		{"everything of an uncapped asset", policy.Payment{Asset: "POL", Recipient: "bob"}, ""},
	}
	for _, tc := range cases {
		err := p.Check(tc.pay)
		if tc.rule == "" && err != nil || tc.rule != "" && (!errors.Is(err, enclave.ErrPolicy) || !strings.Contains(err.Error(), tc.rule)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.rule)
		}
	}
}

// ConfirmAbove is normalised like the caps (symbols upper-case, amounts
// validated), is part of the signed hash, and is off by default.
func TestConfirmAbove(t *testing.T) {
	n, err := policy.Normalize(policy.Policy{ConfirmAbove: map[string]string{"usdc": "20"}})
	if err != nil || n.ConfirmAbove["USDC"] != "20" {
		t.Fatalf("Normalize: %+v, %v", n.ConfirmAbove, err)
	}
	if n, _ := policy.Normalize(policy.Policy{}); n.ConfirmAbove != nil {
		t.Fatalf("default ConfirmAbove = %v, want none", n.ConfirmAbove)
	}
	a, _ := policy.Hash(policy.Policy{ConfirmAbove: map[string]string{"USDC": "20"}})
	b, _ := policy.Hash(policy.Policy{})
	if a == b {
		t.Fatal("confirmAbove is not part of the signed hash")
	}
	if _, err := policy.Normalize(policy.Policy{ConfirmAbove: map[string]string{"USDC": "-1"}}); !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("negative confirmAbove: err = %v", err)
	}
}
