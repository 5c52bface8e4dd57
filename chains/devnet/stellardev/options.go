package stellardev

import "github.com/veilhq/veil/chains/devnet/internal/devserver"

// Options configures Start.
type Options = devserver.Options
