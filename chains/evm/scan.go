package evm

// Scanning the announcements of the ERC-5564 announcer.

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// Scan cursor: "<block>" or "<block>.<log index>", the next position to
// read. Position of an announcement: block<<24 | log index.
func parseCursor(s string, from uint64) (uint64, uint64, error) {
	if s == "" {
		return from, 0, nil
	}
	b, i, _ := strings.Cut(s, ".")
	block, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("evm: bad scan cursor %q", s)
	}
	var idx uint64
	if i != "" {
		if idx, err = strconv.ParseUint(i, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("evm: bad scan cursor %q", s)
		}
	}
	return block, idx, nil
}

// Scan returns the announcements of Veil payments (Announcement events of
// the announcer with scheme 1 whose caller is the StealthSender) after
// cursor, at most limit (default 1000), and the cursor to resume from.
// Announcements whose asset this chain does not know are skipped.
func (c *Connector) Scan(ctx context.Context, cursor string, limit int) ([]chains.Announcement, string, error) {
	if err := c.needSender(); err != nil {
		return nil, cursor, err
	}
	if limit <= 0 {
		limit = 1000
	}
	block, idx, err := parseCursor(cursor, c.cfg.FromBlock)
	if err != nil {
		return nil, cursor, err
	}
	head, err := c.eth.BlockNumber(ctx)
	if err != nil {
		return nil, cursor, c.Unavailable("block number", err)
	}
	if head < c.cfg.Confirmations {
		return nil, cursor, nil
	}
	head -= c.cfg.Confirmations
	ev := c.ann.GetABI().Events["Announcement"].ID
	scheme := common.BigToHash(big.NewInt(secp256k1.SchemeID))
	caller := common.BytesToHash(c.cfg.Sender.Bytes())
	var out []chains.Announcement
	for block <= head {
		to := min(block+c.cfg.LogRange-1, head)
		logs, err := c.eth.FilterLogs(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(block), ToBlock: new(big.Int).SetUint64(to),
			Addresses: []common.Address{c.cfg.Announcer},
			Topics:    [][]common.Hash{{ev}, {scheme}, nil, {caller}},
		})
		if err != nil {
			return out, cursorAt(block, idx), c.Unavailable("logs", err)
		}
		sort.Slice(logs, func(i, j int) bool {
			if logs[i].BlockNumber != logs[j].BlockNumber {
				return logs[i].BlockNumber < logs[j].BlockNumber
			}
			return logs[i].Index < logs[j].Index
		})
		for i := range logs {
			l := &logs[i]
			if l.Removed || l.BlockNumber == block && uint64(l.Index) < idx {
				continue
			}
			if a, ok := c.decodeAnnouncement(l); ok {
				out = append(out, a)
			}
			if len(out) == limit {
				return out, cursorAt(l.BlockNumber, uint64(l.Index)+1), nil
			}
		}
		block, idx = to+1, 0
	}
	return out, cursorAt(block, 0), nil
}

func cursorAt(block, idx uint64) string {
	if idx == 0 {
		return strconv.FormatUint(block, 10)
	}
	return strconv.FormatUint(block, 10) + "." + strconv.FormatUint(idx, 10)
}

func (c *Connector) decodeAnnouncement(l *types.Log) (chains.Announcement, bool) {
	ev, err := c.ann.UnpackAnnouncementEvent(l)
	if err != nil || len(ev.EphemeralPubKey) != 33 || len(ev.Metadata) < 57 {
		return chains.Announcement{}, false
	}
	md := ev.Metadata
	amount := new(big.Int).SetBytes(md[25:57])
	tok := common.BytesToAddress(md[5:25])
	var symbol string
	var decimals int
	switch {
	case [4]byte(md[1:5]) == nativeMarker && tok == nativeToken:
		symbol, decimals = c.cfg.Chain.NativeAsset(), NativeDecimals
	case [4]byte(md[1:5]) == transferSelector:
		t, ok := c.tokenByAddress(tok)
		if !ok {
			return chains.Announcement{}, false
		}
		symbol, decimals = t.Symbol, t.Decimals
	default:
		return chains.Announcement{}, false
	}
	return chains.Announcement{
		StealthAddress:  ev.StealthAddress.Hex(),
		EphemeralPubKey: ev.EphemeralPubKey,
		ViewTag:         md[0],
		Asset:           symbol,
		Amount:          chains.FormatAmount(amount, decimals),
		TxHash:          l.TxHash.Hex(),
		Position:        l.BlockNumber<<24 | uint64(l.Index),
	}, true
}
