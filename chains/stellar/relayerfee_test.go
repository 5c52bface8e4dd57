//go:build !nodevnet

package stellar_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/stellar"
)

// recSigner records the sign requests it passes to the enclave.
type recSigner struct {
	chains.Signer
	mu   sync.Mutex
	reqs []chains.SignRequest
}

func (r *recSigner) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Signer.Sign(ctx, req)
}

// fees are the relayer fee spends signed with a spend of key.
func (r *recSigner) fees(key string) []chains.Spend {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []chains.Spend
	for _, q := range r.reqs {
		if q.Spend != nil && q.Spend.Key == key && q.Fee != nil {
			out = append(out, *q.Fee)
		}
	}
	return out
}

// TestRelayerFee: a withdrawal from an account the relayer sponsors pays
// the relayer's fee out of the amount moved, in the withdrawal's asset, in
// the same transaction, signed as the agent's second spend (key
// relayfee/<key>, recipient the relayer): USDC (the default fee, the
// relayer's trustline added by the first) by amount and everything, XLM
// with a configured fee; an amount not above the fee is refused with
// nothing moved; a sponsor that is not the relayer takes none.
func TestRelayerFee(t *testing.T) {
	bg := context.Background()
	e := newEnv(t)
	rs := &recSigner{Signer: e.enc}
	conn, err := stellar.New(bg, e.dev.Config(), stellar.Options{Store: e.store, Signer: rs})
	if err != nil {
		t.Fatal(err)
	}
	e.conn = conn
	alice := e.agent("alice", false)
	hc := conn.Client()
	cfg := conn.Config()
	usdc := txnbuild.CreditAsset{Code: "USDC", Issuer: cfg.Assets[0].Issuer}
	rel, _ := relayerEnv(t, e, map[string]string{"USDC": "0.01", "XLM": "0.05"})
	wallet := keypair.MustRandom()
	if _, err := conn.Fund(bg, wallet.Address()); err != nil {
		t.Fatal(err)
	}
	claimFriendbotUSDC(t, e, wallet, usdc)
	relBefore := bal(t, conn, rel)

	pU, refU := oneTime(t, alice)
	pX, refX := oneTime(t, alice)
	if _, err := conn.PrepareDestination(bg, refU, pU, "USDC", "act-u"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PrepareDestination(bg, refX, pX, "XLM", "act-x"); err != nil {
		t.Fatal(err)
	}
	if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, pU, "3", usdc); err != nil {
		t.Fatal(err)
	}
	if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, pX, "2", txnbuild.NativeAsset{}); err != nil {
		t.Fatal(err)
	}

	// Not above the fee: refused, nothing signed or moved.
	if _, err := conn.Withdraw(bg, refU, chains.WithdrawRequest{From: pU, To: wallet.Address(), Asset: chainstest.Asset(conn, "USDC"), Amount: amt("0.01"), IdempotencyKey: "w-tiny"}); !errors.Is(err, chains.ErrInsufficientFunds) {
		t.Fatalf("a withdrawal of the fee alone: %v", err)
	}
	w0 := bal(t, conn, wallet.Address())
	if _, err := conn.Withdraw(bg, refU, chains.WithdrawRequest{From: pU, To: wallet.Address(), Asset: chainstest.Asset(conn, "USDC"), Amount: amt("2"), IdempotencyKey: "w-2"}); err != nil {
		t.Fatalf("withdraw 2 USDC: %v", err)
	}
	w1 := bal(t, conn, wallet.Address())
	if got := sub(w1.Tokens["USDC"], w0.Tokens["USDC"]); got != "1.99" {
		t.Fatalf("the destination got %s USDC of 2, want 1.99 (the relayer's fee 0.01 out of it)", got)
	}
	// (bal counts the USDC friendbot left the relayer to claim.)
	if got := sub(bal(t, conn, rel).Tokens["USDC"], relBefore.Tokens["USDC"]); got != "0.01" {
		t.Fatalf("the relayer holds %s USDC, want its fee 0.01", got)
	}
	if f := rs.fees("w-2"); len(f) == 0 || f[0].Key != chains.RelayerFeeKey("w-2") || f[0].Recipient != rel || f[0].Asset != "USDC" || f[0].Amount.String() != "0.01" || f[0].AgentID != alice.id {
		t.Fatalf("the fee's spend: %+v", f)
	}
	// Everything: the rest less the fee; the account closes.
	if _, err := conn.Withdraw(bg, refU, chains.WithdrawRequest{From: pU, To: wallet.Address(), Asset: chainstest.Asset(conn, "USDC"), All: true, IdempotencyKey: "w-all"}); err != nil {
		t.Fatalf("withdraw all USDC: %v", err)
	}
	if got := sub(bal(t, conn, wallet.Address()).Tokens["USDC"], w1.Tokens["USDC"]); got != "0.99" {
		t.Fatalf("the destination got %s USDC of the last 1, want 0.99", got)
	}
	if _, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: pU}); !horizonclient.IsNotFoundError(err) {
		t.Fatalf("the emptied account is open: %v", err)
	}
	// XLM, everything: 2 XLM less the configured 0.05.
	w2 := bal(t, conn, wallet.Address())
	if _, err := conn.Withdraw(bg, refX, chains.WithdrawRequest{From: pX, To: wallet.Address(), Asset: chainstest.Asset(conn, "XLM"), All: true, IdempotencyKey: "w-xlm"}); err != nil {
		t.Fatalf("withdraw all XLM: %v", err)
	}
	if got := sub(bal(t, conn, wallet.Address()).Native, w2.Native); got != "1.95" {
		t.Fatalf("the destination got %s XLM of 2, want 1.95", got)
	}
	relAfter := bal(t, conn, rel)
	if got := sub(relAfter.Tokens["USDC"], relBefore.Tokens["USDC"]); got != "0.02" {
		t.Fatalf("the relayer got %s USDC, want two fees (0.02)", got)
	}
	// XLM: +0.05 fee, less 100 stroops for each of 4+3 activation and
	// 3+4+2 withdrawal operations (its trustline, added by the first, is a
	// reserve of its own, locked, not spent).
	if got := sub(relAfter.Native, relBefore.Native); got != "0.04984" {
		t.Fatalf("the relayer's XLM changed by %s, want +0.05 fee − 0.00016 fees = 0.04984", got)
	}

	// A sponsor that is not the relayer takes no fee.
	var seed [32]byte
	seed[0] = 9
	sp := stellar.KeySponsor(seed)
	conn.SetSponsor(sp)
	if _, err := conn.Fund(bg, sp.Address()); err != nil {
		t.Fatal(err)
	}
	pK, refK := oneTime(t, alice)
	if _, err := conn.PrepareDestination(bg, refK, pK, "USDC", "act-k"); err != nil {
		t.Fatal(err)
	}
	if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, pK, "1", usdc); err != nil {
		t.Fatal(err)
	}
	w3 := bal(t, conn, wallet.Address())
	if _, err := conn.Withdraw(bg, refK, chains.WithdrawRequest{From: pK, To: wallet.Address(), Asset: chainstest.Asset(conn, "USDC"), All: true, IdempotencyKey: "w-k"}); err != nil {
		t.Fatal(err)
	}
	if got := sub(bal(t, conn, wallet.Address()).Tokens["USDC"], w3.Tokens["USDC"]); got != "1" || len(rs.fees("w-k")) != 0 {
		t.Fatalf("without the relayer the destination got %s USDC (want 1), fee spends %+v", got, rs.fees("w-k"))
	}
}
