package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

// TestChainErrInWords: a chain error's raw base units reach the model and
// the user as amounts with their symbol, and the error still matches its
// sentinel.
func TestChainErrInWords(t *testing.T) {
	raw := fmt.Errorf("%w: send: the account cannot pay the amount plus the network fee (insufficient funds for gas * price + value: balance 9999949976784703522, tx cost 500000021000000000000, overshot 1)", chains.ErrInsufficientFunds)
	err := chainErr("paying 500 ETH to bob.veil", chains.Base, raw)
	if !errors.Is(err, chains.ErrInsufficientFunds) {
		t.Fatalf("%v lost its sentinel", err)
	}
	if msg := err.Error(); strings.Contains(msg, "9999949976784703522") || !strings.Contains(msg, "9.999949 ETH available, 500.000021 ETH needed") {
		t.Fatalf("chainErr = %q", msg)
	}
}

// TestUnknownOutcomeIsPending: a payment whose outcome is unknown is
// answered as pending with its record's id, and nothing says "nothing was
// done"; only a refusal before signing does.
func TestUnknownOutcomeIsPending(t *testing.T) {
	ctx := context.Background()
	env := &Env{Chains: newFakeChains()}
	cases := []struct {
		name    string
		err     error
		pending bool
		id      string
	}{
		{"outcome unknown", fmt.Errorf("send: %w", chains.ErrOutcomeUnknown), true, ""},
		{"recorded", &PendingError{PaymentID: "p-1", TxHash: "0xabc", Err: chains.ErrOutcomeUnknown}, true, "p-1"},
		{"time-out", context.DeadlineExceeded, true, ""},
		{"unreachable before signing", chains.ErrUnavailable, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := notSent(ctx, env, c.err, sendRequestFor(t, chains.Base, "ETH", "0.5", "bob.veil", "st:eth:0xbob", "k"), "paying 0.5 ETH to bob.veil")
			if !c.pending {
				if v != nil || err == nil || !strings.Contains(err.Error(), "nothing was done") {
					t.Fatalf("notSent = %v, %v", v, err)
				}
				return
			}
			p, ok := v.(*PendingPayment)
			if err != nil || !ok || p.Status != StatusPending || p.PaymentID != c.id {
				t.Fatalf("notSent = %#v, %v", v, err)
			}
			if msg := strings.ToLower(p.Message); strings.Contains(msg, "nothing was done") || !strings.Contains(msg, "do not send it again") || !strings.Contains(msg, "told when it confirms") {
				t.Fatalf("message %q", p.Message)
			}
			if c.id != "" && p.TxLink == "" {
				t.Fatalf("no link for the recorded transaction: %+v", p)
			}
			if msg := chainErr("withdrawing", chains.Base, c.err).Error(); strings.Contains(msg, "nothing was done") || !strings.Contains(msg, "do not send it again") {
				t.Fatalf("chainErr = %q", msg)
			}
		})
	}
}

// TestNotificationsNameTheTransaction: without an explorer link the
// notification names the transaction's hash, never "Transaction " alone.
func TestNotificationsNameTheTransaction(t *testing.T) {
	for _, c := range []struct{ link, hash, want string }{
		{"https://x/tx/0x1", "0x1", "https://x/tx/0x1"},
		{"", "0x1", "0x1"},
	} {
		if got := txText(c.link, c.hash); got != c.want {
			t.Errorf("txText(%q, %q) = %q, want %q", c.link, c.hash, got, c.want)
		}
	}
}
