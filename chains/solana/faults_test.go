//go:build !nodevnet

package solana_test

import (
	"errors"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/internal/settletest"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/internal/faultproxy"
)

// TestPaymentFaults: with faultproxy.HTTP between the connector and
// the RPC node, the submission of a payment meets a fault (issue 32 item 7).
// The caller is told the outcome is unknown with the recorded hash (never
// ErrUnavailable); the periodic pass finds or resubmits the same
// transaction and reports its settlement once; a retry under the key
// answers it and sends nothing new: exactly one transfer on chain.
func TestPaymentFaults(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-0000000000fa", true)
	submit := faultproxy.BodyContains(`"sendTransaction"`)
	for i, f := range []struct {
		name  string
		fault faultproxy.Fault
		// restart: the node restarts (on the same state, at a new
		// address) while the payment's request is held, which then
		// reaches the restarted node.
		restart bool
	}{
		{"answer lost", faultproxy.AnswerLost, false},
		{"request dropped", faultproxy.RequestDropped, false},
		{"node hangs", faultproxy.Hang, false},
		{"node restarted mid-payment", faultproxy.Hang, true},
	} {
		t.Run(f.name, func(t *testing.T) {
			bob := e.agent("00000000-0000-0000-0000-0000000000b"+string(rune('0'+i)), false)
			proxy, err := faultproxy.NewHTTP(e.dev.Config().RPCURL)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			cfg := e.dev.Config()
			cfg.RPCURL = proxy.URL()
			var settled settletest.Recorder
			c, err := solana.New(bg, cfg, solana.Options{Store: e.store, Signer: e.enc, OnSettled: settled.On})
			if err != nil {
				t.Fatal(err)
			}
			key := "fault-" + f.name
			pay := func() (chains.TxResult, error) {
				return c.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(c, "SOL"), Amount: amt("0.3"), To: bob.keys.MetaAddress, IdempotencyKey: key})
			}
			hit, done := proxy.Arm(f.fault, submit)
			type answer struct {
				r   chains.TxResult
				err error
			}
			first := make(chan answer, 1)
			go func() { r, err := pay(); first <- answer{r, err} }()
			<-hit
			if f.restart {
				if err := e.dev.Close(); err != nil {
					t.Fatal(err)
				}
				e.startDevnet()
				e.conn = e.connect()
				if err := proxy.SetTarget(e.dev.Config().RPCURL); err != nil {
					t.Fatal(err)
				}
			}
			if f.fault == faultproxy.Hang {
				proxy.Release()
			}
			<-done
			a := <-first
			var ou *chains.OutcomeUnknownError
			if !errors.As(a.err, &ou) || errors.Is(a.err, chains.ErrUnavailable) || ou.TxHash == "" || ou.TxHash != a.r.TxHash || ou.IdempotencyKey != key {
				t.Fatalf("payment = %+v, %v; want ErrOutcomeUnknown with the recorded hash", a.r, a.err)
			}
			if got := settled.Of(key); len(got) != 0 {
				t.Fatalf("settled before the outcome was known: %+v", got)
			}
			// The periodic pass settles it, once.
			for range 3 {
				if err := c.Maintain(bg, false); err != nil {
					t.Fatal(err)
				}
			}
			got := settled.Of(key)
			if len(got) != 1 || got[0].Status != chains.SettlementConfirmed || got[0].TxHash != ou.TxHash || got[0].AgentID != alice.id {
				t.Fatalf("settlements %+v; want one confirmed of %s", got, ou.TxHash)
			}
			if r, err := pay(); err != nil || r.TxHash != ou.TxHash {
				t.Fatalf("retry = %+v, %v; want %s", r, err, ou.TxHash)
			}
			if mine, _ := e.find(bob, ""); len(mine) != 1 {
				t.Fatalf("%d payments to bob on chain; want exactly one", len(mine))
			}
			if len(settled.Of(key)) != 1 {
				t.Fatalf("the retry settled again: %+v", settled.Of(key))
			}
		})
	}
}
