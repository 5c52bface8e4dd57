package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// The gas a withdrawal's one-time address is sent from the agent's own
// account is a payment of its own (issue 32 item 1): a gas_funding record,
// written before the transfer is signed, linked to the withdrawal's record
// (forPayment), listed with the agent's payments, moved forward by the
// transfer's answer and then its settlement (which tells once), and not
// made again by a retry of the withdrawal.
func TestGasFundingHasItsOwnRecord(t *testing.T) {
	ctx := context.Background()
	// bob pays the payer: a payment at a one-time address it can withdraw.
	env, payer, from := newPaidPayer(t)
	call := func(id, tool, args, key string) *agent.ToolCall {
		t.Helper()
		tc := env.Tool(id, tool, args, key)
		if tc.Status != "success" {
			t.Fatalf("%s: %s %s", tool, tc.Status, tc.Detail)
		}
		return tc
	}
	const dest = "0x00000000000000000000000000000000000000d5"

	env.Chain.NeedGas("0.0002")
	args, _ := json.Marshal(map[string]string{"from": from, "to": dest})
	call(payer.ID, "withdraw", string(args), "w1")
	out := state.NewOutgoing(env.Store, payer.ID, nil)
	by := outgoingByKind(t, out)
	if len(by[tools.KindWithdraw]) != 1 || len(by[tools.KindGasFunding]) != 1 {
		t.Fatalf("records %+v; want one withdrawal and one gas funding", by)
	}
	w, g := by[tools.KindWithdraw][0], by[tools.KindGasFunding][0]
	gasTx := env.Chain.GasSent()["gas/"+w.IdempotencyKey]
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"status", g.Status, tools.PaymentBroadcast},
		{"forPayment", g.ForPayment, w.ID},
		{"key", g.IdempotencyKey, "gas/" + w.IdempotencyKey},
		{"amount", g.Amount.String(), "0.0002"},
		{"asset", g.Asset, "ETH"},
		{"chain", g.Chain, chains.Ethereum},
		{"recipient", g.Recipient.Address, from},
		{"source", g.Source, w.Source},
		{"tx", g.TxHash, gasTx},
		{"view's forPayment", agent.PaymentView(g).ForPayment, w.ID},
	} {
		if c.got != c.want || gasTx == "" {
			t.Errorf("gas record %s = %v; want %v (gas tx %q)", c.what, c.got, c.want, gasTx)
		}
	}

	// Its settlement moves it, once, with one payment.confirmed event.
	s := chains.Settlement{Chain: chains.Ethereum, IdempotencyKey: g.IdempotencyKey, AgentID: payer.ID, Op: "gas", TxHash: gasTx,
		Status: chains.SettlementConfirmed, Confirmations: 1}
	for range 2 {
		if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
			t.Fatal(err)
		}
	}
	if g2, err := out.Get(ctx, g.ID); err != nil || g2.Status != tools.PaymentConfirmed {
		t.Fatalf("gas record after its settlement: %+v %v", g2, err)
	}
	evs, err := agent.PaymentEventsAfter(ctx, env.Store, payer.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Payment.ID == g.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d events of the gas record (%+v); want one", n, evs)
	}

	// The same withdrawal again (the tool refuses it: already withdrawn)
	// sends no gas and records none. (A retry that reaches the connector
	// under the key funds nothing again: chains/evm interopGas.)
	if tc := env.Tool(payer.ID, "withdraw", string(args), "w1"); tc.Status == "success" {
		t.Fatalf("the same withdrawal again: %s %s", tc.Status, tc.Detail)
	}
	if by := outgoingByKind(t, out); len(by[tools.KindGasFunding]) != 1 || len(by[tools.KindWithdraw]) != 1 || len(env.Chain.GasSent()) != 1 {
		t.Fatalf("after the retry: records %+v, gas sent %v", by, env.Chain.GasSent())
	}
}
