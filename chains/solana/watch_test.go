//go:build !nodevnet

package solana_test

import (
	"sort"
	"testing"

	solanago "github.com/gagliardetto/solana-go"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/solana/solanapaytest"
)

func newKey() solanago.PublicKey { return solanago.NewWallet().PublicKey() }

// TestTransfersTo: the payments of pending invoices are found as Solana
// Pay describes — by the reference a wallet lists in its transfer, or by
// the account the payment reaches when it lists none — in SOL and in
// USDC (the wallet creating the token account); a failed transaction, a
// payment to an address nobody watches and a transaction already seen
// give nothing.
func TestTransfersTo(t *testing.T) {
	e := newEnv(t)
	key := solanago.NewWallet().PrivateKey
	if _, err := e.conn.Fund(bg, key.PublicKey().String()); err != nil {
		t.Fatal(err)
	}
	mint := e.dev.Config().Tokens[0].Mint
	solInv, solRef := newKey(), newKey()
	usdcInv, usdcRef := newKey(), newKey()
	plainInv, unusedRef := newKey(), newKey()
	failInv, failRef := newKey(), newKey()
	stranger := newKey()
	send := func(skipPreflight bool, r solanapaytest.Request, dec int) string {
		t.Helper()
		ixs, err := r.Instructions(key.PublicKey(), dec)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := solanapaytest.Send(bg, e.conn.Client(), key, skipPreflight, ixs...)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	sol := func(to solanago.PublicKey, amount string, refs ...solanago.PublicKey) solanapaytest.Request {
		return solanapaytest.Request{Recipient: to, Amount: amount, References: refs}
	}
	paySOL := send(false, sol(solInv, "0.5", solRef), 9)
	payUSDC := send(false, solanapaytest.Request{Recipient: usdcInv, Amount: "2.5", Token: solanago.MustPublicKeyFromBase58(mint), References: []solanago.PublicKey{usdcRef}}, 6)
	payPlain := send(false, sol(plainInv, "0.01"), 9)
	failed := send(true, sol(failInv, "0.0005", failRef), 9) // below rent exemption: fails on chain
	send(false, sol(stranger, "0.01"), 9)

	watches := []chains.Watch{
		{PayTo: solInv.String(), Asset: "SOL", Reference: solRef.String()},
		{PayTo: usdcInv.String(), Asset: "USDC", Reference: usdcRef.String()},
		{PayTo: plainInv.String(), Asset: "SOL", Reference: unusedRef.String()},
		{PayTo: failInv.String(), Asset: "SOL", Reference: failRef.String()},
	}
	got, read, err := e.conn.TransfersTo(bg, watches, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		solInv.String() + " SOL 0.5 " + paySOL:      true,
		usdcInv.String() + " USDC 2.5 " + payUSDC:   true,
		plainInv.String() + " SOL 0.01 " + payPlain: true,
	}
	if len(got) != len(want) {
		t.Fatalf("transfers %+v, want %v", got, want)
	}
	for _, tr := range got {
		if !want[tr.To+" "+tr.Asset+" "+tr.Amount+" "+tr.TxHash] {
			t.Errorf("unexpected transfer %+v", tr)
		}
	}
	sort.Strings(read)
	wantRead := []string{paySOL, payUSDC, payPlain, failed}
	sort.Strings(wantRead)
	if len(read) != len(wantRead) {
		t.Fatalf("read %v, want %v", read, wantRead)
	}
	for i := range read {
		if read[i] != wantRead[i] {
			t.Fatalf("read %v, want %v", read, wantRead)
		}
	}
	seen := map[string]bool{}
	for _, h := range read {
		seen[h] = true
	}
	if again, read, err := e.conn.TransfersTo(bg, watches, func(h string) bool { return seen[h] }); err != nil || len(again) != 0 || len(read) != 0 {
		t.Fatalf("second look: %+v read %v %v", again, read, err)
	}
	// A second payment to a partly paid invoice is new.
	more := send(false, sol(solInv, "0.1", solRef), 9)
	again, _, err := e.conn.TransfersTo(bg, watches, func(h string) bool { return seen[h] })
	if err != nil || len(again) != 1 || again[0].TxHash != more || again[0].Amount != "0.1" || again[0].To != solInv.String() {
		t.Fatalf("after a second payment: %+v %v", again, err)
	}
}
