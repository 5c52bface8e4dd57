package evm

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
)

// nodeError is what a node's refusal of a transaction (or of a gas
// estimate) means, whatever its wording.
type nodeError int

const (
	nodeErrOther              nodeError = iota // a refusal with no better reading
	nodeErrKnown                               // the node already has this very transaction
	nodeErrNonceTooLow                         // the nonce is used (mined, or another transaction)
	nodeErrReplaceUnderpriced                  // another transaction holds this nonce in the pool
	nodeErrNonceTooHigh                        // a gap before this nonce (Hardhat's automine and Nethermind refuse to queue)
	nodeErrInsufficientFunds                   // balance below value + gas·fee cap
	nodeErrFeeTooLow                           // fee cap below the base fee, or tip below the node's minimum
	nodeErrBusy                                // pool full, rate limited: try again
	nodeErrGas                                 // gas limit below intrinsic gas or above the block's
)

// nodeWordings maps the wordings of geth, Reth, Erigon, Nethermind, Besu,
// Anvil and Hardhat (EDR) to a nodeError. Matching is on the lower-cased
// message, first match wins: the replacement wordings come before the
// bare "underpriced" of a low fee. chains/evm's TestNodeErrorWordings
// holds each node's exact messages.
var nodeWordings = []struct {
	kind nodeError
	subs []string
}{
	{nodeErrKnown, []string{
		"already known",                // geth, reth, erigon
		"known transaction",            // hardhat "Known transaction: 0x…", older geth
		"transaction already imported", // anvil
		"alreadyknown",                 // nethermind AcceptTxResult
		"existing tx with same hash",   // erigon DuplicateHash
		"already in the pool",
	}},
	{nodeErrReplaceUnderpriced, []string{
		"replacement transaction underpriced", // geth, reth, erigon, anvil, hardhat "Replacement transaction underpriced. …"
		"could not replace existing tx",       // erigon NotReplaced
		"replacementnotallowed",               // nethermind
		"replacement_underpriced",             // besu
	}},
	{nodeErrNonceTooLow, []string{
		"nonce too low", // geth, reth, erigon, anvil; hardhat "Nonce too low. Expected nonce to be …"
		"oldnonce",      // nethermind "OldNonce, Current nonce: …"
		"nonce_too_low", // besu
		"nonce has already been used",
	}},
	{nodeErrNonceTooHigh, []string{
		"nonce too high", // hardhat "Nonce too high. Expected nonce to be … Note that transactions can't be queued when automining.", anvil
		"noncegap",       // nethermind "NonceGap, Future nonce. …"
		"nonce_too_high", // besu
	}},
	{nodeErrInsufficientFunds, []string{
		"insufficient funds",                   // geth, reth, erigon, anvil "insufficient funds for gas * price + value"
		"doesn't have enough funds",            // hardhat "Sender doesn't have enough funds to send tx. The max upfront cost is: …"
		"insufficientfunds",                    // nethermind "InsufficientFunds, Account balance: …"
		"upfront_cost_exceeds_balance",         // besu
		"upfront cost exceeds account balance", // besu (message form)
		"insufficient balance",
	}},
	{nodeErrFeeTooLow, []string{
		"max fee per gas less than block base fee", // geth, reth, anvil
		"too low for the next block",               // hardhat "Transaction maxFeePerGas (…) is too low for the next block, which has a baseFeePerGas of …"
		"transaction underpriced",                  // geth, reth: tip below the pool's minimum
		"feetoolow",                                // nethermind "FeeTooLow" (also FeeTooLowToCompete, see busy)
		"fee too low",                              // erigon
		"underpriced",                              // erigon UnderPriced, besu GAS_PRICE_TOO_LOW's neighbours
		"gas_price_too_low",                        // besu
		"gas price below minimum",                  // some providers
	}},
	{nodeErrBusy, []string{
		"txpool is full", // geth, reth
		"pool is full",   // erigon "pending sub-pool is full"
		"rate limit", "too many requests", "exceeded the quota", "capacity exceeded",
	}},
	{nodeErrGas, []string{
		"intrinsic gas too low",           // geth, reth, erigon, anvil
		"exceeds block gas limit",         // geth, reth, hardhat "Transaction gas limit is … and exceeds block gas limit of …"
		"gaslimitexceeded",                // nethermind
		"intrinsic_gas_exceeds_gas_limit", // besu
	}},
}

// readNodeError reads a node's error message.
func readNodeError(err error) nodeError {
	if err == nil {
		return nodeErrOther
	}
	// Nethermind's FeeTooLowToCompete is a full pool, not a low fee.
	if mentions(err, "feetoolowtocompete") {
		return nodeErrBusy
	}
	for _, w := range nodeWordings {
		if mentions(err, w.subs...) {
			return w.kind
		}
	}
	return nodeErrOther
}

// broadcast outcomes
type sendOutcome int

const (
	sentOK        sendOutcome = iota
	sentNonceUsed             // the nonce is taken on chain or in the pool by another transaction
	sentRejected              // the node refused the transaction; it will never be mined as is
	sentUnknown               // transport failure or a busy node: the node may or may not have it
)

// classify reads the outcome of eth_sendRawTransaction.
func classify(err error) sendOutcome {
	if err == nil {
		return sentOK
	}
	switch readNodeError(err) {
	case nodeErrKnown:
		return sentOK
	case nodeErrNonceTooLow, nodeErrReplaceUnderpriced:
		return sentNonceUsed
	case nodeErrBusy:
		return sentUnknown
	}
	var re rpc.Error
	if errors.As(err, &re) {
		return sentRejected
	}
	return sentUnknown
}

// rejection is the Veil error of a transaction the node refused (after
// the reservation was rolled back): what happened and what to do next.
func (c *Connector) rejection(err error) error {
	switch readNodeError(err) {
	case nodeErrInsufficientFunds:
		return fmt.Errorf("%w: %s: the node refused the transaction: the account cannot pay the amount plus the network fee (%v)", chains.ErrInsufficientFunds, c.cfg.Chain, err)
	case nodeErrFeeTooLow:
		return fmt.Errorf("%w: %s: the node wants a higher fee than was just quoted (%v); nothing was sent, retry shortly", chains.ErrUnavailable, c.cfg.Chain, err)
	case nodeErrNonceTooHigh:
		return fmt.Errorf("%w: %s: the node will not queue this transaction behind unmined ones (%v); nothing was sent, retry once they are mined", chains.ErrUnavailable, c.cfg.Chain, err)
	case nodeErrGas:
		return fmt.Errorf("evm: %s: the node refused the transaction's gas limit (%v); nothing was sent", c.cfg.Chain, err)
	}
	return fmt.Errorf("evm: %s: node rejected the transaction: %w", c.cfg.Chain, err)
}
