//go:build !nodevnet

package chain_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// Stealth sends per second through one chain actor on the devnet: b.N native
// payments submitted by 32 concurrent callers, from one agent (one lane:
// nonces strictly in turn) or from 16 agents (16 lanes). "sends/s" counts
// until every send was accepted by the node, "mined/s" until every one is in
// a block. Each send persists its nonce reservation (bbolt, fsync) before
// broadcasting.
func BenchmarkStealthSend(b *testing.B) {
	for _, agents := range []int{1, 16} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) { benchSend(b, agents) })
	}
}

func benchSend(b *testing.B, nAgents int) {
	e := newEnv(b, chains.Base)
	c := e.connector(b, chains.Base, nil)
	r := e.start(b, c)
	ctx := context.Background()
	senders := make([]*evmtest.Agent, nAgents)
	for i := range senders {
		senders[i] = evmtest.NewAgent(fmt.Sprintf("bench-sender-%d", i))
		e.signer.Add(senders[i])
		f, err := r.Fund(ctx, senders[i].Address.Hex())
		if err != nil {
			b.Fatal(err)
		}
		waitMined(b, c, f.TxHash)
	}
	// Warm up: the first send of an agent seeds its ledger record.
	for _, s := range senders {
		res, err := r.SendStealth(ctx, s.Ref(chains.Base), s.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r, ""), Amount: amt("0.0001"), To: e.bob.Meta, IdempotencyKey: "warm-" + s.ID})
		if err != nil {
			b.Fatal(err)
		}
		waitMined(b, c, res.TxHash)
	}
	var next atomic.Int64
	hashes := make([]string, b.N)
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				s := senders[i%nAgents]
				res, err := r.SendStealth(ctx, s.Ref(chains.Base), s.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r, ""), Amount: amt("0.0001"), To: e.bob.Meta, IdempotencyKey: fmt.Sprintf("b-%d-%d", b.N, i)})
				if err != nil {
					failed.Store(err)
					return
				}
				hashes[i] = res.TxHash
			}
		}()
	}
	wg.Wait()
	accepted := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	for _, h := range hashes {
		waitMined(b, c, h)
	}
	mined := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/accepted.Seconds(), "sends/s")
	b.ReportMetric(float64(b.N)/mined.Seconds(), "mined/s")
}

// Announcements scanned per second end to end: Scan through the chain
// actor over JSON-RPC (eth_getLogs, decoding) plus the ERC-5564 check of
// every announcement against one agent's viewing key, over a chain holding
// 2,000 payments of which 1 in 20 is the agent's. "rpc-only" is the Scan
// alone; compare "anns/s" with the crypto-only check rate in
// docs/BENCHMARKS.md (chains/stealth).
func BenchmarkScanEndToEnd(b *testing.B) {
	const total, every = 2000, 20
	e := newEnv(b, chains.Ethereum)
	c := e.connector(b, chains.Ethereum, nil)
	r := e.start(b, c)
	ctx := context.Background()
	payers := make([]*evmtest.Agent, 8)
	for i := range payers {
		payers[i] = evmtest.NewAgent(fmt.Sprintf("bench-payer-%d", i))
		e.signer.Add(payers[i])
		f, err := r.Fund(ctx, payers[i].Address.Hex())
		if err != nil {
			b.Fatal(err)
		}
		waitMined(b, c, f.TxHash)
	}
	other := evmtest.NewAgent("bench-other")
	var wg sync.WaitGroup
	var failed atomic.Value
	var last atomic.Value
	for p := range payers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < total; i += len(payers) {
				to := other.Meta
				if i%every == 0 {
					to = e.bob.Meta
				}
				res, err := r.SendStealth(ctx, payers[p].Ref(chains.Ethereum), payers[p].Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r, ""), Amount: amt("0.0001"), To: to, IdempotencyKey: fmt.Sprintf("s%d", i)})
				if err != nil {
					failed.Store(err)
					return
				}
				last.Store(res.TxHash)
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	waitMined(b, c, last.Load().(string))
	time.Sleep(100 * time.Millisecond)
	// Everything mined: maintenance finds nothing pending.
	for {
		if n, _ := c.PendingCount(ctx); n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	bobKey, err := secp256k1.NewScanKey(secp256k1.ViewKeyEntry{ViewPriv: e.bob.Keys.ViewPriv, SpendPub: e.bob.Keys.Meta.Spend})
	if err != nil {
		b.Fatal(err)
	}
	scan := func(check bool) (n, mine int) {
		cursor := ""
		for {
			anns, next, err := r.Scan(ctx, cursor, 1000)
			if err != nil {
				b.Fatal(err)
			}
			n += len(anns)
			if check {
				for _, a := range anns {
					eph, _ := secp256k1.ParseEphemeralPub(a.EphemeralPubKey)
					addr := common.HexToAddress(a.StealthAddress)
					ok, err := bobKey.Check(secp256k1.Announcement{StealthAddress: addr, EphemeralPub: eph, ViewTag: a.ViewTag})
					if err != nil {
						b.Fatal(err)
					}
					if ok {
						mine++
					}
				}
			}
			if len(anns) < 1000 {
				return n, mine
			}
			cursor = next
		}
	}
	b.Run("rpc-only", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			if n, _ := scan(false); n != total {
				b.Fatalf("scanned %d", n)
			}
		}
		b.ReportMetric(float64(b.N*total)/time.Since(start).Seconds(), "anns/s")
	})
	b.Run("rpc+check", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			if n, mine := scan(true); n != total || mine != total/every {
				b.Fatalf("scanned %d, mine %d", n, mine)
			}
		}
		b.ReportMetric(float64(b.N*total)/time.Since(start).Seconds(), "anns/s")
	})
}
