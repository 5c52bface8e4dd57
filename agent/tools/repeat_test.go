package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
)

// fakeOutgoing answers FindRecent with the records it holds that match.
type fakeOutgoing struct{ recs []OutgoingPayment }

func (f *fakeOutgoing) ByKey(_ context.Context, c chains.ID, key string) (OutgoingPayment, error) {
	for _, r := range f.recs {
		if r.Chain == c && r.IdempotencyKey == key {
			return r, nil
		}
	}
	return OutgoingPayment{}, ErrNoPaymentRecord
}

func (f *fakeOutgoing) FindRecent(_ context.Context, c chains.ID, address, asset string, amount chains.Amount, _ time.Duration) ([]OutgoingPayment, error) {
	var out []OutgoingPayment
	for _, r := range f.recs {
		if r.Chain == c && r.Recipient.Address == address && r.Asset == asset && r.Amount.Rat().Cmp(amount.Rat()) == 0 && r.Status.Open() {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeOutgoing) OpenOn(_ context.Context, c chains.ID) ([]OutgoingPayment, error) {
	var out []OutgoingPayment
	for _, r := range f.recs {
		if r.Chain == c && r.Status.Open() {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeOutgoing) Advance(context.Context, string, PaymentUpdate) (OutgoingPayment, bool, error) {
	return OutgoingPayment{}, false, nil
}

// A second request for a payment still on its way asks first instead of
// paying; a retry of the same call (its idempotency key) and a call the
// user confirmed pay.
func TestRepeatedPaymentAsksFirst(t *testing.T) {
	f0 := newFixture(t)
	bob := f0.dir.agents["bob"].MetaAddresses[chains.Base]
	half, _ := chains.ParseAmountOf("0.5", 18)
	onItsWay := OutgoingPayment{ID: "p-1", Chain: chains.Base, Asset: "ETH", Amount: half, Recipient: PaymentRecipient{Name: "bob.veil", Address: bob},
		IdempotencyKey: "key-earlier", Status: PaymentPending, CreatedAt: testNow}
	cases := []struct {
		name      string
		key       string
		amount    string
		confirmed bool
		wantAsk   bool
	}{
		{name: "retyped request", key: "key-1", amount: "0.5", wantAsk: true},
		{name: "same call retried", key: "key-earlier", amount: "0.5"},
		{name: "user confirmed", key: "key-1", amount: "0.5", confirmed: true},
		{name: "another amount", key: "key-1", amount: "0.6"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.env.Outgoing = &fakeOutgoing{recs: []OutgoingPayment{onItsWay}}
			f.env.IdempotencyKey, f.env.Confirmed = c.key, c.confirmed
			res, err := f.run(t, "send_payment", "send "+c.amount+" ETH to bob", `{"recipient":"bob","amount":"`+c.amount+`"}`)
			if !c.wantAsk {
				if err != nil || len(f.chain.moneyMoves()) != 1 {
					t.Fatalf("= %v, %v; moves %v", res, err, f.chain.moneyMoves())
				}
				return
			}
			if !errors.Is(err, ErrNeedsConfirmation) || len(f.chain.moneyMoves()) != 0 {
				t.Fatalf("= %v, %v; moves %v", res, err, f.chain.moneyMoves())
			}
			for _, want := range []string{"0.5 ETH", "bob.veil", "p-1", "on its way"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}
		})
	}
}
