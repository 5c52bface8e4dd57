//go:build nodevnet

// Package devnet runs Veil's embedded local networks. This binary was built
// with -tags nodevnet: the EVM devnets are left out and StartEVM reports
// chains.ErrUnavailable; configure VEIL_RPC_<CHAIN> for every EVM chain.
package devnet

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
)

// EVMAvailable reports whether this binary includes the EVM devnets.
const EVMAvailable = false

// EVMOptions configures StartEVM (see the devnet build).
type EVMOptions struct {
	Dir      string
	Chains   []chains.ID
	BasePort int
	Log      *slog.Logger
}

// EVM is the running set of EVM devnets; never created in this build.
type EVM struct{}

// StartEVM reports that this build has no EVM devnets.
func StartEVM(context.Context, EVMOptions) (*EVM, error) {
	return nil, fmt.Errorf("%w: built with -tags nodevnet (no embedded EVM devnets); set VEIL_RPC_<CHAIN>", chains.ErrUnavailable)
}

// Chains lists the running chains (none).
func (d *EVM) Chains() []chains.ID { return nil }

// Config is never available in this build.
func (d *EVM) Config(chains.ID) (evm.Config, bool) { return evm.Config{}, false }

// Close does nothing.
func (d *EVM) Close() error { return nil }
