//go:build !nodevnet

package scanner_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/persistence"
)

// TestInstantNotifyOnEveryChainFamily: on a devnet of each chain family
// (EVM, Stellar, Solana) alice pays bob.veil in a chat; bob is notified
// from the confirmed transaction, read by the real connector's
// AnnouncementsIn, before any scan, and the scan of the chain delivers
// the payment again without a second payment or notification.
func TestInstantNotifyOnEveryChainFamily(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		chain   chains.ID
		message string
		connect func(t *testing.T, store persistence.Store, signer chains.Signer) chains.Connector
	}{
		{chains.Ethereum, "send 0.5 eth to bob.veil", func(t *testing.T, store persistence.Store, signer chains.Signer) chains.Connector {
			d, err := devnet.StartEVM(context.Background(), devnet.EVMOptions{Chains: []chains.ID{chains.Ethereum}, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close() })
			cfg, _ := d.Config(chains.Ethereum)
			c, err := evm.New(context.Background(), cfg, evm.Options{Store: store, Signer: signer, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}},
		{chains.Stellar, "send 25 xlm to bob.veil", func(t *testing.T, store persistence.Store, signer chains.Signer) chains.Connector {
			d, err := stellardev.Start(context.Background(), stellardev.Options{Dir: t.TempDir(), Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close() })
			c, err := stellar.New(context.Background(), d.Config(), stellar.Options{Store: store, Signer: signer, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{chains.Solana, "send 0.5 sol to bob.veil", func(t *testing.T, store persistence.Store, signer chains.Signer) chains.Connector {
			d, err := solanadev.Start(context.Background(), solanadev.Options{Dir: t.TempDir(), Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close() })
			c, err := solana.New(context.Background(), d.Config(), solana.Options{Store: store, Signer: signer, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	} {
		t.Run(string(tc.chain), func(t *testing.T) {
			env := moneytest.NewEnvOn(t, moneytest.NewClock(time.Now()), func(store persistence.Store, signer chains.Signer) chains.Connector {
				return tc.connect(t, store, signer)
			})
			inst := withInstant(t, env)
			alice, bob := env.CreateAgent("alice"), env.CreateAgent("bob")
			if !strings.HasPrefix(alice.Funding[string(tc.chain)], agent.SetupDone) {
				t.Fatalf("alice's funding: %q", alice.Funding[string(tc.chain)])
			}
			v, err := env.Host.Request(ctx, alice.ID, &agent.Chat{AccountID: moneytest.Account, Message: tc.message, IdempotencyKey: "pay-bob"})
			if err != nil {
				t.Fatal(err)
			}
			reply := v.(*agent.ChatReply)
			if len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Status != "success" {
				t.Fatalf("chat: %+v", reply)
			}
			inst.Drain()
			if n := moneytest.Count(env.Inbox(bob.ID), agent.NotePaymentReceived); n != 1 {
				t.Fatalf("bob has %d payment_received before any scan, want 1", n)
			}
			ps, err := state.NewPayments(env.Store, bob.ID, nil).Received(ctx, tc.chain)
			if err != nil || len(ps) != 1 || ps[0].TxHash == "" || !strings.Contains(reply.ToolCalls[0].Detail, ps[0].TxHash) {
				t.Fatalf("bob's payments %+v %v; alice's payment %s", ps, err, reply.ToolCalls[0].Detail)
			}
			if rep := scan(t, newScanner(env, nil)); rep.Matches != 1 || rep.New != 0 {
				t.Fatalf("scan after the instant notify: %+v", rep)
			}
			if n := moneytest.Count(env.Inbox(bob.ID), agent.NotePaymentReceived); n != 1 {
				t.Fatalf("bob has %d payment_received after the scan", n)
			}
		})
	}
}
