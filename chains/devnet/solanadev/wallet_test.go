//go:build !nodevnet

package solanadev_test

import (
	"testing"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/solana/solanapaytest"
)

// TestWalletMethods: what a Solana Pay wallet and merchant ask a node, as
// a real node answers it: getMultipleAccounts (null for a missing
// account, the others as getAccountInfo), and getSignaturesForAddress of a
// reference key, which no instruction reads or writes but the transfer
// lists (the node indexes every account key of a transaction).
func TestWalletMethods(t *testing.T) {
	_, c := start(t, t.TempDir())
	a := key("wallet")
	if err := c.RPCCallForInto(bg, new(string), "veilFund", []any{a.PublicKey().String()}); err != nil {
		t.Fatal(err)
	}
	missing := key("missing").PublicKey()
	res, err := c.GetMultipleAccountsWithOpts(bg, []solanago.PublicKey{a.PublicKey(), missing, solanadev.USDCMint}, &rpc.GetMultipleAccountsOpts{Encoding: solanago.EncodingBase64})
	if err != nil || len(res.Value) != 3 || res.Value[0] == nil || res.Value[0].Lamports != solanadev.FaucetSOL*solanago.LAMPORTS_PER_SOL ||
		res.Value[1] != nil || res.Value[2] == nil || !res.Value[2].Owner.Equals(solanago.TokenProgramID) || len(res.Value[2].Data.GetBinary()) != 82 {
		t.Fatalf("getMultipleAccounts: %+v %v", res, err)
	}
	ref, to := key("reference").PublicKey(), key("recipient").PublicKey()
	ixs, err := solanapaytest.Request{Recipient: to, Amount: "0.5", References: []solanago.PublicKey{ref}}.Instructions(a.PublicKey(), 9)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := solanapaytest.Send(bg, c, a, false, ixs...)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := c.GetSignaturesForAddress(bg, ref)
	if err != nil || len(sigs) != 1 || sigs[0].Signature.String() != sig || sigs[0].Err != nil {
		t.Fatalf("getSignaturesForAddress(reference) = %+v %v, want %s", sigs, err, sig)
	}
	if sigs, err := c.GetSignaturesForAddress(bg, key("nobody").PublicKey()); err != nil || len(sigs) != 0 {
		t.Fatalf("an unused key's signatures: %+v %v", sigs, err)
	}
}
