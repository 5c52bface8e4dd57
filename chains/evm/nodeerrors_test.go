package evm

import (
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

// rpcErr is a JSON-RPC error answer as go-ethereum's rpc client returns it.
type rpcErr struct {
	code int
	msg  string
}

func (e rpcErr) Error() string  { return e.msg }
func (e rpcErr) ErrorCode() int { return e.code }

// TestNodeErrorWordings: each node's wording of a refused transaction maps
// to the same outcome and Veil error.
func TestNodeErrorWordings(t *testing.T) {
	c := &Connector{cfg: Config{Chain: chains.Ethereum}}
	cases := []struct {
		node, msg string
		outcome   sendOutcome
		veil      error // what rejection() wraps; nil: a plain node rejection
	}{
		// insufficient funds
		{"geth", "insufficient funds for gas * price + value: address 0x71C7656EC7ab88b098defB751B7401B5f6d8976F have 0 want 21000000000000", sentRejected, chains.ErrInsufficientFunds},
		{"reth", "insufficient funds for gas * price + value: have 0 want 21000000000000", sentRejected, chains.ErrInsufficientFunds},
		{"erigon", "insufficient funds", sentRejected, chains.ErrInsufficientFunds},
		{"anvil", "Insufficient funds for gas * price + value", sentRejected, chains.ErrInsufficientFunds},
		{"hardhat", "Sender doesn't have enough funds to send tx. The max upfront cost is: 2100000000000000 and the sender's balance is: 0.", sentRejected, chains.ErrInsufficientFunds},
		{"nethermind", "InsufficientFunds, Account balance: 0, cumulative cost: 21000000000000", sentRejected, chains.ErrInsufficientFunds},
		{"besu", "Transaction processing could not be completed due to an exception (UPFRONT_COST_EXCEEDS_BALANCE)", sentRejected, chains.ErrInsufficientFunds},
		// nonce too low: the nonce is used
		{"geth", "nonce too low: address 0x71C7656EC7ab88b098defB751B7401B5f6d8976F, tx: 3 state: 5", sentNonceUsed, nil},
		{"reth", "nonce too low: next nonce 5, tx nonce 3", sentNonceUsed, nil},
		{"erigon", "nonce too low", sentNonceUsed, nil},
		{"anvil", "nonce too low", sentNonceUsed, nil},
		{"hardhat", "Nonce too low. Expected nonce to be 5 but got 3. Note that transactions can't be queued when automining.", sentNonceUsed, nil},
		{"nethermind", "OldNonce, Current nonce: 5, nonce of rejected tx: 3", sentNonceUsed, nil},
		{"besu", "NONCE_TOO_LOW", sentNonceUsed, nil},
		// replacement underpriced: another transaction holds the nonce in the pool
		{"geth", "replacement transaction underpriced", sentNonceUsed, nil},
		{"reth", "replacement transaction underpriced", sentNonceUsed, nil},
		{"erigon", "could not replace existing tx", sentNonceUsed, nil},
		{"anvil", "replacement transaction underpriced", sentNonceUsed, nil},
		{"hardhat", "Replacement transaction underpriced. A gasPrice/maxFeePerGas of at least 2000000000 is necessary to replace the existing transaction with nonce 3.", sentNonceUsed, nil},
		{"nethermind", "ReplacementNotAllowed", sentNonceUsed, nil},
		{"besu", "REPLACEMENT_UNDERPRICED", sentNonceUsed, nil},
		// already known: the node has this very transaction
		{"geth", "already known", sentOK, nil},
		{"erigon", "existing tx with same hash", sentOK, nil},
		{"anvil", "transaction already imported", sentOK, nil},
		{"hardhat", "Known transaction: 0x1c9d0fbdd7b4f0cb1cba4a2c7dbd0d4d5f3cc0a0d45f1b09a6ba3c4d3e1f2a3b", sentOK, nil},
		{"nethermind", "AlreadyKnown", sentOK, nil},
		// nonce too high: the node will not queue behind a gap
		{"hardhat", "Nonce too high. Expected nonce to be 3 but got 4. Note that transactions can't be queued when automining.", sentRejected, chains.ErrUnavailable},
		{"anvil", "nonce too high", sentRejected, chains.ErrUnavailable},
		{"nethermind", "NonceGap, Future nonce. Expected nonce: 3", sentRejected, chains.ErrUnavailable},
		// fee below what the node takes now
		{"geth", "max fee per gas less than block base fee: address 0x71C7656EC7ab88b098defB751B7401B5f6d8976F, maxFeePerGas: 1, baseFee: 7", sentRejected, chains.ErrUnavailable},
		{"geth", "transaction underpriced: tip needed 1000000, tip permitted 1", sentRejected, chains.ErrUnavailable},
		{"hardhat", "Transaction maxFeePerGas (1) is too low for the next block, which has a baseFeePerGas of 7", sentRejected, chains.ErrUnavailable},
		{"erigon", "fee too low", sentRejected, chains.ErrUnavailable},
		{"nethermind", "FeeTooLow, MaxFeePerGas too low. MaxFeePerGas: 1, BaseFee: 7", sentRejected, chains.ErrUnavailable},
		// busy: the outcome is unknown, the recorded transaction goes out again
		{"geth", "txpool is full", sentUnknown, nil},
		{"erigon", "pending sub-pool is full", sentUnknown, nil},
		{"nethermind", "FeeTooLowToCompete", sentUnknown, nil},
		{"provider", "429 Too Many Requests: rate limit exceeded", sentUnknown, nil},
		// gas limit
		{"geth", "intrinsic gas too low: gas 20000, minimum needed 21000", sentRejected, nil},
		{"hardhat", "Transaction gas limit is 40000000 and exceeds block gas limit of 30000000", sentRejected, nil},
		// anything else the node refuses is a plain rejection
		{"any", "invalid sender", sentRejected, nil},
	}
	for _, tc := range cases {
		t.Run(tc.node+"/"+tc.msg, func(t *testing.T) {
			err := rpcErr{-32000, tc.msg}
			if got := classify(err); got != tc.outcome {
				t.Fatalf("classify = %d, want %d", got, tc.outcome)
			}
			if tc.outcome != sentRejected {
				return
			}
			rej := c.rejection(err)
			if tc.veil != nil && !errors.Is(rej, tc.veil) {
				t.Fatalf("rejection %q does not match %v", rej, tc.veil)
			}
			if tc.veil == nil && (errors.Is(rej, chains.ErrInsufficientFunds) || errors.Is(rej, chains.ErrUnavailable)) {
				t.Fatalf("rejection %q reads as %v", rej, tc.veil)
			}
			if !strings.Contains(rej.Error(), tc.msg) {
				t.Fatalf("rejection %q drops the node's words", rej)
			}
		})
	}
	// A failed gas estimate that says the account is short is insufficient
	// funds too (Hardhat estimates with the same wording).
	est := c.callError("estimate gas", rpcErr{-32003, "Sender doesn't have enough funds to send tx. The max upfront cost is: 1 and the sender's balance is: 0."})
	if !errors.Is(est, chains.ErrInsufficientFunds) {
		t.Fatalf("estimate: %v", est)
	}
	// A transport failure is not a rejection.
	if classify(errors.New("dial tcp 127.0.0.1:8545: connect: connection refused")) != sentUnknown {
		t.Fatal("transport failure classified as a rejection")
	}
}
