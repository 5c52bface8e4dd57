//go:build !nodevnet

package stellar_test

import (
	"context"
	"errors"
	"math/big"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
)

// relayerEnv makes the enclave's Stellar relayer the sponsor, funded by
// friendbot, and answers its address and the stroops it reported spent.
func relayerEnv(t *testing.T, e *env, fees map[string]string) (string, *int64) {
	t.Helper()
	bg := context.Background()
	pub, err := e.enc.DeriveKeys(bg, chains.RelayerID, chains.Stellar, 0)
	if err != nil {
		t.Fatal(err)
	}
	paid := new(int64)
	e.conn.UseRelayer(&chains.Relayer{Chain: chains.Stellar, Key: chains.RelayerKey(chains.Stellar), Address: pub.Address,
		Spent: func(v *big.Int) { *paid += v.Int64() }, Fees: fees})
	if _, err := e.conn.Fund(bg, pub.Address); err != nil {
		t.Fatal(err)
	}
	return pub.Address, paid
}

// TestReclaimDestination: an unpaid invoice's activated account (USDC and
// XLM) is closed into the relayer, which gets its reserves back and has
// spent only fees; a retry answers the same transaction; an account that
// holds a late payment is refused and stays open; another agent's key
// cannot sign; without a sponsor it is unavailable.
func TestReclaimDestination(t *testing.T) {
	bg := context.Background()
	e := newEnv(t)
	alice := e.agent("alice", false)
	bob := e.agent("bob", false)
	hc := e.conn.Client()
	cfg := e.conn.Config()

	p0, ref0 := oneTime(t, alice)
	if _, err := e.conn.ReclaimDestination(bg, ref0, p0, "reclaim-0"); !errors.Is(err, chains.ErrUnavailable) {
		t.Fatalf("reclaim without a sponsor: %v", err)
	}
	rel, paid := relayerEnv(t, e, nil)
	// What the relayer can spend: its balance less its minimum balance,
	// (2 + subentries + sponsoring − sponsored) × 0.5 XLM.
	relXLM := func() string {
		a, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: rel})
		if err != nil {
			t.Fatal(err)
		}
		var native string
		for _, b := range a.Balances {
			if b.Type == "native" {
				native = b.Balance
			}
		}
		reserves := int64(2+int64(a.SubentryCount)+int64(a.NumSponsoring)-int64(a.NumSponsored)) * 5_000_000
		return sub(native, chains.FormatAmount(big.NewInt(reserves), 7))
	}
	before := relXLM()

	pU, refU := oneTime(t, alice)
	pX, refX := oneTime(t, alice)
	pL, refL := oneTime(t, alice) // paid late: holds XLM
	for _, a := range []struct {
		p   string
		ref chains.KeyRef
		sym string
	}{{pU, refU, "USDC"}, {pX, refX, "XLM"}, {pL, refL, "XLM"}} {
		if _, err := e.conn.PrepareDestination(bg, a.ref, a.p, a.sym, "act/"+a.p); err != nil {
			t.Fatal(err)
		}
	}
	// Reserves locked: 1 + 0.5 (USDC), 1 (XLM), 1 (XLM); fees 4+3+3 ops.
	if got := sub(before, relXLM()); got != "3.5001" {
		t.Fatalf("the relayer spent %s XLM on three activations", got)
	}
	wallet := keypair.MustRandom()
	if _, err := e.conn.Fund(bg, wallet.Address()); err != nil {
		t.Fatal(err)
	}
	if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, pL, "0.3", txnbuild.NativeAsset{}); err != nil {
		t.Fatal(err)
	}

	// Another agent's one-time key cannot sign alice's reclaim.
	wrong := bob.ref
	wrong.EphemeralPub = refU.EphemeralPub
	if _, err := e.conn.ReclaimDestination(bg, wrong, pU, "reclaim-wrong"); err == nil {
		t.Fatal("bob's key signed the reclaim of alice's account")
	}
	// A late payment is the agent's money: not closed.
	if _, err := e.conn.ReclaimDestination(bg, refL, pL, "reclaim/"+pL); !errors.Is(err, chains.ErrNotEmpty) {
		t.Fatalf("reclaim of an account holding 0.3 XLM: %v", err)
	}
	if b := bal(t, e.conn, pL); b.Native != "0.3" {
		t.Fatalf("the late payment's account holds %+v", b)
	}

	for _, a := range []struct {
		p   string
		ref chains.KeyRef
	}{{pU, refU}, {pX, refX}} {
		res, err := e.conn.ReclaimDestination(bg, a.ref, a.p, "reclaim/"+a.p)
		if err != nil || res.TxHash == "" {
			t.Fatalf("reclaim %s: %+v %v", a.p, res, err)
		}
		again, err := e.conn.ReclaimDestination(bg, a.ref, a.p, "reclaim/"+a.p)
		if err != nil || again.TxHash != res.TxHash {
			t.Fatalf("reclaim retried: %+v %v (first %s)", again, err, res.TxHash)
		}
		if _, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.p}); !horizonclient.IsNotFoundError(err) {
			t.Fatalf("the reclaimed account %s is still open: %v", a.p, err)
		}
		// Under another key, a closed account answers nothing to do.
		if res, err := e.conn.ReclaimDestination(bg, a.ref, a.p, "reclaim-again/"+a.p); err != nil || res.TxHash != "" {
			t.Fatalf("reclaim of a closed account: %+v %v", res, err)
		}
	}
	// Back: 2.5 XLM of reserves; fees: 10 activation operations and 3 of
	// the reclaims (changeTrust + merge, merge), 100 stroops each; the
	// late-paid account still holds its 1 XLM.
	if got := sub(before, relXLM()); got != "1.00013" {
		t.Fatalf("after the reclaims the relayer is down %s XLM, want 1.00013 (one reserve still locked, fees)", got)
	}
	if *paid != 1300 {
		t.Fatalf("the relayer reported %d stroops spent, want 1300 (fees)", *paid)
	}
	sa, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: rel})
	if err != nil || sa.NumSponsoring != 2 {
		t.Fatalf("the relayer sponsors %d entries, want 2 (the late-paid account): %v", sa.NumSponsoring, err)
	}
}
