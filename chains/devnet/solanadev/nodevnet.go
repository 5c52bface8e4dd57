//go:build nodevnet

// Package solanadev is Veil's embedded Solana network. This binary was
// built with -tags nodevnet: Start reports chains.ErrUnavailable; set
// VEIL_RPC_SOLANA.
package solanadev

import (
	"context"

	"github.com/veilhq/veil/chains/devnet/internal/devserver"
	"github.com/veilhq/veil/chains/solana"
)

// Available reports whether this binary includes the Solana devnet.
const Available = false

// Devnet is never created in this build.
type Devnet = devserver.Absent[solana.Config]

// Start reports that this build has no Solana devnet.
func Start(context.Context, Options) (*Devnet, error) {
	return nil, devserver.Unavailable("Solana", "VEIL_RPC_SOLANA")
}
