package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
)

// newPaidPayer is a money env whose connector announces its sends, with an
// agent "payer" that "bob" has paid once: from is the one-time address
// holding that payment, which the payer can withdraw.
func newPaidPayer(t *testing.T) (env *moneytest.Env, payer *agent.Record, from string) {
	t.Helper()
	env = moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	env.Chain.AnnounceSends()
	payer = env.CreateAgent("payer")
	bob := env.CreateAgent("bob")
	return env, payer, env.PaidOnce(bob, payer)
}

// outgoingByKind lists out's payments (one page: all of them), by kind, in
// the list's order.
func outgoingByKind(t *testing.T, out *state.Outgoing) map[tools.PaymentKind][]tools.OutgoingPayment {
	t.Helper()
	page, err := out.List(context.Background(), state.PaymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[tools.PaymentKind][]tools.OutgoingPayment{}
	for _, p := range page.Payments {
		by[p.Kind] = append(by[p.Kind], p)
	}
	return by
}

// only is the one payment in ps; none (the zero payment, which no check
// of a record's ID, status or link passes) when there is not exactly one.
func only(ps []tools.OutgoingPayment) tools.OutgoingPayment {
	if len(ps) != 1 {
		return tools.OutgoingPayment{}
	}
	return ps[0]
}
