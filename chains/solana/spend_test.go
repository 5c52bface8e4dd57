//go:build !nodevnet

package solana_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/enclave"
)

// capAuth is an Authorizer that records every spend and refuses one over
// max (base units).
type capAuth struct {
	mu    sync.Mutex
	max   chains.Amount
	asked []chains.Spend
}

func (a *capAuth) Authorize(_ context.Context, s chains.Spend) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, s)
	if s.All || s.Amount.Rat().Cmp(a.max.Rat()) > 0 {
		return fmt.Errorf("%w: over %s", enclave.ErrPolicy, a.max)
	}
	return nil
}

func (a *capAuth) spends() []chains.Spend {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]chains.Spend(nil), a.asked...)
}

// The connector signs a payment as the spend it moves (asset, amount in
// base units, meta-address, idempotency key), so the enclave's policy
// sees it and can refuse it; a name registration is signed as a no-value
// request, which the enclave decodes and lets through without a spend.
func TestSignsUnderTheSpendItMoves(t *testing.T) {
	e := newEnv(t)
	bg := context.Background()
	max, _ := chains.ParseAmountOf("0.05", 9)
	auth := &capAuth{max: max}
	c, err := solana.New(bg, e.dev.Config(), solana.Options{Store: e.store, Signer: enclave.WithPolicy(e.enc, auth)})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := e.agent("alice", true), e.agent("bob", false)
	if _, err := c.RegisterName(bg, alice.ref, alice.keys.Address, "alice", alice.keys.MetaAddress); err != nil {
		t.Fatalf("registration: %v", err)
	}
	if n := len(auth.spends()); n != 0 {
		t.Fatalf("a registration asked the policy %d times", n)
	}
	if _, err := c.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: "SOL", Amount: amt("0.06"), To: bob.keys.MetaAddress, IdempotencyKey: "over"}); !errors.Is(err, enclave.ErrPolicy) {
		t.Fatalf("over the cap: %v", err)
	}
	if _, err := c.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: "SOL", Amount: amt("0.02"), To: bob.keys.MetaAddress, IdempotencyKey: "within"}); err != nil {
		t.Fatalf("within the cap: %v", err)
	}
	want, _ := chains.ParseAmountOf("0.02", 9)
	got := auth.spends()
	if len(got) != 2 {
		t.Fatalf("spends %+v", got)
	}
	s := got[1]
	if s.Key != "within" || s.AgentID != alice.id || s.Chain != chains.Solana || s.Asset != "SOL" || s.All ||
		s.Recipient != bob.keys.MetaAddress || s.Amount.Units().Cmp(want.Units()) != 0 || s.Amount.Decimals() != 9 {
		t.Fatalf("spend %+v, want 0.02 SOL to bob under key within", s)
	}
	if got[0].Key != "over" {
		t.Fatalf("the refused payment's spend: %+v", got[0])
	}
}
