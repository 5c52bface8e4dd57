package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
)

// An approved invoice payment looks at the invoice again when it runs: an
// invoice paid meanwhile (issue 32 item 5), or cancelled by its issuer
// with cancel_invoice (issue 33), ends the approval failed with the
// reason, and nothing is paid.
func TestApprovedInvoicePaymentRechecksTheInvoice(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		meanwhile  func(t *testing.T, env *moneytest.Env, bob *agent.Record, invoiceID string)
	}{
		{"paid", "already paid", func(t *testing.T, env *moneytest.Env, bob *agent.Record, invoiceID string) {
			if _, _, err := state.NewInvoices(env.Store, bob.ID, env.Clock.Now, "bob", "http://veil.test", nil).MarkPaid(context.Background(), invoiceID, "0xpaid"); err != nil {
				t.Fatal(err)
			}
		}},
		{"cancelled", "was cancelled by its payee", func(t *testing.T, env *moneytest.Env, bob *agent.Record, invoiceID string) {
			v, err := env.Host.Request(context.Background(), bob.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: "cancel_invoice", Arguments: `{"invoice_id":"` + invoiceID + `"}`})
			if err != nil {
				t.Fatal(err)
			}
			if tc := v.(*agent.ToolCall); tc.Status != "success" || !strings.Contains(tc.Detail, "cancelledAt") {
				t.Fatalf("cancel_invoice: %+v", tc)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { approvedInvoiceRecheck(t, tc.want, tc.meanwhile) })
	}
}

func approvedInvoiceRecheck(t *testing.T, want string, meanwhile func(t *testing.T, env *moneytest.Env, bob *agent.Record, invoiceID string)) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wallet := walletsig.EVMAddress(&key.PublicKey)
	v, err := env.Host.Request(ctx, uuid.NewString(), &agent.Create{AccountID: moneytest.Account, Name: "alice", Chain: string(chains.Ethereum),
		Chains: []chains.ID{chains.Ethereum}, OwnerWallet: wallet, OwnerScheme: "eip191"})
	if err != nil {
		t.Fatal(err)
	}
	alice := v.(*agent.Record)
	bob := env.CreateAgent("bob")
	pol := policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.1"}}}
	hash, err := policy.Hash(pol)
	if err != nil {
		t.Fatal(err)
	}
	pm := walletsig.PolicyMessage(hash, alice.ID, wallet, env.Clock.Now())
	if _, err := env.Host.Request(ctx, alice.ID, &agent.SetPolicy{AccountID: moneytest.Account, Policy: pol, Message: pm, Signature: walletsig.SignEVM(key, pm)}); err != nil {
		t.Fatal(err)
	}
	v, err = env.Host.Request(ctx, bob.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: "create_invoice", Arguments: `{"amount":"0.5","memo":"x","asset":"ETH"}`})
	if err != nil {
		t.Fatal(err)
	}
	var inv struct {
		ID string `json:"id"`
	}
	if tc := v.(*agent.ToolCall); tc.Status != "success" || json.Unmarshal([]byte(tc.Detail), &inv) != nil {
		t.Fatalf("create_invoice: %+v", tc)
	}
	v, err = env.Host.Request(ctx, alice.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: "pay_invoice", Arguments: `{"invoice":"` + inv.ID + `"}`})
	if err != nil {
		t.Fatal(err)
	}
	if tc := v.(*agent.ToolCall); tc.Status != "success" || !strings.Contains(tc.Detail, "pending_approval") {
		t.Fatalf("pay_invoice: %+v", tc)
	}
	v, err = env.Host.Request(ctx, alice.ID, &agent.ListApprovals{AccountID: moneytest.Account, Status: policy.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	held := v.([]agent.ApprovalView)
	if len(held) != 1 {
		t.Fatalf("held: %+v", held)
	}
	// Meanwhile the invoice is paid another way, or cancelled.
	meanwhile(t, env, bob, inv.ID)
	am := walletsig.ApprovalMessage(held[0].ID, alice.ID, wallet, false, env.Clock.Now())
	v, err = env.Host.Request(ctx, alice.ID, &agent.DecideApproval{AccountID: moneytest.Account, ApprovalID: held[0].ID, Decision: "approve",
		Message: am, Signature: walletsig.SignEVM(key, am)})
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*agent.ApprovalDecision)
	if d.TxHash != "" || !strings.Contains(d.Error, want) {
		t.Fatalf("decision %+v: want failed with the reason, nothing paid", d)
	}
	page, err := state.NewOutgoing(env.Store, alice.ID, nil).List(ctx, state.PaymentFilter{})
	if err != nil || len(page.Payments) != 0 {
		t.Fatalf("records %+v, %v: nothing was signed, none written", page.Payments, err)
	}
}
