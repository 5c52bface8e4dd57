package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
			env, payer, from := newPaidPayer(t)
			const dest = "0x00000000000000000000000000000000000000d5"
			env.Chain.RelayerFee("0.01", sameTx)
			env.Chain.Remainder("0.0003")
			args, _ := json.Marshal(map[string]string{"from": from, "to": dest})
			if tc := env.Tool(payer.ID, "withdraw", string(args), "w1"); tc.Status != "success" {
				t.Fatalf("withdraw: %s %s", tc.Status, tc.Detail)
			}

			out := state.NewOutgoing(env.Store, payer.ID, nil)
			by := outgoingByKind(t, out)
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

// A relayer's fee in the withdrawal's own transaction (Stellar, Solana)
// whose call came back with no hash at all (the outcome unknown before a
// hash was known; a retry then told the withdrawal's record its hash, not
// the fee's) is settled with the withdrawal's settlement all the
// same: its record says it rides in that transaction (SameTx), so no hash
// is needed to match it. A fee in a transaction of its own (EVM) is not
// moved by the withdrawal's settlement: it waits for its own.
func TestSameTxFeeWithoutHashSettlesWithTheWithdrawal(t *testing.T) {
	for _, sameTx := range []bool{true, false} {
		name := map[bool]string{true: "same transaction", false: "own transaction"}[sameTx]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			env, payer, from := newPaidPayer(t)
			env.Chain.RelayerFee("0.01", sameTx)
			env.Chain.WithdrawOutcomeUnknown(true)
			args, _ := json.Marshal(map[string]string{"from": from, "to": "0x00000000000000000000000000000000000000d5"})
			if tc := env.Tool(payer.ID, "withdraw", string(args), "w1"); !strings.Contains(tc.Detail, `"status":"pending"`) {
				t.Fatalf("withdraw with its outcome unknown: %s %s", tc.Status, tc.Detail)
			}
			out := state.NewOutgoing(env.Store, payer.ID, nil)
			by := outgoingByKind(t, out)
			w, f := only(by[tools.KindWithdraw]), only(by[tools.KindRelayerFee])
			if w.Status != tools.PaymentPending || w.TxHash != "" || f.ForPayment != w.ID || f.SameTx != sameTx {
				t.Fatalf("before the settlement: withdrawal %+v, fee %+v (records %+v)", w, f, by)
			}
			if sameTx && (f.Status != tools.PaymentPending || f.TxHash != "") {
				t.Fatalf("same-transaction fee before the settlement: %s %q; want pending with no hash", f.Status, f.TxHash)
			}
			// A retry under the key gets the withdrawal's hash, as the
			// connector recorded it; the fee's record learns none (nothing is
			// built or signed again).
			env.Chain.WithdrawOutcomeUnknown(false)
			if tc := env.Tool(payer.ID, "withdraw", string(args), "w1"); tc.Status != "success" {
				t.Fatalf("the retry: %s %s", tc.Status, tc.Detail)
			}
			if w, _ = out.Get(ctx, w.ID); w.TxHash != "0xw" {
				t.Fatalf("withdrawal after the retry: %+v", w)
			}
			if f, _ = out.Get(ctx, f.ID); sameTx && f.TxHash != "" {
				t.Fatalf("same-transaction fee after the retry: %+v", f)
			}
			s := chains.Settlement{Chain: chains.Ethereum, IdempotencyKey: w.IdempotencyKey, AgentID: payer.ID, Op: "withdraw", TxHash: "0xw",
				Status: chains.SettlementConfirmed, Confirmations: 1}
			if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
				t.Fatal(err)
			}
			w2, _ := out.Get(ctx, w.ID)
			f2, _ := out.Get(ctx, f.ID)
			if w2.Status != tools.PaymentConfirmed {
				t.Fatalf("withdrawal after its settlement: %s", w2.Status)
			}
			if sameTx && (f2.Status != tools.PaymentConfirmed || f2.TxHash != "0xw") {
				t.Fatalf("same-transaction fee after the withdrawal's settlement: %s %q; want confirmed with its hash", f2.Status, f2.TxHash)
			}
			if !sameTx && f2.Status != f.Status {
				t.Fatalf("a fee in its own transaction moved with the withdrawal's settlement: %s -> %s", f.Status, f2.Status)
			}
		})
	}
}
