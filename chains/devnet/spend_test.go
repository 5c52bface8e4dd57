//go:build !nodevnet

package devnet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
)

// capAuth is an Authorizer that records every spend and refuses one over
// max.
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

// The Stellar and Solana connectors sign a payment as the spend it moves
// (asset, amount in base units, meta-address, idempotency key), so the
// enclave's policy sees it and can refuse it; a name registration is
// signed as a no-value request, which the enclave decodes and lets through
// without a spend. (The EVM connector's: chains/evm, cmd/veild.)
func TestEd25519ConnectorsSignUnderTheSpendTheyMove(t *testing.T) {
	cases := []struct {
		chain               chains.ID
		asset               string
		decimals            int
		limit, over, within string
		connect             func(t *testing.T, dir string, store persistence.Store, signer chains.Signer) chains.Connector
	}{
		{chains.Stellar, "XLM", 7, "5", "6", "2", func(t *testing.T, dir string, store persistence.Store, signer chains.Signer) chains.Connector {
			dev, err := stellardev.Start(context.Background(), stellardev.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = dev.Close() })
			c, err := stellar.New(context.Background(), dev.Config(), stellar.Options{Store: store, Signer: signer})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{chains.Solana, "SOL", 9, "0.05", "0.06", "0.02", func(t *testing.T, dir string, store persistence.Store, signer chains.Signer) chains.Connector {
			dev, err := solanadev.Start(context.Background(), solanadev.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = dev.Close() })
			c, err := solana.New(context.Background(), dev.Config(), solana.Options{Store: store, Signer: signer})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	}
	for _, tc := range cases {
		t.Run(string(tc.chain), func(t *testing.T) {
			bg := context.Background()
			dir := t.TempDir()
			var root [32]byte
			_, _ = rand.Read(root[:])
			enc, err := software.New(root)
			if err != nil {
				t.Fatal(err)
			}
			store, err := persistence.OpenBolt(filepath.Join(dir, "veil.db"), persistence.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = store.Close() })
			amount := func(s string) chains.Amount {
				a, err := chains.ParseAmountOf(s, tc.decimals)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			auth := &capAuth{max: amount(tc.limit)}
			c := tc.connect(t, dir, store, enclave.WithPolicy(enc, auth))
			alice, err := enc.DeriveKeys(bg, "alice", tc.chain, 0)
			if err != nil {
				t.Fatal(err)
			}
			bob, err := enc.DeriveKeys(bg, "bob", tc.chain, 0)
			if err != nil {
				t.Fatal(err)
			}
			ref := chains.KeyRef{AgentID: "alice", Chain: tc.chain}
			if _, err := c.Fund(bg, alice.Address); err != nil {
				t.Fatal(err)
			}
			if _, err := c.RegisterName(bg, ref, alice.Address, "alice", alice.MetaAddress); err != nil {
				t.Fatalf("registration: %v", err)
			}
			if n := len(auth.spends()); n != 0 {
				t.Fatalf("a registration asked the policy %d times", n)
			}
			send := func(amt, key string) error {
				_, err := c.SendStealth(bg, ref, alice.Address, chains.SendRequest{Chain: tc.chain, Asset: chainstest.Asset(c, tc.asset), Amount: amount(amt), To: bob.MetaAddress, IdempotencyKey: key})
				return err
			}
			if err := send(tc.over, "over"); !errors.Is(err, enclave.ErrPolicy) {
				t.Fatalf("over the cap: %v", err)
			}
			if err := send(tc.within, "within"); err != nil {
				t.Fatalf("within the cap: %v", err)
			}
			got := auth.spends()
			if len(got) != 2 {
				t.Fatalf("spends %+v", got)
			}
			want := amount(tc.within)
			s := got[1]
			if s.Key != "within" || s.AgentID != "alice" || s.Chain != tc.chain || s.Asset != tc.asset || s.All ||
				s.Recipient != bob.MetaAddress || s.Amount.Units().Cmp(want.Units()) != 0 || s.Amount.Decimals() != tc.decimals {
				t.Fatalf("spend %+v, want %s %s to bob under key within", s, tc.within, tc.asset)
			}
			if got[0].Key != "over" {
				t.Fatalf("the refused payment's spend: %+v", got[0])
			}
		})
	}
}
