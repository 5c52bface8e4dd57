//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm/evmtest"
)

// TestTransfersInAndScanTransfers: what a transaction paid (native value,
// token Transfer events, native stealth payments forwarded by the
// StealthSender) is read back by hash and by scanning blocks.
// The same holds behind a node that does not serve eth_getBlockReceipts
// (Hardhat 2, some providers): the scan reads receipts per transaction.
func TestTransfersInAndScanTransfers(t *testing.T) {
	for _, lacking := range []bool{false, true} {
		name := "node with eth_getBlockReceipts"
		if lacking {
			name = "node without eth_getBlockReceipts"
		}
		t.Run(name, func(t *testing.T) { transfersInAndScan(t, lacking) })
	}
}

func transfersInAndScan(t *testing.T, lacking bool) {
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	var node *lackingNode
	if lacking {
		node = newLackingNode(t, cfg.RPCURL, "eth_getBlockReceipts")
		cfg.RPCURL = node.srv.URL
	}
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ts, cursor, err := c.ScanTransfers(ctx, "", 100)
	if err != nil || len(ts) != 0 || cursor == "" {
		t.Fatalf("empty cursor: %v %q %v", ts, cursor, err)
	}
	fund, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, fund.TxHash)
	payETH, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("1.25"), To: bob.Meta, IdempotencyKey: "v-eth"})
	if err != nil {
		t.Fatal(err)
	}
	payUSDC, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "USDC"), Amount: amt("25.5"), To: bob.Meta, IdempotencyKey: "v-usdc"})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, payETH.TxHash)
	mustMined(t, c, payUSDC.TxHash)

	// The StealthSender itself receives the native value at the top level;
	// the payment is what it forwards to the stealth address.
	find := func(ts []chains.Transfer, asset, amount string) *chains.Transfer {
		for i := range ts {
			if ts[i].Asset == asset && ts[i].Amount == amount && !strings.EqualFold(ts[i].To, cfg.Sender.Hex()) {
				return &ts[i]
			}
		}
		return nil
	}
	got, err := c.TransfersIn(ctx, payETH.TxHash)
	if err != nil {
		t.Fatal(err)
	}
	eth := find(got, "ETH", "1.25")
	if eth == nil || !strings.EqualFold(eth.TxHash, payETH.TxHash) {
		t.Fatalf("native stealth payment: %+v", got)
	}
	got, err = c.TransfersIn(ctx, payUSDC.TxHash)
	if err != nil {
		t.Fatal(err)
	}
	usdc := find(got, "USDC", "25.5")
	if usdc == nil {
		t.Fatalf("token payment: %+v", got)
	}

	// A plain withdrawal to an outside address is a top-level value transfer.
	anns := scanAll(t, c, 100)
	var ephETH []byte
	for _, a := range anns {
		if strings.EqualFold(a.StealthAddress, eth.To) {
			ephETH = a.EphemeralPubKey
		}
	}
	if ephETH == nil {
		t.Fatalf("no announcement for %s", eth.To)
	}
	// AnnouncementsIn lists a transaction's announcements exactly as Scan
	// does (the instant notify of a payee relies on it); a transaction
	// that announced nothing lists nothing.
	for _, tx := range []string{payETH.TxHash, payUSDC.TxHash} {
		in, err := c.AnnouncementsIn(ctx, tx)
		if err != nil || len(in) != 1 {
			t.Fatalf("AnnouncementsIn(%s) = %+v %v", tx, in, err)
		}
		var same bool
		for _, a := range anns {
			same = same || reflect.DeepEqual(a, in[0])
		}
		if !same {
			t.Fatalf("AnnouncementsIn(%s) = %+v, not as scanned: %+v", tx, in[0], anns)
		}
	}
	if in, err := c.AnnouncementsIn(ctx, fund.TxHash); err != nil || len(in) != 0 {
		t.Fatalf("AnnouncementsIn(funding) = %+v %v", in, err)
	}
	if _, err := c.AnnouncementsIn(ctx, "0x"+strings.Repeat("ab", 32)); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("AnnouncementsIn(unknown) = %v", err)
	}
	const outside = "0x00000000000000000000000000000000000000A1"
	wd, err := c.Withdraw(ctx, bob.StealthRef(chains.Ethereum, ephETH), chains.WithdrawRequest{From: eth.To, To: outside, Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.5"), IdempotencyKey: "v-wd"})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, wd.TxHash)
	got, err = c.TransfersIn(ctx, wd.TxHash)
	if err != nil || len(got) != 1 || !strings.EqualFold(got[0].To, outside) || got[0].Amount != "0.5" || got[0].Asset != "ETH" {
		t.Fatalf("withdrawal: %+v %v", got, err)
	}

	// Scanning blocks from the first cursor sees all of them.
	var all []chains.Transfer
	for i := 0; i < 50; i++ {
		page, next, err := c.ScanTransfers(ctx, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == cursor {
			break
		}
		cursor = next
	}
	for _, want := range []struct{ to, asset, amount string }{{eth.To, "ETH", "1.25"}, {usdc.To, "USDC", "25.5"}, {outside, "ETH", "0.5"}} {
		ok := false
		for _, tr := range all {
			ok = ok || strings.EqualFold(tr.To, want.to) && tr.Asset == want.asset && tr.Amount == want.amount
		}
		if !ok {
			t.Fatalf("scan missed %+v in %+v", want, all)
		}
	}

	if lacking && node.calls.Load() != 1 {
		t.Fatalf("eth_getBlockReceipts asked %d times, want once (then per-transaction receipts)", node.calls.Load())
	}
	for _, h := range []string{"0x" + strings.Repeat("12", 32), "nothex", "0x12"} {
		if _, err := c.TransfersIn(ctx, h); !errors.Is(err, chains.ErrNotFound) {
			t.Fatalf("TransfersIn(%s): %v", h, err)
		}
	}
}
