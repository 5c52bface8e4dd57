//go:build nodevnet

// Package stellardev is Veil's embedded Stellar network. This binary was
// built with -tags nodevnet: Start reports chains.ErrUnavailable; set
// VEIL_RPC_STELLAR.
package stellardev

import (
	"context"

	"github.com/veilhq/veil/chains/devnet/internal/devserver"
	"github.com/veilhq/veil/chains/stellar"
)

// Available reports whether this binary includes the Stellar devnet.
const Available = false

// Devnet is never created in this build.
type Devnet = devserver.Absent[stellar.Config]

// Start reports that this build has no Stellar devnet.
func Start(context.Context, Options) (*Devnet, error) {
	return nil, devserver.Unavailable("Stellar", "VEIL_RPC_STELLAR")
}
