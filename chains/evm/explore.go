package evm

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
)

// Explain reads a mined transaction for the devnet explorer
// (httpapi/console): what it delivered (as TransfersIn counts it, whatever
// its status or depth) and the Veil stealth announcements it made. It
// makes no RPC call; the caller fetched tx and r through Client.
func (c *Connector) Explain(tx *types.Transaction, r *types.Receipt) ([]chains.Transfer, []chains.Announcement) {
	var anns []chains.Announcement
	annEv := c.ann.GetABI().Events["Announcement"].ID
	for _, l := range r.Logs {
		if l.Removed || l.Address != c.cfg.Announcer || len(l.Topics) == 0 || l.Topics[0] != annEv {
			continue
		}
		if a, ok := c.decodeAnnouncement(l); ok {
			anns = append(anns, a)
		}
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return nil, anns
	}
	return c.transfersOf(tx, r), anns
}

// IsStealthSender reports whether a is the chain's StealthSender contract
// (the "to" of every stealth payment; the explorer names it).
func (c *Connector) IsStealthSender(a common.Address) bool {
	return c.cfg.Sender != (common.Address{}) && a == c.cfg.Sender
}
