package relayer_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/relayer"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
)

var root = [32]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

// expand is the documented derivation, computed here independently:
// HKDF-SHA256 with no salt over the root, info = path.
func expand(t *testing.T, path string) []byte {
	t.Helper()
	prk, err := hkdf.Extract(sha256.New, root[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := hkdf.Expand(sha256.New, prk, path, 32)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func provider(t *testing.T) *software.Provider {
	t.Helper()
	p, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestRelayerKeys: a relayer's key is derived at its own path
// (veil/relayer/<chain>/0/account), is no agent's, signs as the relayer
// and is never exported or scanned.
func TestRelayerKeys(t *testing.T) {
	ctx := context.Background()
	p := provider(t)
	set, err := relayer.New(ctx, p, relayer.Config{Chains: []chains.ID{chains.Base, chains.Solana, chains.Base}})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Chains(); len(got) != 2 || !set.Enabled(chains.Base) || set.Enabled(chains.Stellar) {
		t.Fatalf("chains %v", got)
	}
	// EVM: the scalar at the documented path.
	k, err := crypto.ToECDSA(expand(t, "veil/relayer/base/0/account"))
	if err != nil {
		t.Fatal(err)
	}
	base := set.Relayer(chains.Base)
	if want := crypto.PubkeyToAddress(k.PublicKey).Hex(); base.Address != want || !base.Key.IsRelayer() || base.Key.Chain != chains.Base {
		t.Fatalf("base relayer %+v, want address %s", base, want)
	}
	// Solana: the ed25519 seed at the documented path.
	seed := expand(t, "veil/relayer/solana/0/account")
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	if want := solana.PublicKeyFromBytes(pub).String(); set.Relayer(chains.Solana).Address != want {
		t.Fatalf("solana relayer %s, want %s", set.Relayer(chains.Solana).Address, want)
	}
	// No agent's address: an agent id cannot spell the relayer's path.
	for _, agentID := range []string{"relayer", "00000000-0000-0000-0000-000000000001"} {
		a, err := p.DeriveKeys(ctx, agentID, chains.Base, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Address == base.Address {
			t.Fatalf("agent %s has the relayer's address", agentID)
		}
	}
	// Signs as the relayer: a no-value request (an x402 settlement is one)
	// recovers to its address.
	digest := crypto.Keccak256([]byte("x"))
	sig, err := p.Sign(ctx, chains.SignRequest{Key: base.Key, Payload: digest, Spend: &chains.Spend{Key: "gas/1", AgentID: chains.RelayerID, Chain: chains.Base,
		Asset: "ETH", Amount: chains.NewAmount(big.NewInt(1), 18), Recipient: "0x0000000000000000000000000000000000000001"}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := crypto.SigToPub(digest, sig)
	if err != nil || crypto.PubkeyToAddress(*rec).Hex() != base.Address {
		t.Fatalf("signature recovers to %v (%v), want %s", rec, err, base.Address)
	}
	// Never exported, scanned or attested; no one-time key.
	if _, err := p.Export(ctx, chains.RelayerID, chains.Base, 0); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("export of the relayer: %v", err)
	}
	if _, err := p.ScanKeys(ctx, chains.RelayerID, chains.Base, 0); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("scan keys of the relayer: %v", err)
	}
	oneTime := base.Key
	oneTime.EphemeralPub = make([]byte, 33)
	if _, err := p.Sign(ctx, chains.SignRequest{Key: oneTime, Payload: digest, Spend: &chains.Spend{Key: "k", AgentID: chains.RelayerID, Chain: chains.Base,
		Asset: "ETH", Amount: chains.NewAmount(big.NewInt(1), 18), Recipient: "x"}}); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("one-time relayer key: %v", err)
	}
}

type agentsAuth struct{ got []chains.Spend }

func (a *agentsAuth) Authorize(_ context.Context, s chains.Spend) error {
	a.got = append(a.got, s)
	return nil
}

func TestAuthorizer(t *testing.T) {
	ctx := context.Background()
	set, err := relayer.New(ctx, provider(t), relayer.Config{Chains: []chains.ID{chains.Base, chains.Solana},
		MaxSpend: map[chains.ID]*big.Int{chains.Solana: big.NewInt(3_000_000)}})
	if err != nil {
		t.Fatal(err)
	}
	agents := &agentsAuth{}
	auth := set.Authorizer(agents)
	eth := func(s string) chains.Amount {
		a, err := chains.ParseAmountOf(s, 18)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	rel := func(chain chains.ID, asset string, amount chains.Amount) chains.Spend {
		return chains.Spend{Key: "gas/k", AgentID: chains.RelayerID, Chain: chain, Asset: asset, Amount: amount, Recipient: "0xabc"}
	}
	tests := []struct {
		name  string
		spend chains.Spend
		want  string // "" allowed; else a part of the refusal
	}{
		{"gas top-up", rel(chains.Base, "ETH", eth("0.002")), ""},
		{"at the default maximum", rel(chains.Base, "eth", eth("0.01")), ""},
		{"over the default maximum", rel(chains.Base, "ETH", eth("0.0100001")), "at most 0.01 ETH"},
		{"over a configured maximum", rel(chains.Solana, "SOL", chains.NewAmount(big.NewInt(3_000_001), 9)), "at most 0.003 SOL"},
		{"a token", rel(chains.Base, "USDC", chains.NewAmount(big.NewInt(1), 6)), "spends only ETH"},
		{"no relayer on the chain", rel(chains.Polygon, "POL", eth("0.001")), "no relayer is enabled on polygon"},
		{"everything", chains.Spend{Key: "k", AgentID: chains.RelayerID, Chain: chains.Base, Asset: "ETH", All: true, Recipient: "x"}, "names its amount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := auth.Authorize(ctx, tc.spend)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, enclave.ErrPolicy) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a policy refusal with %q", err, tc.want)
			}
		})
	}
	if len(agents.got) != 0 {
		t.Fatalf("relayer spends reached the agents' policy: %v", agents.got)
	}
	// An agent's spend (the fee it pays the relayer included) is the owner's.
	fee := chains.Spend{Key: chains.RelayerFeeKey("w1"), AgentID: "agent-1", Chain: chains.Base, Asset: "USDC", Amount: chains.NewAmount(big.NewInt(10), 6), Recipient: set.Relayer(chains.Base).Address}
	if err := auth.Authorize(ctx, fee); err != nil || len(agents.got) != 1 || agents.got[0].Key != fee.Key {
		t.Fatalf("agent spend: %v, %v", err, agents.got)
	}
}

// TestLowAndMetrics: the readiness warning and the series follow the
// balance and the recent relays' cost.
func TestLowAndMetrics(t *testing.T) {
	ctx := context.Background()
	set, err := relayer.New(ctx, provider(t), relayer.Config{Chains: []chains.ID{chains.Solana}, MinRunway: 10})
	if err != nil {
		t.Fatal(err)
	}
	r := set.Relayer(chains.Solana)
	// veild reports Low as the readiness warning "relayer/<chain>"
	// (cmd/veild relayerChecks; runtime/ready tests warnings).
	warn := func(want string) {
		t.Helper()
		why := set.Low(ctx, chains.Solana)
		if want == "" {
			if why != "" {
				t.Fatalf("low: %s", why)
			}
			return
		}
		if !strings.Contains(why, want) {
			t.Fatalf("low: %q, want %q", why, want)
		}
	}
	warn("does not serve yet")

	balance := big.NewInt(1_000_000_000) // 1 SOL
	var readErr error
	set.SetBalance(chains.Solana, func(context.Context) (*big.Int, error) { return new(big.Int).Set(balance), readErr })
	warn("")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(set.Collector())
	series(t, reg, map[string]float64{"veil_relayer_balance": 1, "veil_relayer_low": 0, "veil_relayer_relays_total": 0}, "veil_relayer_runway_relays")

	// Relays costing 0.2 SOL each: 1 SOL lasts 5 < 10 relays.
	r.Paid(big.NewInt(200_000_000))
	r.Paid(big.NewInt(200_000_000))
	warn("5 relays at the recent mean cost of 0.2 SOL")
	st, _ := set.Status(ctx, chains.Solana)
	if st.Relays != 2 || st.Spent.Int64() != 400_000_000 || st.Runway != 5 {
		t.Fatalf("status %+v", st)
	}
	series(t, reg, map[string]float64{"veil_relayer_runway_relays": 5, "veil_relayer_spent_total": 0.4, "veil_relayer_relays_total": 2, "veil_relayer_low": 1})

	// Under the minimum balance (0.05 SOL by default).
	balance = big.NewInt(40_000_000)
	set.SetBalance(chains.Solana, func(context.Context) (*big.Int, error) { return new(big.Int).Set(balance), readErr })
	warn("holds 0.04 SOL, under its minimum 0.05 SOL")
	// Unreadable.
	readErr = errors.New("connection refused")
	set.SetBalance(chains.Solana, func(context.Context) (*big.Int, error) { return nil, readErr })
	warn("connection refused")
}

// series gathers reg and checks the value of each named series (one per
// name: one chain) and that the absent ones are not exported.
func series(t *testing.T, reg *prometheus.Registry, want map[string]float64, absent ...string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				got[mf.GetName()] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				got[mf.GetName()] = m.GetCounter().GetValue()
			}
		}
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (exported %v), want %v", name, g, ok, v)
		}
	}
	for _, name := range absent {
		if _, ok := got[name]; ok {
			t.Errorf("%s exported, want none", name)
		}
	}
}
