package tools

import (
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
