package evm

import "context"

// NewUnchecked connects like New but skips the contract checks, so that
// tests can prove the checks of each operation refuse on their own.
func NewUnchecked(ctx context.Context, cfg Config, opts Options) (*Connector, error) {
	return connect(ctx, cfg, opts, false)
}
