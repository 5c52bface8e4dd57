// Package connopts is the dependencies every chain connector takes (evm,
// stellar and solana alias Options) and their defaults, and the readers of
// their ConfigFromEnv (env.go).
package connopts

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
)

// Options are a connector's dependencies.
type Options struct {
	// Store holds the connector's tables (its intents, name index and
	// cursors; each connector lists them). Required.
	Store persistence.Store
	// Signer signs transactions (the enclave). Required for writes.
	Signer chains.Signer
	// Log defaults to slog.Default().
	Log *slog.Logger
	// Failpoint, when set, is called at each of the connector's
	// failpoints (its Failpoints()); an error it returns aborts the
	// operation right there, as a crash would. Tests only.
	Failpoint failpoint.Hook
	// Rand is the randomness of ephemeral keys (default crypto/rand).
	Rand io.Reader
	// HTTPClient for the node's API (default: the connector's timeout,
	// keep-alive).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults checks that Store is set and fills what is unset; pkg names
// the connector's package in the error, timeout is the default HTTP
// client's.
func (o *Options) Defaults(pkg string, timeout time.Duration) error {
	if o.Store == nil {
		return fmt.Errorf("%s: Options.Store is required", pkg)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{
			Timeout: timeout,
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				MaxIdleConns:        64,
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     90 * time.Second,
			},
		}
	}
	return nil
}
