//go:build nodevnet

// Package solanadev is Veil's embedded Solana network. This binary was
// built with -tags nodevnet: Start reports chains.ErrUnavailable; set
// VEIL_RPC_SOLANA.
package solanadev

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/persistence"
)

// Available reports whether this binary includes the Solana devnet.
const Available = false

// Options configures Start (see the devnet build).
type Options struct {
	Store persistence.Store
	Dir   string
	Addr  string
	Now   func() time.Time
	Log   *slog.Logger
}

// Devnet is never created in this build.
type Devnet struct{}

// Start reports that this build has no Solana devnet.
func Start(context.Context, Options) (*Devnet, error) {
	return nil, fmt.Errorf("%w: built with -tags nodevnet (no embedded Solana devnet); set VEIL_RPC_SOLANA", chains.ErrUnavailable)
}

// URL is empty.
func (d *Devnet) URL() string { return "" }

// Config is never available in this build.
func (d *Devnet) Config() solana.Config { return solana.Config{} }

// Close does nothing.
func (d *Devnet) Close() error { return nil }
