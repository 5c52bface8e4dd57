//go:build !nodevnet

package solanadev_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/veilhq/veil/chains/devnet/solanadev"
)

var bg = context.Background()

func start(t *testing.T, dir string) (*solanadev.Devnet, *rpc.Client) {
	t.Helper()
	d, err := solanadev.Start(bg, solanadev.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return d, rpc.New(d.URL())
}

func key(label string) solanago.PrivateKey {
	s := sha256.Sum256([]byte(label))
	return solanago.PrivateKey(ed25519.NewKeyFromSeed(s[:]))
}

// build signs ixs with the keys (the first pays) at blockhash bh (zero:
// the latest).
func build(t *testing.T, c *rpc.Client, bh solanago.Hash, ixs []solanago.Instruction, keys ...solanago.PrivateKey) *solanago.Transaction {
	t.Helper()
	if bh.IsZero() {
		r, err := c.GetLatestBlockhash(bg, rpc.CommitmentConfirmed)
		if err != nil {
			t.Fatal(err)
		}
		bh = r.Value.Blockhash
	}
	tx, err := solanago.NewTransaction(ixs, bh, solanago.TransactionPayer(keys[0].PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(k solanago.PublicKey) *solanago.PrivateKey {
		for _, p := range keys {
			if p.PublicKey().Equals(k) {
				return &p
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tx
}

func send(c *rpc.Client, tx *solanago.Transaction) error {
	_, err := c.SendTransactionWithOpts(bg, tx, rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
	return err
}

// txErr is the simulation's TransactionError (or the RPC code) as text.
func txErr(t *testing.T, err error) string {
	t.Helper()
	var re *jsonrpc.RPCError
	if !errors.As(err, &re) {
		t.Fatalf("not an RPC error: %v", err)
	}
	if m, ok := re.Data.(map[string]any); ok {
		return fmt.Sprint(m["err"])
	}
	return fmt.Sprint(re.Code)
}

func lamports(t *testing.T, c *rpc.Client, k solanago.PublicKey) uint64 {
	t.Helper()
	r, err := c.GetBalance(bg, k, rpc.CommitmentConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	return r.Value
}

// TestRejections: the devnet refuses what a Solana node refuses at
// preflight, with its errors, and changes nothing then.
func TestRejections(t *testing.T) {
	d, c := start(t, t.TempDir())
	defer d.Close()
	a, b, stranger := key("a"), key("b"), key("stranger")
	if _, err := c.RequestAirdrop(bg, a.PublicKey(), 2*solanago.LAMPORTS_PER_SOL, rpc.CommitmentConfirmed); err != nil {
		t.Fatal(err)
	}
	transfer := func(l uint64, from, to solanago.PublicKey) solanago.Instruction {
		return system.NewTransferInstruction(l, from, to).Build()
	}
	// Bad signature: signed by another key.
	tx := build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(1_000_000, a.PublicKey(), b.PublicKey())}, a)
	tx.Signatures[0] = solanago.SignatureFromBytes(ed25519.Sign(ed25519.PrivateKey(stranger), []byte("x")))
	if got := txErr(t, send(c, tx)); got != "-32003" {
		t.Errorf("bad signature: %s", got)
	}
	// Unknown or expired blockhash.
	tx = build(t, c, solanago.Hash{1, 2, 3}, []solanago.Instruction{transfer(1_000_000, a.PublicKey(), b.PublicKey())}, a)
	if got := txErr(t, send(c, tx)); got != "BlockhashNotFound" {
		t.Errorf("unknown blockhash: %s", got)
	}
	old := build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(1_000_001, a.PublicKey(), b.PublicKey())}, a)
	if err := d.ExpireBlockhashes(bg); err != nil {
		t.Fatal(err)
	}
	if got := txErr(t, send(c, old)); got != "BlockhashNotFound" {
		t.Errorf("expired blockhash: %s", got)
	}
	if v, err := c.IsBlockhashValid(bg, old.Message.RecentBlockhash, rpc.CommitmentConfirmed); err != nil || v.Value {
		t.Errorf("isBlockhashValid(expired) = %v, %v", v, err)
	}
	// Below the rent-exempt minimum of a new account.
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(890_879, a.PublicKey(), b.PublicKey())}, a)
	if got := txErr(t, send(c, tx)); got != "map[InsufficientFundsForRent:map[account_index:1]]" {
		t.Errorf("below rent: %s", got)
	}
	// More than the balance.
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(3*solanago.LAMPORTS_PER_SOL, a.PublicKey(), b.PublicKey())}, a)
	if got := txErr(t, send(c, tx)); got != "map[InstructionError:[0 map[Custom:1]]]" {
		t.Errorf("insufficient lamports: %s", got)
	}
	// A fee payer that does not exist.
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(1, stranger.PublicKey(), b.PublicKey())}, stranger)
	if got := txErr(t, send(c, tx)); got != "AccountNotFound" {
		t.Errorf("no fee payer: %s", got)
	}
	// A missing signature for the source of a transfer.
	ix := solanago.NewInstruction(solanago.SystemProgramID, solanago.AccountMetaSlice{solanago.Meta(b.PublicKey()).WRITE(), solanago.Meta(a.PublicKey()).WRITE()},
		[]byte{2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{ix}, a)
	if got := txErr(t, send(c, tx)); got != "map[InstructionError:[0 MissingRequiredSignature]]" {
		t.Errorf("unsigned source: %s", got)
	}
	// Token transfer beyond the balance.
	if err := c.RPCCallForInto(bg, new(string), "veilFund", []any{a.PublicKey().String()}); err != nil {
		t.Fatal(err)
	}
	ataA, _, _ := solanago.FindAssociatedTokenAddress(a.PublicKey(), solanadev.USDCMint)
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{token.NewTransferInstruction(10_001_000_000, ataA, ataA, a.PublicKey(), nil).Build()}, a)
	if got := txErr(t, send(c, tx)); got != "map[InstructionError:[0 map[Custom:1]]]" {
		t.Errorf("token insufficient: %s", got)
	}
	// Nothing above changed a's balance (preflight failures charge nothing).
	before := lamports(t, c, a.PublicKey())
	// A success, then the same transaction again: AlreadyProcessed.
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(solanago.LAMPORTS_PER_SOL, a.PublicKey(), b.PublicKey())}, a)
	if err := send(c, tx); err != nil {
		t.Fatal(err)
	}
	if got := txErr(t, send(c, tx)); got != "AlreadyProcessed" {
		t.Errorf("duplicate: %s", got)
	}
	if got := lamports(t, c, a.PublicKey()); got != before-solanago.LAMPORTS_PER_SOL-5000 {
		t.Fatalf("a: %d, want %d", got, before-solanago.LAMPORTS_PER_SOL-5000)
	}
	if got := lamports(t, c, b.PublicKey()); got != solanago.LAMPORTS_PER_SOL {
		t.Fatalf("b: %d", got)
	}
	// skipPreflight: a transaction that fails in execution lands as failed,
	// its fee charged.
	tx = build(t, c, solanago.Hash{}, []solanago.Instruction{transfer(100*solanago.LAMPORTS_PER_SOL, a.PublicKey(), b.PublicKey())}, a)
	sig, err := c.SendTransactionWithOpts(bg, tx, rpc.TransactionOpts{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.GetSignatureStatuses(bg, true, sig)
	if err != nil || st.Value[0] == nil || st.Value[0].Err == nil {
		t.Fatalf("failed transaction's status: %+v, %v", st, err)
	}
}

// TestPersists: balances, token accounts and history survive a restart.
func TestPersists(t *testing.T) {
	dir := t.TempDir()
	d, c := start(t, dir)
	a := key("a")
	var sig string
	if err := c.RPCCallForInto(bg, &sig, "veilFund", []any{a.PublicKey().String()}); err != nil {
		t.Fatal(err)
	}
	slot := d.Slot()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, c = start(t, dir)
	defer d.Close()
	if got := lamports(t, c, a.PublicKey()); got != solanadev.FaucetSOL*solanago.LAMPORTS_PER_SOL {
		t.Fatalf("after restart: %d lamports", got)
	}
	ata, _, _ := solanago.FindAssociatedTokenAddress(a.PublicKey(), solanadev.USDCMint)
	tb, err := c.GetTokenAccountBalance(bg, ata, rpc.CommitmentConfirmed)
	if err != nil || tb.Value.UiAmountString != "10000" {
		t.Fatalf("token balance after restart: %+v, %v", tb, err)
	}
	sigs, err := c.GetSignaturesForAddress(bg, a.PublicKey())
	if err != nil || len(sigs) != 1 || sigs[0].Signature.String() != sig {
		t.Fatalf("history after restart: %+v, %v", sigs, err)
	}
	if d.Slot() < slot {
		t.Fatalf("slot went back: %d < %d", d.Slot(), slot)
	}
}
