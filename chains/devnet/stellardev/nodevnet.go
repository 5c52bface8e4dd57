//go:build nodevnet

// Package stellardev is Veil's embedded Stellar network. This binary was
// built with -tags nodevnet: Start reports chains.ErrUnavailable; set
// VEIL_RPC_STELLAR.
package stellardev

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/persistence"
)

// Available reports whether this binary includes the Stellar devnet.
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

// Start reports that this build has no Stellar devnet.
func Start(context.Context, Options) (*Devnet, error) {
	return nil, fmt.Errorf("%w: built with -tags nodevnet (no embedded Stellar devnet); set VEIL_RPC_STELLAR", chains.ErrUnavailable)
}

// URL is empty.
func (d *Devnet) URL() string { return "" }

// Config is never available in this build.
func (d *Devnet) Config() stellar.Config { return stellar.Config{} }

// Close does nothing.
func (d *Devnet) Close() error { return nil }
