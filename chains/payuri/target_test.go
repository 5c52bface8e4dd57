package payuri_test

import (
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/payuri"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
)

// The pay page asks a connector for payuri.Target with a type assertion; a
// drifting method signature would silently drop the wallet link, so the
// three connectors are checked here at compile time.
var (
	_ payuri.Target = (*evm.Connector)(nil)
	_ payuri.Target = (*solana.Connector)(nil)
	_ payuri.Target = (*stellar.Connector)(nil)
)
