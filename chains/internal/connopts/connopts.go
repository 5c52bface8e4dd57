// Package connopts is what the chain connectors (evm, stellar, solana)
// share: the dependencies they take (each aliases Options) and their
// defaults, the Base they embed (base.go), the rule for their assets'
// symbols and the readers of their ConfigFromEnv (env.go).
package connopts

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
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
	// OnSettled receives the final outcome of every transaction the
	// connector recorded (chains.SettlementFunc has the contract); nil
	// reports none. Settlements are written to TableSettlements in the
	// commit that makes the outcome final and removed once it answers nil.
	OnSettled chains.SettlementFunc
}

// Defaults checks that Store is set, fills what is unset and has Log
// name the chain (key "chain"); pkg names the connector's package in the
// error, timeout is the default HTTP client's.
func (o *Options) Defaults(pkg string, chain chains.ID, timeout time.Duration) error {
	if o.Store == nil {
		return fmt.Errorf("%s: Options.Store is required", pkg)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	o.Log = o.Log.With("chain", string(chain))
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

// Symbols tells the asset symbols of a connector's configuration apart:
// Add refuses one that is empty or, case-insensitively, the native
// asset's or one added before.
type Symbols map[string]bool

// NewSymbols holds the native asset's symbol.
func NewSymbols(native string) Symbols { return Symbols{strings.ToUpper(native): true} }

// Add records sym; false when it is empty or already taken.
func (s Symbols) Add(sym string) bool {
	u := strings.ToUpper(sym)
	if u == "" || s[u] {
		return false
	}
	s[u] = true
	return true
}
