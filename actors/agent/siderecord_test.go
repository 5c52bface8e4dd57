package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// The relayer's fee a withdrawal pays and the native rest an
// everything-withdrawal sends after it move value: each has a payment
// record of its own (issue 32 item 1), relayer_fee under "relayfee/<key>"
// and remainder under "rest/<key>", linked to the withdrawal (forPayment),
// listed with the agent's payments and moved by its settlement. A fee in
// the withdrawal's own transaction (Stellar, Solana) shares its hash and
// settles with it.
func TestWithdrawalFeeAndRemainderHaveTheirOwnRecords(t *testing.T) {
	for _, sameTx := range []bool{false, true} {
		name := map[bool]string{false: "fee in its own transaction", true: "fee in the withdrawal's transaction"}[sameTx]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
			env.Chain.AnnounceSends()
			payer := env.CreateAgent("payer")
			bob := env.CreateAgent("bob")
			from := env.PaidOnce(bob, payer)
			const dest = "0x00000000000000000000000000000000000000d5"
			env.Chain.RelayerFee("0.01", sameTx)
			env.Chain.Remainder("0.0003")
			args, _ := json.Marshal(map[string]string{"from": from, "to": dest})
			if tc := env.Tool(payer.ID, "withdraw", string(args), "w1"); tc.Status != "success" {
				t.Fatalf("withdraw: %s %s", tc.Status, tc.Detail)
			}

			out := state.NewOutgoing(env.Store, payer.ID, nil)
			page, err := out.List(ctx, state.PaymentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			by := map[tools.PaymentKind][]tools.OutgoingPayment{}
			for _, p := range page.Payments {
				by[p.Kind] = append(by[p.Kind], p)
			}
			if len(by[tools.KindWithdraw]) != 1 || len(by[tools.KindRelayerFee]) != 1 || len(by[tools.KindRemainder]) != 1 {
				t.Fatalf("records %+v; want a withdrawal, its relayer's fee and its remainder", by)
			}
			w, f, r := by[tools.KindWithdraw][0], by[tools.KindRelayerFee][0], by[tools.KindRemainder][0]
			feeTx := "0xw" // the withdrawal's own transaction
			if !sameTx {
				feeTx = f.TxHash
			}
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"fee status", f.Status, tools.PaymentBroadcast},
				{"fee forPayment", f.ForPayment, w.ID},
				{"fee key", f.IdempotencyKey, "relayfee/" + w.IdempotencyKey},
				{"fee amount", f.Amount.String(), "0.01"},
				{"fee recipient", f.Recipient.Address, moneytest.Relayer},
				{"fee source", f.Source, w.Source},
				{"fee tx", f.TxHash, feeTx},
				{"fee view kind", agent.PaymentView(f).Kind, "relayer_fee"},
				{"rest status", r.Status, tools.PaymentBroadcast},
				{"rest forPayment", r.ForPayment, w.ID},
				{"rest key", r.IdempotencyKey, "rest/" + w.IdempotencyKey},
				{"rest amount", r.Amount.String(), "0.0003"},
				{"rest recipient", strings.ToLower(r.Recipient.Address), dest},
				{"rest view kind", agent.PaymentView(r).Kind, "remainder"},
			} {
				if c.got != c.want {
					t.Errorf("%s = %v; want %v", c.what, c.got, c.want)
				}
			}
			if !sameTx && (f.TxHash == "" || f.TxHash == w.TxHash) {
				t.Errorf("fee tx %q; want its own transaction (withdrawal %q)", f.TxHash, w.TxHash)
			}

			settle := func(key, tx string) {
				t.Helper()
				s := chains.Settlement{Chain: chains.Ethereum, IdempotencyKey: key, AgentID: payer.ID, Op: "withdraw", TxHash: tx,
					Status: chains.SettlementConfirmed, Confirmations: 1}
				if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
					t.Fatal(err)
				}
			}
			settle(w.IdempotencyKey, w.TxHash)
			if !sameTx {
				if f2, _ := out.Get(ctx, f.ID); f2.Status != tools.PaymentBroadcast {
					t.Fatalf("a fee in its own transaction moved with the withdrawal's settlement: %s", f2.Status)
				}
				settle(f.IdempotencyKey, f.TxHash)
			}
			settle(r.IdempotencyKey, r.TxHash)
			for _, p := range []tools.OutgoingPayment{w, f, r} {
				if p2, err := out.Get(ctx, p.ID); err != nil || p2.Status != tools.PaymentConfirmed {
					t.Errorf("%s after settlement: %+v %v", p.Kind, p2, err)
				}
			}
		})
	}
}
