//go:build !nodevnet

package console

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
)

// TestExplorerOnEd25519Devnets reads a real stealth payment on the Stellar
// and Solana devnets: the transaction's sender, its announcement and what
// it delivered, the sender's address page, the ledger page; bad input and
// unknown transactions answer ErrBadInput and chains.ErrNotFound. (The EVM
// explorer is driven by the console's browser test.)
func TestExplorerOnEd25519Devnets(t *testing.T) {
	for _, tc := range []struct {
		chain   chains.ID
		start   func(t *testing.T, dir string, st persistence.Store, enc *software.Provider) (Explorer, chains.Connector)
		amount  string
		unknown string
	}{
		{chains.Stellar, func(t *testing.T, dir string, st persistence.Store, enc *software.Provider) (Explorer, chains.Connector) {
			dev, err := stellardev.Start(context.Background(), stellardev.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = dev.Close() })
			c, err := stellar.New(context.Background(), dev.Config(), stellar.Options{Store: st, Signer: enc})
			if err != nil {
				t.Fatal(err)
			}
			return NewStellar(c), c
		}, "5", "00000000000000000000000000000000000000000000000000000000000000aa"},
		{chains.Solana, func(t *testing.T, dir string, st persistence.Store, enc *software.Provider) (Explorer, chains.Connector) {
			dev, err := solanadev.Start(context.Background(), solanadev.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = dev.Close() })
			c, err := solana.New(context.Background(), dev.Config(), solana.Options{Store: st, Signer: enc})
			if err != nil {
				t.Fatal(err)
			}
			return NewSolana(c), c
		}, "0.5", "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"},
	} {
		t.Run(string(tc.chain), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			var root [32]byte
			_, _ = rand.Read(root[:])
			enc, err := software.New(root)
			if err != nil {
				t.Fatal(err)
			}
			st, err := persistence.OpenBolt(filepath.Join(dir, "veil.db"), persistence.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			ex, conn := tc.start(t, filepath.Join(dir, "devnet"), st, enc)
			alice, err := enc.DeriveKeys(ctx, "alice", tc.chain, 0)
			if err != nil {
				t.Fatal(err)
			}
			bob, err := enc.DeriveKeys(ctx, "bob", tc.chain, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Fund(ctx, alice.Address); err != nil {
				t.Fatal(err)
			}
			amount, err := chains.ParseAmountOf(tc.amount, 18) // the connector rescales it to its decimals
			if err != nil {
				t.Fatal(err)
			}
			res, err := conn.SendStealth(ctx, chains.KeyRef{AgentID: "alice", Chain: tc.chain}, alice.Address,
				chains.SendRequest{Chain: tc.chain, Asset: chainstest.Asset(conn, ""), Amount: amount, To: bob.MetaAddress, IdempotencyKey: "pay-1"})
			if err != nil {
				t.Fatal(err)
			}

			tx, err := ex.Tx(ctx, res.TxHash)
			if err != nil {
				t.Fatal(err)
			}
			if tx.Chain != tc.chain || tx.Hash != res.TxHash || tx.Status != "success" || tx.From != alice.Address || (tc.chain == chains.Stellar && tx.Block == 0) || len(tx.Announcements) != 1 {
				t.Fatalf("tx = %+v", tx)
			}
			ann := tx.Announcements[0]
			if ann.Amount != tc.amount || ann.Asset != tc.chain.NativeAsset() || ann.StealthAddress == "" || len(ann.EphemeralPubKey) < 10 {
				t.Fatalf("announcement = %+v", ann)
			}
			if !slices.ContainsFunc(tx.Transfers, func(x chains.Transfer) bool { return x.To == ann.StealthAddress && x.Amount == tc.amount }) {
				t.Fatalf("transfers %+v lack %s to %s", tx.Transfers, tc.amount, ann.StealthAddress)
			}

			a, err := ex.Address(ctx, alice.Address)
			if err != nil {
				t.Fatal(err)
			}
			if a.Address != alice.Address || a.Balance.Native == "" || !slices.ContainsFunc(a.Txs, func(s TxSummary) bool { return s.Hash == res.TxHash }) {
				t.Fatalf("address = %+v", a)
			}
			head, err := ex.Head(ctx)
			if err != nil || head < tx.Block {
				t.Fatalf("head %d %v, tx in %d", head, err, tx.Block)
			}
			b, err := ex.Block(ctx, tx.Block)
			switch tc.chain {
			case chains.Stellar:
				if err != nil || !slices.ContainsFunc(b.Txs, func(s TxSummary) bool { return s.Hash == res.TxHash }) {
					t.Fatalf("ledger %d = %+v %v", tx.Block, b, err)
				}
			default:
				if !errors.Is(err, chains.ErrNotFound) {
					t.Fatalf("solana block = %v, want not found", err)
				}
			}

			if _, err := ex.Tx(ctx, "not a hash!"); !errors.Is(err, ErrBadInput) {
				t.Fatalf("bad hash: %v", err)
			}
			if _, err := ex.Tx(ctx, tc.unknown); !errors.Is(err, chains.ErrNotFound) {
				t.Fatalf("unknown tx: %v", err)
			}
			if _, err := ex.Address(ctx, "0x1234"); !errors.Is(err, ErrBadInput) {
				t.Fatalf("bad address: %v", err)
			}
		})
	}
}
