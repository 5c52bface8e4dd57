package state

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestToolsOverStore runs the record-keeping tools against the
// store-backed services, as the agent actor wires them.
func TestToolsOverStore(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	alice := keysFor(t, "alice")
	env := &tools.Env{
		Agent: tools.Agent{ID: "agent-a", Name: "alice", Chains: []chains.ID{chains.Base, chains.Stellar},
			MetaAddresses: map[chains.ID]string{chains.Base: alice.meta[chains.Base], chains.Stellar: alice.meta[chains.Stellar]}},
		Now:       clk.Now,
		Invoices:  NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", StealthAddresses(alice.meta, cryptoRand{})),
		Schedules: NewSchedules(s, "agent-a", clk.Now),
		Memories:  NewMemories(s, "agent-a", clk.Now),
		Payments:  NewPayments(s, "agent-a", clk.Now),
		Chains:    noChains{},
	}
	run := func(key, tool, text, args string) (any, error) {
		t.Helper()
		tl, _ := tools.ByName(tool)
		e := *env
		e.IdempotencyKey, e.UserText = key, text
		return tl.Run(ctx, &e, json.RawMessage(args))
	}

	// create_invoice twice with the same key (a retried loop): one invoice.
	r1, err := run("k1", "create_invoice", "invoice 25 USDC for the logo", `{"amount":"25","memo":"logo","asset":"USDC"}`)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := run("k1", "create_invoice", "invoice 25 USDC for the logo", `{"amount":"25","memo":"logo","asset":"USDC"}`)
	inv := r1.(*tools.Invoice)
	if r2.(*tools.Invoice).ID != inv.ID || inv.PaymentLink != "https://veil.test/pay/"+inv.ID || !strings.HasPrefix(inv.PayTo, "0x") {
		t.Errorf("%+v %+v", inv, r2)
	}
	rec, _ := GetInvoice(ctx, s, inv.ID)
	alice.ownsAddress(t, chains.Base, inv.PayTo, rec.EphemeralPubKey)
	env.Invoices.(*Invoices).MarkPaid(ctx, inv.ID, "0xpaid")
	list, err := run("k2", "check_invoices", "", `{}`)
	if l := list.(*tools.InvoiceList); err != nil || l.Count != 1 || l.Paid != 1 || *l.Invoices[0].TxHash != "0xpaid" {
		t.Errorf("%+v %v", list, err)
	}

	// Schedules by meta-address (no directory needed), then manage by
	// prefix.
	bobXLM := keysFor(t, "bob").meta[chains.Stellar]
	sr, err := run("k3", "schedule_payment", "every week send 5 XLM to "+bobXLM, `{"recipient":"`+bobXLM+`","amount":"5","interval":"weekly"}`)
	if err != nil {
		t.Fatal(err)
	}
	sc := sr.(*tools.Schedule)
	if sc.Chain != chains.Stellar || sc.Asset != "XLM" || !sc.NextRun.Equal(at(t, "2027-02-07T10:00:00Z")) {
		t.Errorf("%+v", sc)
	}
	mr, err := run("k4", "manage_schedule", "pause it", `{"schedule_id":"`+sc.ID[:6]+`","action":"pause"}`)
	if err != nil || mr.(*tools.Schedule).Status != "paused" {
		t.Errorf("%+v %v", mr, err)
	}
	if _, err := run("k5", "manage_schedule", "", `{"schedule_id":"`+sc.ID[:6]+`","action":"pause"}`); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("pause twice: %v", err)
	}
	if _, err := run("k5", "manage_schedule", "", `{"schedule_id":"ffffff","action":"pause"}`); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	lr, _ := run("k6", "list_schedules", "", `{}`)
	if l := lr.(*tools.ScheduleList); l.Count != 1 || l.Paused != 1 {
		t.Errorf("%+v", l)
	}
	dueInvariant(t, s)

	// Memory.
	m1, err := run("k7", "save_memory", "remember I prefer USDC", `{"content":"prefers USDC","type":"preference","importance":4}`)
	if err != nil || m1.(*tools.Memory).Importance != 4 {
		t.Errorf("%+v %v", m1, err)
	}
	m2, _ := run("k7", "save_memory", "remember I prefer USDC", `{"content":"prefers USDC","type":"preference","importance":4}`)
	if m2.(*tools.Memory).ID != m1.(*tools.Memory).ID {
		t.Error("retried save_memory stored twice")
	}

	// withdraw refuses an address the agent never received on.
	env.Payments.(*Payments).Record(ctx, tools.Payment{Chain: chains.Base, StealthAddress: "0x1111111111111111111111111111111111111111", Asset: "USDC", Amount: "5", TxHash: "0xt"})
	if _, err := run("k8", "withdraw", "withdraw to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		`{"from":"0x2222222222222222222222222222222222222222","to":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}`); err == nil ||
		!strings.Contains(err.Error(), "0x1111111111111111111111111111111111111111 (5 USDC on base)") {
		t.Errorf("withdraw unknown: %v", err)
	}
}

// noChains is a ChainOps whose every call fails: these tests must not
// reach a chain.
type noChains struct{}

var errNoChain = errors.New("test: no chain")

func (noChains) AuthorizationDomain(context.Context, *big.Int, string) (chains.ID, chains.TransferAuthorization, error) {
	return "", chains.TransferAuthorization{}, errNoChain
}
func (noChains) SignAuthorization(_ context.Context, _ tools.PaymentRequest, a chains.TransferAuthorization) (chains.TransferAuthorization, []byte, error) {
	return a, nil, errNoChain
}
func (noChains) Assets(context.Context, chains.ID) ([]chains.Asset, error) {
	return nil, errNoChain
}
func (noChains) Balance(context.Context, chains.ID) (chains.Balance, error) {
	return chains.Balance{}, errNoChain
}
func (noChains) SendStealth(context.Context, tools.PaymentRequest) (chains.TxResult, error) {
	return chains.TxResult{}, errNoChain
}
func (noChains) Withdraw(context.Context, tools.PaymentRequest) (chains.TxResult, error) {
	return chains.TxResult{}, errNoChain
}
func (noChains) RegisterName(context.Context, chains.ID) (chains.TxResult, error) {
	return chains.TxResult{}, errNoChain
}
func (noChains) ResolveName(context.Context, chains.ID, string) (string, error) {
	return "", errNoChain
}
func (noChains) Fund(context.Context, chains.ID) (chains.TxResult, error) {
	return chains.TxResult{}, errNoChain
}
func (noChains) Scan(context.Context, chains.ID) (int, error) { return 0, errNoChain }
func (noChains) TxLink(chains.ID, string) string              { return "" }
